// The cuBLAS references: wgrad G = dY^T X and dgrad dX = dY W, bf16 in, fp32 compute and out.
//
// Row-major to cuBLAS's column-major: a row-major [r, c] matrix is a column-major [c, r] one
// with leading dimension c, i.e. its transpose.
//   wgrad: G [out, in] row-major is G^T [in, out] column-major (ldc = in), and
//          G^T = X^T dY: A = X^T, which is row-major X [T, in] read as column-major [in, T]
//          (op N, lda = in); B = dY, which is the transpose of row-major dY [T, out] read as
//          column-major [out, T] (op T, ldb = out). m = in, n = out, k = T.
//   dgrad: dX [T, in] row-major is dX^T [in, T] column-major (ldc = in), and
//          dX^T = W^T dY^T: A = W^T = row-major W [out, in] as column-major [in, out]
//          (op N, lda = in); B = dY^T = row-major dY [T, out] as column-major [out, T]
//          (op N, ldb = out). m = in, n = T, k = out.
// No workspace is set: the handle's default applies. On the runner (cuBLAS 13.1) the wgrad call
// is the plain sequential k16 chain from t = 0 except for small outputs with long T, where
// cuBLAS splits K when it has workspace.
#include <string>

#include "kernels/gpu/gpu_api.h"

namespace fh::gpu {

void cublas_wgrad(cublasHandle_t h, const WgradProblem& p, float* g, cudaStream_t stream) {
  validate_problem(p, "cublas_wgrad");
  if (!h || !g) throw std::invalid_argument("cublas_wgrad: null handle or G");
  cublas_check(cublasSetStream(h, stream), "cublas_wgrad: cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  cublas_check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, int(p.in), int(p.out), int(p.tokens), &alpha,
                            p.x, CUDA_R_16BF, int(p.in), p.dy, CUDA_R_16BF, int(p.out), &beta, g,
                            CUDA_R_32F, int(p.in), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublas_wgrad: cublasGemmEx");
}

void cublas_dgrad(cublasHandle_t h, const bf16* dy, const bf16* w_bf16, int64_t tokens,
                  int64_t out, int64_t in, float* dx, cudaStream_t stream, float beta) {
  if (!h || !dy || !w_bf16 || !dx) throw std::invalid_argument("cublas_dgrad: null pointer");
  if (tokens < 1 || out < 1 || in < 1 || tokens > (int64_t(1) << 31) || out > (int64_t(1) << 31) ||
      in > (int64_t(1) << 31))
    throw std::invalid_argument("cublas_dgrad: dimensions must be in [1, 2^31]");
  cublas_check(cublasSetStream(h, stream), "cublas_dgrad: cublasSetStream");
  const float alpha = 1.0f;
  cublas_check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(in), int(tokens), int(out), &alpha, w_bf16,
                            CUDA_R_16BF, int(in), dy, CUDA_R_16BF, int(out), &beta, dx, CUDA_R_32F,
                            int(in), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublas_dgrad: cublasGemmEx");
}

}  // namespace fh::gpu
