// The model-shaped training step (kernels/gpu/model_step.h).
#include "kernels/gpu/model_step.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/gpu/linear_backward.h"
#include "kernels/gpu/model_kernels.cuh"

namespace fh::gpu {

namespace {

using Tag = TaggedPool::Tag;

struct Param {
  ModelParamInfo info;
  DeviceParamView pv;  // the pool's device memory
};

// Saved for backward, per block.
struct BlockActs {
  float *x_in = nullptr, *rstd1 = nullptr, *x_mid = nullptr, *rstd2 = nullptr, *gate = nullptr, *up = nullptr;
  bf16 *h1 = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *p = nullptr, *a = nullptr, *h2 = nullptr,
           *m = nullptr;
};

// A gradient held to the end of backward, then stepped.
struct Held {
  Param* w;
  float* g;
};

int grid_for(int64_t n) { return int(std::min<int64_t>((n + model::kThreads - 1) / model::kThreads, 132 * 16)); }

}  // namespace

struct ModelStep::Impl {
  ModelStepConfig cfg;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CublasHandle> cublas;
  std::unique_ptr<TaggedPool> pool;
  std::vector<Param> params;
  std::vector<ModelParamInfo> infos;
  int emb = -1, gf = -1, head = -1;  // head == emb when tied
  struct BlockIdx { int g1, q, k, v, o, g2, gate, up, down; };
  std::vector<BlockIdx> blocks;
  int32_t *tokens = nullptr, *labels = nullptr;
  unsigned long long* digests = nullptr;
  bool digest_on = false;
  int n_linear = 0;
  // Per step: its number, the gradients held for the end of backward, the next dX digest slot, and
  // whether the planted materialize_one_layer still waits for the first linear reached.
  int64_t step_ = 0;
  std::vector<Held> held_;
  int slot_ = 0;
  bool first_linear_ = true;
  bool skip_pending_ = false;  // the planted skip_one_update still waits for the first linear reached
  bool capture_ = false;                    // capture_gradients
  std::vector<std::vector<float>> grads_;   // the last step's gradients, in params order (capture on)

  ~Impl() {
    pool.reset();  // frees every live allocation, then the pool
    cublas.reset();
    if (stream) cudaStreamDestroy(stream);
  }

  cublasHandle_t h() const { return cublas->get(); }
  const ModelDims& d() const { return cfg.dims; }
  // The micro-batch's token rows: batch sequences of `tokens` each, one after the other.
  int64_t rows() const { return d().batch * d().tokens; }

  int add_param(const std::string& name, int64_t rows, int64_t cols, bool linear, float std, float value) {
    Param p;
    p.info = {name, rows, cols, linear && cfg.update == ModelUpdate::fused};
    p.pv.rows = rows;
    p.pv.cols = cols;
    p.pv.global_cols = cols;
    const int64_t n = rows * cols;
    if (cfg.store == WeightStore::fp32_master) p.pv.master = pool->alloc_n<float>(Tag::weights, n);
    p.pv.bf16 = pool->alloc_n<bf16>(Tag::weights, n);
    p.pv.sr = sr_key{cfg.seed, 0, uint32_t(params.size())};
    const StateDecls decls = visit_rule(cfg.rule.id, [&](auto r) { return decltype(r)::states(hyper_of<decltype(r)>(cfg.rule)); });
    for (int k = 0; k < kMaxStates; ++k) {
      if (!decls.slot[k].kept) continue;
      if (decls.slot[k].initial != 0.0)
        throw std::invalid_argument("ModelStep: the rule's state slot " + std::to_string(k) + " starts at " +
                                    std::to_string(decls.slot[k].initial) + "; the model step initialises state to zero");
      StateView& sv = p.pv.state[k];
      sv.nonnegative = decls.slot[k].nonnegative;
      void* storage = nullptr;  // the pool's device memory, held in the format's type
      int64_t bytes = 0;
      switch (cfg.state) {
        case StateFormat::fp32: storage = sv.f32 = pool->alloc_n<float>(Tag::state, n), bytes = n * 4; break;
        case StateFormat::bf16: storage = sv.bf16 = pool->alloc_n<bf16>(Tag::state, n), bytes = n * 2; break;
        case StateFormat::int8: storage = sv.i8 = pool->alloc_n<uint8_t>(Tag::state, n), bytes = n; break;
      }
      cuda_check(cudaMemsetAsync(storage, 0, size_t(bytes), stream), "ModelStep: state init");
      if (cfg.state == StateFormat::int8) {
        const int64_t nb = rows * p.pv.blocks_per_row();
        sv.absmax = pool->alloc_n<float>(Tag::state, nb);
        cuda_check(cudaMemsetAsync(sv.absmax, 0, size_t(nb * 4), stream), "ModelStep: absmax init");
      }
    }
    model::init_weights_kernel<<<grid_for(n), model::kThreads, 0, stream>>>(
        p.pv.master, p.pv.bf16, n, cfg.seed * 1000003ull + params.size(), std, value);
    cuda_check(cudaGetLastError(), "ModelStep: init weights");
    params.push_back(p);
    infos.push_back(p.info);
    return int(params.size()) - 1;
  }

  // Y [T, out] = X [T, in] W^T (+ beta Y); Y fp32 or bf16.
  void linear_fwd(const bf16* x, const Param& w, void* y, cudaDataType yt, float beta) {
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, w.pv.rows, rows(), w.pv.cols, 1.0f, w.pv.bf16, w.pv.cols, 0, x, w.pv.cols, 0,
         beta, y, yt, w.pv.rows, 0, 1);
  }

