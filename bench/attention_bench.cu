// attention, bf16, dropout 0.1 and 0, at T = 128 and 512 with the head counts of ELECTRA-Small (4),
// Base (12) and Large (16), 16384 tokens per call: forward and backward timed separately, beside
// the bf16 GEMM rate. Ours is version 2 (the flash kernels); version 1 (cuBLASLt GEMMs around the
// fused softmax kernels) is the baseline. FLOPs are the useful math of both versions (4 B h T^2 d
// forward, 8 B h T^2 d backward; flash recomputes S and dPd on top of that). PyTorch's fused
// attention (SDPA with its cuDNN and flash backends) is measured by
// bench/attention_sdpa_baseline.py at the same shapes, in the same scripts/gpu_check.sh run.
// Both versions are validated (forward and backward) against the CPU reference at a small batch
// first: nothing is timed that was not validated (a plain one-thread-per-row kernel was timed here
// before without validation; SDPA is the speed reference that matters).
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/attention.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"
#include "test/kernels/attention_errors.h"

using namespace electra;

namespace {

std::vector<int32_t> make_mask(int64_t b, int64_t t) {
  std::vector<int32_t> mask(b * t, 1);
  for (int64_t bi = 1; bi < b; bi += 2) {
    for (int64_t j = t - t / 4; j < t; ++j) mask[bi * t + j] = 0;
  }
  return mask;
}

// What the forward saves and the workspace of one implementation (attention.h), bf16 activations.
struct State {
  bool flash;
  Tensor saved, scratch;

