#include "kernels/embedding.h"

namespace electra::cpu {
namespace {

// Throws UserError naming the token unless 0 <= id < rows.
void check_id(const char* what, int32_t id, int64_t rows, int64_t b, int64_t t) {
  ELECTRA_USER_CHECK(id >= 0 && id < rows, "embedding: ", what, " ", id, " at position (batch ", b,
                     ", token ", t, ") is outside [0, ", rows, ")");
}

// The forward's tokens are independent (tasks of kTokenBlock). The backward's sums into the
// tables are split by columns instead: each task owns kColBlock columns of all three tables and
// adds the tokens in order, as a single thread would.
constexpr int64_t kTokenBlock = 64, kColBlock = 16;

}  // namespace

}  // namespace electra::cpu

namespace electra {

// The lookup into sum, then the embedding LayerNorm and the dropout in place on y: the CPU steps of
// layernorm_forward and dropout, so the bits are those of the three ops run one after another.
void EmbeddingForward::cpu(Context& ctx) const {
  dispatch_cpu_float(sum.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    const int64_t batch = ids.dim(0), len = ids.dim(1), e = word.dim(1);
    const int32_t* id = ids.ptr<int32_t>();
    const int32_t* sid = segment_ids.ptr<int32_t>();
    const T* w = word.ptr<T>();
    const T* p = position.ptr<T>();
    const T* s = segment.ptr<T>();
    T* out = sum.ptr<T>();
    ctx.parallel_ranges(batch * len, cpu::kTokenBlock, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t b = i / len, t = i % len;
        cpu::check_id("token id", id[i], word.dim(0), b, t);
        cpu::check_id("segment id", sid[i], segment.dim(0), b, t);
        for (int64_t j = 0; j < e; ++j) {
          out[i * e + j] = w[id[i] * e + j] + p[t * e + j] + s[sid[i] * e + j];
        }
      }
    });
  });
  const int64_t e = word.dim(1), rows = ids.numel();
  LayerNormForward{.x = sum.reshape({rows, e}),
                   .gamma = norm.gamma,
                   .beta = norm.beta,
                   .eps = norm.eps,
                   .y = Out(y.reshape({rows, e})),
                   .mean = Out(mean.reshape({rows})),
                   .rstd = Out(rstd.reshape({rows}))}
      .cpu(ctx);
  Dropout{.x = y, .site = norm.site, .y = y}.cpu(ctx);
}

void EmbeddingBackward::cpu(Context& ctx) const {
  dispatch_cpu_float(dout.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    const int64_t batch = ids.dim(0), len = ids.dim(1), e = dword.dim(1);
    const int32_t* id = ids.ptr<int32_t>();
    const int32_t* sid = segment_ids.ptr<int32_t>();
    const T* dy = dout.ptr<T>();
    T* dw = dword.ptr<T>();
    T* dp = dposition.ptr<T>();
    T* ds = dsegment.ptr<T>();
    ctx.parallel_ranges(e, cpu::kColBlock, [&](int64_t j0, int64_t j1) {
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < len; ++t) {
          const int64_t i = b * len + t;
          cpu::check_id("token id", id[i], dword.dim(0), b, t);
          cpu::check_id("segment id", sid[i], dsegment.dim(0), b, t);
          for (int64_t j = j0; j < j1; ++j) {
            dw[id[i] * e + j] += dy[i * e + j];
            dp[t * e + j] += dy[i * e + j];
            ds[sid[i] * e + j] += dy[i * e + j];
          }
        }
      }
    });
  });
}

}  // namespace electra