  void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
            int64_t lda, int64_t sa, const void* b, int64_t ldb, int64_t sb, float beta, void* c, cudaDataType ct,
            int64_t ldc, int64_t sc, int64_t batch) {
    cublas_check(cublasSetStream(h(), stream), "ModelStep: cublasSetStream");
    cublas_check(cublasGemmStridedBatchedEx(h(), ta, tb, int(m), int(n), int(k), &alpha, a, CUDA_R_16BF, int(lda), sa, b,
                                            CUDA_R_16BF, int(ldb), sb, &beta, c, ct, int(ldc), sc, int(batch),
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "ModelStep: cublasGemmStridedBatchedEx");
  }

  void check_launch(const char* what) { cuda_check(cudaGetLastError(), what); }

  void digest_into(int slot, const void* p, int64_t bytes) {
    if (!digest_on) return;
    model::digest_kernel<<<grid_for(bytes / 2), model::kThreads, 0, stream>>>(static_cast<const uint16_t*>(p), bytes / 2,
                                                                              digests + slot);
    check_launch("ModelStep: digest");
  }

  // Whether this linear's update is fused now; the planted materialize_one_layer keeps the first
  // linear reached on the standard path instead.
  bool fuse_now(const Param& w) {
    const bool keep_whole_g = first_linear_ && cfg.defects.materialize_one_layer;
    first_linear_ = false;
    return w.info.fused && !keep_whole_g;
  }

  // One linear layer's backward: dx (+)= dY W, and its update (fused now, or G held for the step).
  void linear_bwd(Param& w, const bf16* x, const bf16* dy, float* dx, float dx_beta, bool fused) {
    const WgradProblem prob{x, dy, rows(), w.pv.rows, w.pv.cols};
    if (fused && skip_pending_) {  // planted: dX from the weight, and the update silently left out
      skip_pending_ = false;
      cublas_dgrad(h(), dy, w.pv.bf16, rows(), w.pv.rows, w.pv.cols, dx, stream, dx_beta);
    } else if (fused) {
      LinearBackwardArgs a;
      a.problem = prob;
      a.rule = cfg.rule;
      a.state_format = cfg.state;
      a.weight_store = cfg.store;
      a.param = w.pv;
      a.step = step_;
      a.consumers = 1;
      a.dx = dx;
      a.dx_beta = dx_beta;
      a.planted_read_after_update = cfg.defects.dx_after_update;
      linear_backward(h(), a, stream);
    } else {
      cublas_dgrad(h(), dy, w.pv.bf16, rows(), w.pv.rows, w.pv.cols, dx, stream, dx_beta);
      float* g = pool->alloc_n<float>(Tag::gradients, w.pv.rows * w.pv.cols);
      if (cfg.update == ModelUpdate::standard_cublas) cublas_wgrad(h(), prob, g, stream);
      else wgrad_materialize(prob, g, TileShape{}, stream);
      held_.push_back({&w, g});
    }
    digest_into(slot_++, dx, rows() * w.pv.cols * 4);
  }

  // A norm weight's backward: dx += its input gradient; its gradient (over all tokens) held.
  void norm_bwd(int gi, const float* x, const float* rstd, const float* dh, float* dx) {
    const int64_t T = rows(), H = d().hidden;
    Param& g = params[size_t(gi)];
    model::rmsnorm_bwd_dx_kernel<<<int(T), model::kThreads, 0, stream>>>(x, g.pv.bf16, rstd, dh, dx, H);
    float* dg = pool->alloc_n<float>(Tag::gradients_unfused, H);
    model::rmsnorm_bwd_dg_kernel<<<grid_for(H), model::kThreads, 0, stream>>>(x, rstd, dh, dg, T, H);
    check_launch("ModelStep: rmsnorm bwd");
    held_.push_back({&g, dg});
  }

  // h = RMSNorm(x) g (bf16) and its rstd, both saved for backward.
  void norm_fwd(int gi, const float* x, bf16*& h, float*& rstd) {
    const int64_t T = rows(), H = d().hidden;
    rstd = pool->alloc_n<float>(Tag::activations, T);
    h = pool->alloc_n<bf16>(Tag::activations, T * H);
    model::rmsnorm_fwd_kernel<<<int(T), model::kThreads, 0, stream>>>(x, params[size_t(gi)].pv.bf16, h, rstd, H);
    check_launch("ModelStep: rmsnorm");
  }

  // K and V expanded to the query heads (transients), so that every attention GEMM is one
  // strided-batched call over the heads.
  void expand_kv(const BlockActs& s, bf16*& kx, bf16*& vx) {
    const int64_t T = rows(), nh = d().heads, kvh = d().kv_heads, hd = d().head_dim, QD = nh * hd;
    kx = pool->alloc_n<bf16>(Tag::workspace, T * QD);
    vx = pool->alloc_n<bf16>(Tag::workspace, T * QD);
    model::expand_kv_kernel<<<grid_for(T * QD), model::kThreads, 0, stream>>>(s.k, kx, T, nh, kvh, hd);
    model::expand_kv_kernel<<<grid_for(T * QD), model::kThreads, 0, stream>>>(s.v, vx, T, nh, kvh, hd);
    check_launch("ModelStep: expand kv");
  }

  void mark(const std::string& name) {
    if (cfg.phase_marks) pool->phase(name);
  }

  ModelStepStats run(int64_t step, bool train = true);
  // The mean of the T per-token losses at `loss` (device), which it then gives back to the pool.
  float mean_loss(float* loss) {
    const int64_t T = rows();
    std::vector<float> lh(static_cast<size_t>(T));
    cuda_check(cudaMemcpyAsync(lh.data(), loss, size_t(T) * 4, cudaMemcpyDeviceToHost, stream), "ModelStep: loss");
    cuda_check(cudaStreamSynchronize(stream), "ModelStep: loss");
    pool->release(loss);
    double s = 0.0;
    for (float v : lh) s += v;
    return float(s / double(T));
  }
  void release_acts(const BlockActs& s) {
    for (void* p : {(void*)s.x_in, (void*)s.rstd1, (void*)s.h1, (void*)s.q, (void*)s.k, (void*)s.v, (void*)s.p,
                    (void*)s.a, (void*)s.x_mid, (void*)s.rstd2, (void*)s.h2, (void*)s.gate, (void*)s.up, (void*)s.m})
      pool->release(p);
  }
  void block_fwd(const BlockIdx& b, BlockActs& s);
  void block_bwd(const BlockIdx& b, BlockActs& s, float* dx);
};

