// cuBLAS and cuBLASLt loaded when first called, not when a binary starts. Linked directly, the
// two libraries (~0.7 GB) are mapped and initialized by every start of every binary, GPU or not:
// about 0.4 s of the 0.5 s that `forge-verify --help` took, paid by each of the hundreds of runs
// the CLI and hostile-input suites make. The harness calls only the 21 functions defined here;
// each resolves its library's symbol once (dlopen / dlsym) and forwards. Where the library cannot
// be loaded, each returns CUBLAS_STATUS_NOT_INITIALIZED and the status strings say why, so the
// callers' own error paths (cublas_check) report it.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace {

enum class Lib { cublas, cublas_lt };

// The runtime's own search first (LD_LIBRARY_PATH, the run path, ld.so.cache), then the CUDA
// toolkit's usual folders.
void* open_lib(Lib lib) {
  const char* name = lib == Lib::cublas ? "libcublas.so.13" : "libcublasLt.so.13";
  for (const char* dir : {"", "/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"}) {
    if (void* h = ::dlopen((std::string(dir) + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

void* symbol(Lib lib, const char* name) {
  static void* handles[2];
  static std::once_flag once[2];
  const int i = int(lib);
  std::call_once(once[i], [&] { handles[i] = open_lib(lib); });
  return handles[i] ? ::dlsym(handles[i], name) : nullptr;
}

constexpr const char* kNotLoaded = "cuBLAS could not be loaded (libcublas.so.13 / libcublasLt.so.13 not found)";

}  // namespace

#define FH_CUBLAS_FORWARD(LIB, NAME, PARAMS, ARGS)                                  \
  cublasStatus_t CUBLASWINAPI NAME PARAMS {                                         \
    using Fn = cublasStatus_t(CUBLASWINAPI*) PARAMS;                                \
    static const Fn fn = reinterpret_cast<Fn>(symbol(LIB, #NAME));                  \
    return fn ? fn ARGS : CUBLAS_STATUS_NOT_INITIALIZED;                            \
  }

extern "C" {

FH_CUBLAS_FORWARD(Lib::cublas, cublasCreate_v2, (cublasHandle_t* handle), (handle))
FH_CUBLAS_FORWARD(Lib::cublas, cublasDestroy_v2, (cublasHandle_t handle), (handle))
FH_CUBLAS_FORWARD(Lib::cublas, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
FH_CUBLAS_FORWARD(Lib::cublas, cublasGetProperty, (libraryPropertyType type, int* value), (type, value))
FH_CUBLAS_FORWARD(Lib::cublas, cublasGemmEx,
                  (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                   const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                   int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                   cublasGemmAlgo_t algo),
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                   computeType, algo))
FH_CUBLAS_FORWARD(Lib::cublas, cublasGemmStridedBatchedEx,
                  (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                   const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B,
                   cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                   int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType,
                   cublasGemmAlgo_t algo),
                  (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                   Ctype, ldc, strideC, batchCount, computeType, algo))
FH_CUBLAS_FORWARD(Lib::cublas, cublasSetWorkspace_v2, (cublasHandle_t handle, void* workspace, size_t size),
                  (handle, workspace, size))

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  using Fn = const char*(CUBLASWINAPI*)(cublasStatus_t);
  static const Fn fn = reinterpret_cast<Fn>(symbol(Lib::cublas, "cublasGetStatusName"));
  return fn ? fn(status) : kNotLoaded;
}
const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  using Fn = const char*(CUBLASWINAPI*)(cublasStatus_t);
  static const Fn fn = reinterpret_cast<Fn>(symbol(Lib::cublas, "cublasGetStatusString"));
  return fn ? fn(status) : kNotLoaded;
}

FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtCreate, (cublasLtHandle_t* handle), (handle))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulDescCreate,
                  (cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType, cudaDataType_t scaleType),
                  (desc, computeType, scaleType))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulDescSetAttribute,
                  (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size),
                  (desc, attr, buf, size))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatrixLayoutCreate,
                  (cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
                  (layout, type, rows, cols, ld))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t* pref), (pref))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulPreferenceSetAttribute,
                  (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                   size_t size),
                  (pref, attr, buf, size))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulAlgoGetHeuristic,
                  (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                   cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                   cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
                   int* returned),
                  (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))
FH_CUBLAS_FORWARD(Lib::cublas_lt, cublasLtMatmulAlgoConfigGetAttribute,
                  (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                   size_t size, size_t* written),
                  (algo, attr, buf, size, written))

}  // extern "C"
