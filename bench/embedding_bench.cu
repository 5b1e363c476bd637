// embedding forward and backward (f32 tables, bf16 output) at ELECTRA-Small (B = 128, T = 128,
// E = 128), Base (B = 32, T = 512, E = 768) and Large (E = 1024), V = 30522: forward ours against
// one thread per element; backward ours (deterministic sort + run sums) against the usual
// float-atomic scatter (not deterministic). Bytes: forward reads a word row and writes an output
// row per token; backward reads dout and read-modify-writes each touched word row once.
#include <cstdio>
#include <set>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/embedding.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

__global__ void naive_forward(const int32_t* ids, const int32_t* sids, const float* word,
                              const float* position, const float* segment, __nv_bfloat16* out,
                              int64_t len, int64_t e, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t token = i / e, j = i % e, t = token % len;
  out[i] = __float2bfloat16_rn(word[ids[token] * e + j] + position[t * e + j] +
                               segment[sids[token] * e + j]);
}

__global__ void atomic_backward(const __nv_bfloat16* dout, const int32_t* ids, const int32_t* sids,
                                float* dword, float* dposition, float* dsegment, int64_t len,
                                int64_t e, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t token = i / e, j = i % e, t = token % len;
  const float d = __bfloat162float(dout[i]);
  atomicAdd(dword + ids[token] * e + j, d);
  atomicAdd(dposition + t * e + j, d);
  atomicAdd(dsegment + sids[token] * e + j, d);
}