void ModelStep::Impl::block_fwd(const BlockIdx& b, BlockActs& s) {
  // T: the micro-batch's token rows; S: one sequence's tokens (attention is per sequence).
  const int64_t T = rows(), S = d().tokens, H = d().hidden, I = d().intermediate, nh = d().heads, kvh = d().kv_heads,
                hd = d().head_dim, QD = nh * hd, KD = kvh * hd;
  norm_fwd(b.g1, s.x_in, s.h1, s.rstd1);
  s.q = pool->alloc_n<bf16>(Tag::activations, T * QD);
  s.k = pool->alloc_n<bf16>(Tag::activations, T * KD);
  s.v = pool->alloc_n<bf16>(Tag::activations, T * KD);
  linear_fwd(s.h1, params[b.q], s.q, CUDA_R_16BF, 0.0f);
  linear_fwd(s.h1, params[b.k], s.k, CUDA_R_16BF, 0.0f);
  linear_fwd(s.h1, params[b.v], s.v, CUDA_R_16BF, 0.0f);
  // Attention per sequence (q: its index, r0: its first row's offset), every head in one
  // strided-batched call; the saved softmax is [batch, heads, S, S], the fp32 scores a transient of
  // one sequence. At batch 1 the allocations come in the order of the single-sequence step.
  bf16 *kx = nullptr, *vx = nullptr;
  expand_kv(s, kx, vx);
  const int64_t PS = nh * S * S;  // one sequence's scores or softmax
  float* sc = pool->alloc_n<float>(Tag::workspace, PS);
  const float scale = 1.0f / std::sqrt(float(hd));
  s.p = pool->alloc_n<bf16>(Tag::activations, d().batch * PS);
  for (int64_t q = 0; q < d().batch; ++q) {
    const int64_t r0 = q * S * QD;
    // S_h [i, j] = scale q_i . k_j: column-major S^T = K_h Q_h^T.
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, S, S, hd, scale, kx + r0, QD, hd, s.q + r0, QD, hd, 0.0f, sc, CUDA_R_32F, S, S * S, nh);
    model::causal_softmax_kernel<<<int(nh * S), model::kThreads, 0, stream>>>(sc, s.p + q * PS, S);
    check_launch("ModelStep: softmax");
  }
  pool->release(sc);
  s.a = pool->alloc_n<bf16>(Tag::activations, T * QD);
  for (int64_t q = 0; q < d().batch; ++q) {  // O_h = P_h V_h: column-major O^T = V_h^T P_h^T.
    const int64_t r0 = q * S * QD;
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, hd, S, S, 1.0f, vx + r0, QD, hd, s.p + q * PS, S, S * S, 0.0f, s.a + r0, CUDA_R_16BF,
         QD, hd, nh);
  }
  pool->release(kx);
  pool->release(vx);
  s.x_mid = pool->alloc_n<float>(Tag::activations, T * H);
  cuda_check(cudaMemcpyAsync(s.x_mid, s.x_in, size_t(T * H * 4), cudaMemcpyDeviceToDevice, stream), "ModelStep: residual");
  linear_fwd(s.a, params[b.o], s.x_mid, CUDA_R_32F, 1.0f);
  norm_fwd(b.g2, s.x_mid, s.h2, s.rstd2);
  s.gate = pool->alloc_n<float>(Tag::activations, T * I);
  s.up = pool->alloc_n<float>(Tag::activations, T * I);
  linear_fwd(s.h2, params[b.gate], s.gate, CUDA_R_32F, 0.0f);
  linear_fwd(s.h2, params[b.up], s.up, CUDA_R_32F, 0.0f);
  s.m = pool->alloc_n<bf16>(Tag::activations, T * I);
  model::gate_fwd_kernel<<<grid_for(T * I), model::kThreads, 0, stream>>>(s.gate, s.up, s.m, T * I);
  check_launch("ModelStep: gate");
}