  static State alloc(Arena& arena, const AttentionArgs& args, int64_t b, int64_t t, int64_t h) {
    const AttentionState state = attention_state(Device::CUDA, args, b, t, h, DType::BF16);
    return State{state.flash, state.view(arena.alloc(state.dtype, {state.numel()})),
                 state.scratch_view(arena.alloc(state.scratch_dtype, {state.numel()}))};
  }
  // The calls that are validated and timed.
  void forward(Context& ctx, const AttentionArgs& args, const Tensor& qkv, const Tensor& mask,
               const Tensor& out) const {
    run_op(ctx, AttentionForward{.qkv = qkv,
                                 .mask = mask,
                                 .args = args,
                                 .saved = Out(saved),
                                 .scratch = Out(scratch),
                                 .out = Out(out)});
  }
  void backward(Context& ctx, const AttentionArgs& args, const Tensor& qkv, const Tensor& mask,
                const Tensor& dout, const Tensor& out, const Tensor& dqkv) const {
    run_op(ctx, AttentionBackward{.qkv = qkv,
                                  .mask = mask,
                                  .args = args,
                                  .saved = saved,
                                  .dout = dout,
                                  .scratch = Out(scratch),
                                  .dqkv = Out(dqkv),
                                  .out = out});
  }
};

// Forward and backward of both implementations (the timed configurations at batch 2) against the
// CPU reference in f64 on the same bf16 inputs, judged as attention_gpu_test judges them: V and
// dout positive, so that out and dV are sums of positive terms (zero-mean V made out a
// cancellation, whose elementwise error says nothing about the kernel), out and dV elementwise,
// dQ and dK normwise (test/kernels/attention_errors.h), all within its bf16 tolerance 2e-2.
bool validate(Context& ctx, Arena& arena, int64_t t, int64_t h, int64_t heads,
              const AttentionArgs& flash, const AttentionArgs& unfused) {
  const int64_t b = 2;
  const size_t mark = arena.mark();
  std::vector<float> qkv = test::random_vector<float>(b * t * 3 * h, 5);
  const std::vector<float> v = test::random_vector<float>(b * t * h, 8, 0.1, 1);
  for (int64_t row = 0; row < b * t; ++row) {
    for (int64_t col = 0; col < h; ++col) qkv[row * 3 * h + 2 * h + col] = v[row * h + col];
  }
  qkv = test::as_dtype(qkv, DType::BF16);
  const std::vector<float> dout =
      test::as_dtype(test::random_vector<float>(b * t * h, 9, 0.1, 1), DType::BF16);
  std::vector<int32_t> mask = make_mask(b, t);
  std::vector<double> hqkv(qkv.begin(), qkv.end()), hdout(dout.begin(), dout.end());
  std::vector<double> probs(b * heads * t * t), scratch(probs.size()), out(b * t * h);
  std::vector<double> dqkv(hqkv.size());
  Context cpu = Context::cpu();
  run_op(cpu, AttentionForward{.qkv = test::view(hqkv, {b, t, 3 * h}),
                               .mask = test::view(mask, {b, t}),
                               .args = flash,
                               .saved = Out(test::view(probs, {b, heads, t, t})),
                               .scratch = Out(test::view(scratch, {b, heads, t, t})),
                               .out = Out(test::view(out, {b, t, h}))});
  run_op(cpu, AttentionBackward{.qkv = test::view(hqkv, {b, t, 3 * h}),
                                .mask = test::view(mask, {b, t}),
                                .args = flash,
                                .saved = test::view(probs, {b, heads, t, t}),
                                .dout = test::view(hdout, {b, t, h}),
                                .scratch = Out(test::view(scratch, {b, heads, t, t})),
                                .dqkv = Out(test::view(dqkv, {b, t, 3 * h}))});
  const Tensor gqkv = test::upload_bf16(ctx, arena, qkv, {b, t, 3 * h});
  const Tensor gdout = test::upload_bf16(ctx, arena, dout, {b, t, h});
  const Tensor gmask = test::upload(ctx, arena, mask, {b, t});
  const double tol = 2e-2;
  bool ok = true;
  for (const AttentionArgs& args : {flash, unfused}) {
    const State state = State::alloc(arena, args, b, t, h);
    const Tensor gout = arena.alloc<bf16>({b, t, h});
    const Tensor gdqkv = arena.alloc<bf16>({b, t, 3 * h});
    poison_tensor(ctx.stream(), gout);
    poison_tensor(ctx.stream(), gdqkv);
    state.forward(ctx, args, gqkv, gmask, gout);
    state.backward(ctx, args, gqkv, gmask, gdout, gout, gdqkv);
    const double out_err = test::max_relative_error(test::download_f32(ctx, gout), out);
    const test::AttentionGradErrors e =
        test::attention_grad_errors(test::download_f32(ctx, gdqkv), dqkv, h);
    std::printf(
        "validate attention %s T=%ld H=%ld heads=%ld p=%g: out max rel err %.3g, dQ %.3g and dK "
        "%.3g normwise, dV max rel err %.3g\n",
        state.flash ? "flash" : "unfused", static_cast<long>(t), static_cast<long>(h),
        static_cast<long>(heads), static_cast<double>(args.dropout_p), out_err, e.dq, e.dk, e.dv);
    ok &= out_err < tol && e.worst() < tol;
  }
  arena.rewind(mark);
  return ok;
}

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  const int64_t tokens = 16384;
  struct Model {
    const char* name;
    int64_t h, heads;
  };
  Arena arena("bench", Device::CUDA, size_t{4} << 30);
  for (const Model& model :
       {Model{"small", 256, 4}, Model{"base", 768, 12}, Model{"large", 1024, 16}}) {
    for (int64_t t : {int64_t{128}, int64_t{512}}) {
      for (float p : {0.1f, 0.0f}) {
        const int64_t b = tokens / t, h = model.h, heads = model.heads;
        const AttentionArgs flash{heads, p, RngStream{1, RngPurpose::kDropout, 0, 0}, 1,
                                  AttentionImpl::kFlash};
        AttentionArgs unfused = flash;
        unfused.impl = AttentionImpl::kUnfused;
        if (!validate(ctx, arena, t, h, heads, flash, unfused)) {
          std::printf("FAILED validation of %s T=%ld\n", model.name, static_cast<long>(t));
          return 1;
        }
        const size_t mark = arena.mark();
        const Tensor qkv = test::upload_bf16(
            ctx, arena, test::random_vector<float>(b * t * 3 * h, 6), {b, t, 3 * h});
        const Tensor mask = test::upload(ctx, arena, make_mask(b, t), {b, t});
        const Tensor dout =
            test::upload_bf16(ctx, arena, test::random_vector<float>(b * t * h, 7), {b, t, h});
        const Tensor out = arena.alloc<bf16>({b, t, h});
        const Tensor dqkv = arena.alloc<bf16>({b, t, 3 * h});
        char p_name[16];
        std::snprintf(p_name, sizeof p_name, "%g", static_cast<double>(p));
        // The same names as bench/attention_sdpa_baseline.py, so the summary pairs the rows.
        const std::string shape = std::string(model.name) + "_B" + std::to_string(b) + "_T" +
                                  std::to_string(t) + "_H" + std::to_string(h) + "_p" + p_name;
        // Two GEMMs of 2 B heads T^2 d FLOPs each forward, four backward.
        const double gemm_flops = 2.0 * b * heads * t * t * (h / heads);
        const double prob_bytes = 2.0 * b * heads * t * t, row_bytes = 4.0 * b * heads * t;
        for (const AttentionArgs& args : {flash, unfused}) {
          const State state = State::alloc(arena, args, b, t, h);
          const char* impl = state.flash ? "ours" : "baseline_v1_unfused";
          // v1 moves P three times forward (S written, P read, Pd written and read) and six times
          // backward; flash moves only the rows' L (and D backward) besides the [B, T, H] tensors.
          const double fwd =
              bench::time_median_ms(ctx, [&] { state.forward(ctx, args, qkv, mask, out); });
          bench::report(
              ctx, "attention_fwd", shape, impl, fwd,
              2.0 * qkv.numel() + 2.0 * out.numel() + (state.flash ? row_bytes : 3 * prob_bytes),
              2 * gemm_flops);
          const double bwd = bench::time_median_ms(
              ctx, [&] { state.backward(ctx, args, qkv, mask, dout, out, dqkv); });
          bench::report(ctx, "attention_bwd", shape, impl, bwd,
                        4.0 * qkv.numel() + 2.0 * dout.numel() +
                            (state.flash ? 2.0 * out.numel() + 3 * row_bytes : 6 * prob_bytes),
                        4 * gemm_flops);
        }
        arena.rewind(mark);
      }
    }
  }
  return 0;
}