struct BenchShape {
  const char* name;
  int64_t batch, len, e;
};

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  const int64_t vocab = 30522, positions = 512, segments = 2;
  const BenchShape shapes[] = {{"small_128x128x128", 128, 128, 128},
                               {"base_32x512x768", 32, 512, 768},
                               {"large_32x512x1024", 32, 512, 1024}};
  for (const BenchShape& s : shapes) {
    const int64_t batch = s.batch, len = s.len, e = s.e, tokens = batch * len;
    const size_t ws_bytes = embedding_backward_workspace_bytes(batch, len, segments, e);
    Arena arena("bench", Device::CUDA,
                static_cast<size_t>((vocab + positions + segments) * e) * 8 +
                    static_cast<size_t>(tokens * e) * 2 + ws_bytes + (16 << 20));
    // Zipf-like ids: small ids are frequent, as in real text.
    std::vector<int32_t> ids = test::random_ints(tokens, 1, 0, static_cast<int32_t>(vocab - 1));
    for (int64_t i = 0; i < tokens; ++i) ids[i] = ids[i] % (1 + ids[(i * 7) % tokens] % 2000);
    std::vector<int32_t> sids = test::random_ints(tokens, 2, 0, 1);
    std::vector<float> word = test::random_vector<float>(vocab * e, 3);
    std::vector<float> position = test::random_vector<float>(positions * e, 4);
    std::vector<float> segment = test::random_vector<float>(segments * e, 5);
    const Tensor gid = test::upload(ctx, arena, ids, {batch, len});
    const Tensor gsid = test::upload(ctx, arena, sids, {batch, len});
    const Tensor gword = test::upload(ctx, arena, word, {vocab, e});
    const Tensor gpos = test::upload(ctx, arena, position, {positions, e});
    const Tensor gseg = test::upload(ctx, arena, segment, {segments, e});
    const Tensor gout = arena.alloc<bf16>({batch, len, e});
    const Tensor gdword = arena.alloc<float>({vocab, e});
    const Tensor gdpos = arena.alloc<float>({positions, e});
    const Tensor gdseg = arena.alloc<float>({segments, e});
    const Tensor ws = arena.alloc(DType::F32, {static_cast<int64_t>(ws_bytes / 4)});

    std::vector<float> out(tokens * e);
    const Tensor cid = Tensor::view_of(ids.data(), Device::CPU, {batch, len});
    const Tensor csid = Tensor::view_of(sids.data(), Device::CPU, {batch, len});
    run_op(cpu, EmbeddingForward{
                    .ids = cid,
                    .segment_ids = csid,
                    .word = Tensor::view_of(word.data(), Device::CPU, {vocab, e}),
                    .position = Tensor::view_of(position.data(), Device::CPU, {positions, e}),
                    .segment = Tensor::view_of(segment.data(), Device::CPU, {segments, e}),
                    .out = Out(Tensor::view_of(out.data(), Device::CPU, {batch, len, e}))});
    run_op(ctx, EmbeddingForward{.ids = gid,
                                 .segment_ids = gsid,
                                 .word = gword,
                                 .position = gpos,
                                 .segment = gseg,
                                 .out = Out(gout)});
    const std::vector<bf16> got = test::download<bf16>(ctx, gout);
    for (int64_t i = 0; i < tokens * e; ++i) {
      if (got[i].bits != float_to_bf16(out[i]).bits) {
        std::printf("FAILED forward validation of %s at %ld\n", s.name, static_cast<long>(i));
        return 1;
      }
    }
    // Backward validation: dout = the forward output; dword against the CPU.
    std::vector<float> dout(tokens * e), dword(vocab * e, 0.0f), dpos(positions * e, 0.0f),
        dseg(segments * e, 0.0f);
    for (int64_t i = 0; i < tokens * e; ++i) dout[i] = bf16_to_float(got[i]);
    run_op(cpu, EmbeddingBackward{
                    .dout = Tensor::view_of(dout.data(), Device::CPU, {batch, len, e}),
                    .ids = cid,
                    .segment_ids = csid,
                    .dword = Out(Tensor::view_of(dword.data(), Device::CPU, {vocab, e})),
                    .dposition = Out(Tensor::view_of(dpos.data(), Device::CPU, {positions, e})),
                    .dsegment = Out(Tensor::view_of(dseg.data(), Device::CPU, {segments, e})),
                    .workspace = Out(Tensor{})});
    zero_tensor(ctx.stream(), gdword);
    zero_tensor(ctx.stream(), gdpos);
    zero_tensor(ctx.stream(), gdseg);
    run_op(ctx, EmbeddingBackward{.dout = gout,
                                  .ids = gid,
                                  .segment_ids = gsid,
                                  .dword = Out(gdword),
                                  .dposition = Out(gdpos),
                                  .dsegment = Out(gdseg),
                                  .workspace = Out(ws)});
    const double err = test::max_relative_error(test::download<float>(ctx, gdword), dword);
    if (err > 1e-4) {
      std::printf("FAILED backward validation of %s: relative error %g\n", s.name, err);
      return 1;
    }

    const int64_t touched = static_cast<int64_t>(std::set<int32_t>(ids.begin(), ids.end()).size());
    const double fwd_bytes = tokens * e * (4.0 + 2.0) + tokens * 8.0;
    const double bwd_bytes = tokens * e * 2.0 + touched * e * 8.0 + tokens * 8.0;
    bench::report(ctx, "embedding_fwd_bf16", s.name, "ours",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          run_op(ctx, EmbeddingForward{.ids = gid,
                                                                       .segment_ids = gsid,
                                                                       .word = gword,
                                                                       .position = gpos,
                                                                       .segment = gseg,
                                                                       .out = Out(gout)});
                                        }),
                  fwd_bytes, 0);
    bench::report(
        ctx, "embedding_fwd_bf16", s.name, "baseline_naive",
        bench::time_median_ms(ctx,
                              [&] {
                                naive_forward<<<(tokens * e + 255) / 256, 256, 0, ctx.stream()>>>(
                                    gid.ptr<int32_t>(), gsid.ptr<int32_t>(), gword.ptr<float>(),
                                    gpos.ptr<float>(), gseg.ptr<float>(),
                                    static_cast<__nv_bfloat16*>(gout.data), len, e, tokens * e);
                              }),
        fwd_bytes, 0);
    bench::report(ctx, "embedding_bwd_bf16", s.name, "ours",
                  bench::time_median_ms(ctx,
                                        [&] {
                                          run_op(ctx, EmbeddingBackward{.dout = gout,
                                                                        .ids = gid,
                                                                        .segment_ids = gsid,
                                                                        .dword = Out(gdword),
                                                                        .dposition = Out(gdpos),
                                                                        .dsegment = Out(gdseg),
                                                                        .workspace = Out(ws)});
                                        }),
                  bwd_bytes, 0);
    bench::report(
        ctx, "embedding_bwd_bf16", s.name, "baseline_atomic",
        bench::time_median_ms(ctx,
                              [&] {
                                atomic_backward<<<(tokens * e + 255) / 256, 256, 0, ctx.stream()>>>(
                                    static_cast<const __nv_bfloat16*>(gout.data),
                                    gid.ptr<int32_t>(), gsid.ptr<int32_t>(), gdword.ptr<float>(),
                                    gdpos.ptr<float>(), gdseg.ptr<float>(), len, e, tokens * e);
                              }),
        bwd_bytes, 0);
  }
  return 0;
}