void ModelStep::Impl::block_bwd(const BlockIdx& b, BlockActs& s, float* dx) {
  const int64_t T = rows(), S = d().tokens, H = d().hidden, I = d().intermediate, nh = d().heads, kvh = d().kv_heads,
                hd = d().head_dim, QD = nh * hd, KD = kvh * hd;
  // MLP: x_out = x_mid + m Wd^T.
  bf16* dxb = pool->alloc_n<bf16>(Tag::workspace, T * H);
  model::to_bf16_kernel<<<grid_for(T * H), model::kThreads, 0, stream>>>(dx, dxb, T * H);
  float* dm = pool->alloc_n<float>(Tag::workspace, T * I);
  linear_bwd(params[b.down], s.m, dxb, dm, 0.0f, fuse_now(params[b.down]));
  bf16* dgate = pool->alloc_n<bf16>(Tag::workspace, T * I);
  bf16* dup = pool->alloc_n<bf16>(Tag::workspace, T * I);
  model::gate_bwd_kernel<<<grid_for(T * I), model::kThreads, 0, stream>>>(s.gate, s.up, dm, dgate, dup, T * I);
  check_launch("ModelStep: gate bwd");
  pool->release(dm);
  float* dh2 = pool->alloc_n<float>(Tag::workspace, T * H);
  linear_bwd(params[b.gate], s.h2, dgate, dh2, 0.0f, fuse_now(params[b.gate]));
  linear_bwd(params[b.up], s.h2, dup, dh2, 1.0f, fuse_now(params[b.up]));
  pool->release(dgate);
  pool->release(dup);
  norm_bwd(b.g2, s.x_mid, s.rstd2, dh2, dx);
  pool->release(dh2);
  // Attention: x_mid = x_in + a Wo^T.
  model::to_bf16_kernel<<<grid_for(T * H), model::kThreads, 0, stream>>>(dx, dxb, T * H);
  float* da = pool->alloc_n<float>(Tag::workspace, T * QD);
  linear_bwd(params[b.o], s.a, dxb, da, 0.0f, fuse_now(params[b.o]));
  pool->release(dxb);
  bf16* dab = pool->alloc_n<bf16>(Tag::workspace, T * QD);
  model::to_bf16_kernel<<<grid_for(T * QD), model::kThreads, 0, stream>>>(da, dab, T * QD);
  pool->release(da);
  bf16 *kx = nullptr, *vx = nullptr;
  expand_kv(s, kx, vx);
  const float scale = 1.0f / std::sqrt(float(hd));
  // Per sequence, as in the forward pass: dP a transient of one sequence, dS kept for the batch
  // (one sequence's at batch 1, the single-sequence step's order).
  const int64_t PS = nh * S * S;
  float* dp = pool->alloc_n<float>(Tag::workspace, PS);
  float* dvx = pool->alloc_n<float>(Tag::workspace, T * QD);
  bf16* ds = pool->alloc_n<bf16>(Tag::workspace, d().batch * PS);
  for (int64_t q = 0; q < d().batch; ++q) {
    const int64_t r0 = q * S * QD;
    // dP_h = dO_h V_h^T (the scores' form with K -> V, Q -> dO).
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, S, S, hd, 1.0f, vx + r0, QD, hd, dab + r0, QD, hd, 0.0f, dp, CUDA_R_32F, S, S * S, nh);
    // dV_h = P_h^T dO_h: column-major dV^T = dO_h^T P_h.
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, hd, S, S, 1.0f, dab + r0, QD, hd, s.p + q * PS, S, S * S, 0.0f, dvx + r0, CUDA_R_32F,
         QD, hd, nh);
    model::softmax_bwd_kernel<<<int(nh * S), model::kThreads, 0, stream>>>(s.p + q * PS, dp, ds + q * PS, S, scale);
    check_launch("ModelStep: softmax bwd");
  }
  pool->release(dp);
  pool->release(dab);
  bf16* dq = pool->alloc_n<bf16>(Tag::workspace, T * QD);
  float* dkx = pool->alloc_n<float>(Tag::workspace, T * QD);
  for (int64_t q = 0; q < d().batch; ++q) {
    const int64_t r0 = q * S * QD;
    // dQ_h = dS_h K_h: column-major dQ^T = K_h^T dS_h^T.
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, hd, S, S, 1.0f, kx + r0, QD, hd, ds + q * PS, S, S * S, 0.0f, dq + r0, CUDA_R_16BF,
         QD, hd, nh);
    // dK_h = dS_h^T Q_h: column-major dK^T = Q_h^T dS_h.
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, hd, S, S, 1.0f, s.q + r0, QD, hd, ds + q * PS, S, S * S, 0.0f, dkx + r0, CUDA_R_32F,
         QD, hd, nh);
  }
  pool->release(ds);
  pool->release(kx);
  pool->release(vx);
  bf16* dk = pool->alloc_n<bf16>(Tag::workspace, T * KD);
  bf16* dv = pool->alloc_n<bf16>(Tag::workspace, T * KD);
  model::reduce_kv_kernel<<<grid_for(T * KD), model::kThreads, 0, stream>>>(dkx, dk, T, nh, kvh, hd);
  model::reduce_kv_kernel<<<grid_for(T * KD), model::kThreads, 0, stream>>>(dvx, dv, T, nh, kvh, hd);
  check_launch("ModelStep: reduce kv");
  pool->release(dkx);
  pool->release(dvx);
  float* dh1 = pool->alloc_n<float>(Tag::workspace, T * H);
  linear_bwd(params[b.q], s.h1, dq, dh1, 0.0f, fuse_now(params[b.q]));
  linear_bwd(params[b.k], s.h1, dk, dh1, 1.0f, fuse_now(params[b.k]));
  linear_bwd(params[b.v], s.h1, dv, dh1, 1.0f, fuse_now(params[b.v]));
  pool->release(dq);
  pool->release(dk);
  pool->release(dv);
  norm_bwd(b.g1, s.x_in, s.rstd1, dh1, dx);
  pool->release(dh1);
  release_acts(s);
}

ModelStep::ModelStep(const ModelStepConfig& cfg) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.cfg = cfg;
  const ModelDims& d = cfg.dims;
  if (d.hidden < 1 || d.intermediate < 1 || d.heads < 1 || d.kv_heads < 1 || d.head_dim < 1 || d.vocab < 2 ||
      d.layers < 0 || d.tokens < 1 || d.batch < 1 || d.heads % d.kv_heads != 0) {
    throw std::invalid_argument("ModelStep: dimensions and batch must be >= 1, vocab >= 2 and heads a multiple of kv_heads");
  }
  if (cfg.defects.skip_one_update && cfg.update != ModelUpdate::fused) {
    throw std::invalid_argument("ModelStep: skip_one_update plants a defect in a fused model only");
  }
  if (cfg.defects.naive_tied_fusion && !(d.tied && cfg.update == ModelUpdate::fused)) {
    throw std::invalid_argument("ModelStep: naive_tied_fusion plants a defect in a tied, fused model only");
  }
  // A throw from here on destroys impl_, whose destructor frees what was made.
  {
    cuda_check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "ModelStep: stream");
    m.cublas = std::make_unique<CublasHandle>();
    m.pool = std::make_unique<TaggedPool>(m.stream);
    if (cfg.cublas_workspace_bytes > 0) {
      void* ws = m.pool->alloc(Tag::workspace, cfg.cublas_workspace_bytes);
      cublas_check(cublasSetWorkspace(m.h(), ws, size_t(cfg.cublas_workspace_bytes)), "ModelStep: cublasSetWorkspace");
    }
    const float std = 0.02f;
    m.emb = m.add_param("embed_tokens", d.vocab, d.hidden, false, std, 0.0f);
    for (int64_t l = 0; l < d.layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      Impl::BlockIdx b;
      b.g1 = m.add_param(p + "input_layernorm", 1, d.hidden, false, 0.0f, 1.0f);
      b.q = m.add_param(p + "q_proj", d.heads * d.head_dim, d.hidden, true, std, 0.0f);
      b.k = m.add_param(p + "k_proj", d.kv_heads * d.head_dim, d.hidden, true, std, 0.0f);
      b.v = m.add_param(p + "v_proj", d.kv_heads * d.head_dim, d.hidden, true, std, 0.0f);
      b.o = m.add_param(p + "o_proj", d.hidden, d.heads * d.head_dim, true, std, 0.0f);
      b.g2 = m.add_param(p + "post_attention_layernorm", 1, d.hidden, false, 0.0f, 1.0f);
      b.gate = m.add_param(p + "gate_proj", d.intermediate, d.hidden, true, std, 0.0f);
      b.up = m.add_param(p + "up_proj", d.intermediate, d.hidden, true, std, 0.0f);
      b.down = m.add_param(p + "down_proj", d.hidden, d.intermediate, true, std, 0.0f);
      m.blocks.push_back(b);
    }
    m.gf = m.add_param("norm", 1, d.hidden, false, 0.0f, 1.0f);
    m.head = d.tied ? m.emb : m.add_param("lm_head", d.vocab, d.hidden, true, std, 0.0f);
    m.n_linear = int(7 * d.layers + 1);
    const int64_t n = m.rows();
    m.tokens = m.pool->alloc_n<int32_t>(Tag::workspace, n);
    m.labels = m.pool->alloc_n<int32_t>(Tag::workspace, n);
    model::random_tokens_kernel<<<grid_for(n), model::kThreads, 0, m.stream>>>(m.tokens, n, cfg.seed + 1, d.vocab);
    model::random_tokens_kernel<<<grid_for(n), model::kThreads, 0, m.stream>>>(m.labels, n, cfg.seed + 2, d.vocab);
    m.check_launch("ModelStep: tokens");
    if (cfg.digests) m.digests = m.pool->alloc_n<unsigned long long>(Tag::workspace, m.n_linear);
    m.digest_on = cfg.digests;
    cuda_check(cudaStreamSynchronize(m.stream), "ModelStep: initialisation");
  }
}

ModelStep::~ModelStep() = default;

ModelStepStats ModelStep::step(int64_t step) {
  if (step < 1) throw std::invalid_argument("ModelStep::step: step counts from 1");
  return impl_->run(step);
}

void ModelStep::set_batch(const std::vector<int32_t>& tokens, const std::vector<int32_t>& labels) {
  Impl& m = *impl_;
  const int64_t T = m.rows(), V = m.d().vocab;
  if (int64_t(tokens.size()) != T || int64_t(labels.size()) != T)
    throw std::invalid_argument("ModelStep::set_batch: " + std::to_string(tokens.size()) + " tokens and " +
                                std::to_string(labels.size()) + " labels for a step of " + std::to_string(T));
  for (const std::vector<int32_t>* ids : {&tokens, &labels})
    for (int32_t id : *ids)
      if (id < 0 || id >= V)
        throw std::invalid_argument("ModelStep::set_batch: token id " + std::to_string(id) + " outside [0, " +
                                    std::to_string(V) + ")");
  cuda_check(cudaMemcpyAsync(m.tokens, tokens.data(), size_t(T) * 4, cudaMemcpyHostToDevice, m.stream), "set_batch");
  cuda_check(cudaMemcpyAsync(m.labels, labels.data(), size_t(T) * 4, cudaMemcpyHostToDevice, m.stream), "set_batch");
  cuda_check(cudaStreamSynchronize(m.stream), "set_batch");  // the host vectors may go
}

float ModelStep::eval_loss() {
  // step_ is not used by the forward pass; 1 only satisfies run's bookkeeping.
  return impl_->run(1, false).loss;
}

ModelStepStats ModelStep::Impl::run(int64_t step, bool train) {
  const int64_t T = rows(), H = d().hidden, V = d().vocab, L = d().layers;
  ModelStepStats st;
  skip_pending_ = train && cfg.defects.skip_one_update;
  pool->clear_timeline();
  pool->reset_tag_peaks();
  pool->phase("start");
  step_ = step;
  held_.clear();
  slot_ = 0;
  first_linear_ = true;
  if (digest_on) cuda_check(cudaMemsetAsync(digests, 0, size_t(n_linear) * 8, stream), "ModelStep: digests");
  cudaEvent_t ev0, ev1;
  cuda_check(cudaEventCreate(&ev0), "ModelStep: event");
  cuda_check(cudaEventCreate(&ev1), "ModelStep: event");
  cuda_check(cudaEventRecord(ev0, stream), "ModelStep: event record");

  // Forward.
  float* x = pool->alloc_n<float>(Tag::activations, T * H);
  model::embedding_kernel<<<grid_for(T * H), model::kThreads, 0, stream>>>(params[emb].pv.bf16, tokens, x, T, H);
  check_launch("ModelStep: embedding");
  std::vector<BlockActs> acts(static_cast<size_t>(L));
  for (int64_t l = 0; l < L; ++l) {
    acts[size_t(l)].x_in = x;
    block_fwd(blocks[size_t(l)], acts[size_t(l)]);
    float* x_out = pool->alloc_n<float>(Tag::activations, T * H);
    cuda_check(cudaMemcpyAsync(x_out, acts[size_t(l)].x_mid, size_t(T * H * 4), cudaMemcpyDeviceToDevice, stream),
               "ModelStep: residual");
    linear_fwd(acts[size_t(l)].m, params[blocks[size_t(l)].down], x_out, CUDA_R_32F, 1.0f);
    x = x_out;
  }
  float* rstdf = nullptr;
  bf16* hf = nullptr;
  norm_fwd(gf, x, hf, rstdf);
  float* logits = pool->alloc_n<float>(Tag::workspace, T * V);
  linear_fwd(hf, params[head], logits, CUDA_R_32F, 0.0f);
  float* loss = pool->alloc_n<float>(Tag::workspace, T);
  bf16* dlogits = pool->alloc_n<bf16>(Tag::activations, T * V);
  model::cross_entropy_kernel<<<int(T), model::kThreads, 0, stream>>>(logits, labels, loss, dlogits, V, T);
  check_launch("ModelStep: cross entropy");
  pool->release(logits);
  mark("forward");
  if (!train) {  // evaluation: the loss, and every activation given back
    for (void* p : {(void*)dlogits, (void*)hf, (void*)rstdf, (void*)x}) pool->release(p);
    for (const BlockActs& a : acts) release_acts(a);
    cuda_check(cudaEventDestroy(ev0), "ModelStep: event");
    cuda_check(cudaEventDestroy(ev1), "ModelStep: event");
    st.loss = mean_loss(loss);
    return st;
  }

  // Backward: the head, then the blocks from the last, then the embedding.
  float* dhf = pool->alloc_n<float>(Tag::workspace, T * H);
  float* g_tied = nullptr;
  Param& hw = params[head];
  if (d().tied && !cfg.defects.naive_tied_fusion) {
    // Two consumers (Remark 1's scope): the head's partial G materialized; the embedding adds its own below.
    cublas_dgrad(h(), dlogits, hw.pv.bf16, T, V, H, dhf, stream, 0.0f);
    g_tied = pool->alloc_n<float>(Tag::gradients_unfused, V * H);
    wgrad_materialize(WgradProblem{hf, dlogits, T, V, H}, g_tied, TileShape{}, stream);
    digest_into(slot_++, dhf, T * H * 4);
    first_linear_ = false;
  } else if (d().tied) {
    // Planted: the tied weight updated in place by its head use alone, as if single-consumer.
    first_linear_ = false;
    linear_bwd(hw, hf, dlogits, dhf, 0.0f, true);
  } else {
    linear_bwd(hw, hf, dlogits, dhf, 0.0f, fuse_now(hw));
  }
  pool->release(dlogits);
  pool->release(hf);
  float* dx = pool->alloc_n<float>(Tag::workspace, T * H);
  cuda_check(cudaMemsetAsync(dx, 0, size_t(T * H * 4), stream), "ModelStep: dx");
  norm_bwd(gf, x, rstdf, dhf, dx);
  pool->release(dhf);
  pool->release(rstdf);
  pool->release(x);
  mark("backward.head");
  for (int64_t l = L - 1; l >= 0; --l) {
    block_bwd(blocks[size_t(l)], acts[size_t(l)], dx);
    mark("backward.block" + std::to_string(l));
  }
  float* de = g_tied;
  if (!de) {
    de = pool->alloc_n<float>(Tag::gradients_unfused, V * H);
    cuda_check(cudaMemsetAsync(de, 0, size_t(V * H * 4), stream), "ModelStep: embedding gradient");
  }
  model::embedding_bwd_kernel<<<grid_for(H), model::kThreads, 0, stream>>>(dx, tokens, de, T, H);
  check_launch("ModelStep: embedding bwd");
  held_.push_back({&params[emb], de});
  pool->release(dx);
  mark("backward.embedding");

  if (capture_) {  // before the step: every parameter's gradient, copied to the host
    grads_.assign(params.size(), {});
    for (const Held& hd : held_) {
      std::vector<float>& g = grads_[size_t(hd.w - params.data())];
      g.resize(size_t(hd.w->pv.rows * hd.w->pv.cols));
      cuda_check(cudaMemcpyAsync(g.data(), hd.g, g.size() * 4, cudaMemcpyDeviceToHost, stream), "ModelStep: gradients");
    }
    cuda_check(cudaStreamSynchronize(stream), "ModelStep: gradients");
  }
  // The standard step of every held gradient, in the order they were reached.
  for (const Held& hd : held_) {
    rule_apply_device(cfg.rule, cfg.state, cfg.store, hd.w->pv, step, hd.g, hd.w->pv.cols, stream);
    pool->release(hd.g);
  }
  held_.clear();
  cuda_check(cudaEventRecord(ev1, stream), "ModelStep: event record");
  pool->phase(cfg.phase_marks ? "step" : "end");
  float ms = 0.0f;
  cuda_check(cudaEventElapsedTime(&ms, ev0, ev1), "ModelStep: elapsed");
  cudaEventDestroy(ev0);
  cudaEventDestroy(ev1);
  st.ms = ms;
  st.loss = mean_loss(loss);
  if (digest_on) {
    st.dx_digests.resize(size_t(slot_));
    cuda_check(cudaMemcpy(st.dx_digests.data(), digests, size_t(slot_) * 8, cudaMemcpyDeviceToHost), "ModelStep: digests");
  }
  st.timeline = pool->timeline();
  for (size_t i = 1; i < st.timeline.size(); ++i) st.pool_peak = std::max(st.pool_peak, st.timeline[i].peak);
  for (int t = 0; t < TaggedPool::kTags; ++t) st.tag_peak[t] = pool->tag_peak(t);
  return st;
}

const std::vector<ModelParamInfo>& ModelStep::params() const { return impl_->infos; }
int64_t ModelStep::param_count() const {
  int64_t n = 0;
  for (const auto& p : impl_->infos) n += p.rows * p.cols;
  return n;
}
int64_t ModelStep::fused_param_count() const {
  int64_t n = 0;
  for (const auto& p : impl_->infos) n += p.fused ? p.rows * p.cols : 0;
  return n;
}
void ModelStep::capture_gradients(bool on) {
  if (on && impl_->cfg.update == ModelUpdate::fused)
    throw std::logic_error("ModelStep::capture_gradients: the fused path materializes no linear gradient");
  impl_->capture_ = on;
}
const std::vector<std::vector<float>>& ModelStep::gradients() const { return impl_->grads_; }

void ModelStep::set_marks(bool phase_marks, bool digests) {
  if (digests && !impl_->digests) throw std::invalid_argument("ModelStep::set_marks: built without digests");
  impl_->cfg.phase_marks = phase_marks;
  impl_->digest_on = digests;
}
int64_t ModelStep::resident_bytes() const {
  return impl_->pool->tag_in_use(TaggedPool::weights) + impl_->pool->tag_in_use(TaggedPool::state);
}

namespace {
// The digest of each buffer (an even number of bytes; a null or empty one: 0), all in one pass of
// launches and one synchronization: a convergence run takes every weight's and state's digest after
// each of its steps, and a synchronization per buffer made that the step's cost.
std::vector<uint64_t> device_digests(const std::vector<std::pair<const void*, int64_t>>& bufs, cudaStream_t stream) {
  for (const auto& [p, bytes] : bufs)
    if (bytes % 2) throw std::invalid_argument("device_digest: an even number of bytes");
  std::vector<uint64_t> out(bufs.size(), 0);
  if (bufs.empty()) return out;
  unsigned long long* acc = nullptr;
  const size_t n = bufs.size();
  cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&acc), n * 8, stream), "device_digest: alloc");
  cuda_check(cudaMemsetAsync(acc, 0, n * 8, stream), "device_digest: zero");
  for (size_t i = 0; i < n; ++i) {
    const auto& [p, bytes] = bufs[i];
    if (!p || bytes == 0) continue;
    model::digest_kernel<<<grid_for(bytes / 2), model::kThreads, 0, stream>>>(static_cast<const uint16_t*>(p), bytes / 2,
                                                                              acc + i);
  }
  cuda_check(cudaGetLastError(), "device_digest: launch");
  static_assert(sizeof(uint64_t) == sizeof(unsigned long long));
  cuda_check(cudaMemcpyAsync(out.data(), acc, n * 8, cudaMemcpyDeviceToHost, stream), "device_digest: copy");
  cuda_check(cudaFreeAsync(acc, stream), "device_digest: free");
  cuda_check(cudaStreamSynchronize(stream), "device_digest: sync");
  return out;
}
}  // namespace

uint64_t device_digest(const void* p, int64_t bytes, cudaStream_t stream) {
  return device_digests({{p, bytes}}, stream)[0];
}

namespace {
uint64_t combine(uint64_t a, uint64_t b) { return a * 0x100000001b3ull ^ (b + 0x9e3779b97f4a7c15ull + (a << 6)); }
}  // namespace

std::vector<uint64_t> ModelStep::weight_digests() const {
  std::vector<std::pair<const void*, int64_t>> bufs;  // per parameter: its bf16 weights, its master (or none)
  for (const Param& p : impl_->params) {
    const int64_t n = p.pv.rows * p.pv.cols;
    bufs.emplace_back(p.pv.bf16, n * 2);
    bufs.emplace_back(p.pv.master, p.pv.master ? n * 4 : 0);
  }
  const std::vector<uint64_t> d = device_digests(bufs, impl_->stream);
  std::vector<uint64_t> out;
  for (size_t i = 0; i < impl_->params.size(); ++i)
    out.push_back(impl_->params[i].pv.master ? combine(d[2 * i], d[2 * i + 1]) : d[2 * i]);
  return out;
}

std::vector<uint16_t> ModelStep::weight_bits(size_t i) const {
  if (i >= impl_->params.size()) throw std::invalid_argument("ModelStep::weight_bits: no parameter " + std::to_string(i));
  const DeviceParamView& pv = impl_->params[i].pv;
  std::vector<uint16_t> out(size_t(pv.rows * pv.cols));
  cuda_check(cudaStreamSynchronize(impl_->stream), "ModelStep::weight_bits");
  cuda_check(cudaMemcpy(out.data(), pv.bf16, out.size() * 2, cudaMemcpyDeviceToHost), "ModelStep::weight_bits");
  return out;
}

ModelStep::Int8ZeroCounts ModelStep::int8_zero_counts() const {
  Int8ZeroCounts n;
  if (impl_->cfg.state != StateFormat::int8) return n;
  cuda_check(cudaStreamSynchronize(impl_->stream), "ModelStep::int8_zero_counts");
  for (const Param& p : impl_->params) {
    const StateView &m = p.pv.state[0], &v = p.pv.state[1];
    if (!m.i8 || !m.absmax || !v.i8 || !v.absmax) continue;
    const int64_t rows = p.pv.rows, cols = p.pv.cols, bpr = p.pv.blocks_per_row();
    // Per slot, is each element's decoded value zero: its code is 0, or its block's absmax is.
    auto zero_of = [&](const StateView& sv) {
      std::vector<uint8_t> q(size_t(rows * cols));
      std::vector<float> amax(size_t(rows * bpr));
      cuda_check(cudaMemcpy(q.data(), sv.i8, q.size(), cudaMemcpyDeviceToHost), "ModelStep::int8_zero_counts");
      cuda_check(cudaMemcpy(amax.data(), sv.absmax, amax.size() * 4, cudaMemcpyDeviceToHost), "ModelStep::int8_zero_counts");
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          q[size_t(r * cols + c)] = q[size_t(r * cols + c)] == 0 || amax[size_t(r * bpr + c / kInt8Block)] == 0.0f;
      return q;
    };
    const std::vector<uint8_t> mz = zero_of(m), vz = zero_of(v);
    for (size_t i = 0; i < vz.size(); ++i) n.v_zero += vz[i], n.v_zero_m_nonzero += vz[i] && !mz[i];
    n.total += rows * cols;
  }
  return n;
}

std::vector<uint64_t> ModelStep::state_digests() const {
  const int bytes_per = impl_->cfg.state == StateFormat::fp32 ? 4 : impl_->cfg.state == StateFormat::bf16 ? 2 : 1;
  // Per parameter and state slot: the slot's storage (its even part) and its scales (or none), digested
  // in one pass; then combined in the order the per-buffer digests always were.
  std::vector<std::pair<const void*, int64_t>> bufs;
  for (const Param& p : impl_->params)
    for (int k = 0; k < kMaxStates; ++k) {
      const StateView& sv = p.pv.state[k];
      const void* storage = state_storage(sv, impl_->cfg.state);
      const int64_t b = storage ? p.pv.rows * p.pv.cols * bytes_per : 0;
      bufs.emplace_back(storage, b - (b % 2));
      bufs.emplace_back(storage ? sv.absmax : nullptr, storage && sv.absmax ? p.pv.rows * p.pv.blocks_per_row() * 4 : 0);
    }
  const std::vector<uint64_t> d = device_digests(bufs, impl_->stream);
  std::vector<uint64_t> out;
  size_t i = 0;
  for (const Param& p : impl_->params) {
    uint64_t h = 0;
    for (int k = 0; k < kMaxStates; ++k, i += 2) {
      const StateView& sv = p.pv.state[k];
      const void* storage = state_storage(sv, impl_->cfg.state);
      if (!storage) continue;
      h = combine(h, d[i]);
      // INT8 codes of an odd count: the last byte rides with the scales' digest below.
      const int64_t b = p.pv.rows * p.pv.cols * bytes_per;
      if (b % 2) {
        uint8_t last = 0;
        cuda_check(cudaMemcpy(&last, static_cast<const uint8_t*>(storage) + b - 1, 1, cudaMemcpyDeviceToHost),
                   "state_digests: last byte");
        h = combine(h, last);
      }
      if (sv.absmax) h = combine(h, d[i + 1]);
    }
    out.push_back(h);
  }
  return out;
}

}  // namespace fh::gpu
