// train_step: the time of one pre-training update (masking, generator and discriminator forward
// and backward, AdamW) of ElectraPretrainer on the CPU or the GPU, for bench/cpu_step.sh and
// bench/e2e_step_bench.sh, which run the same model in PyTorch (bench/step_pytorch.py) in the
// same run. On the GPU each update ends with a synchronisation (metrics are read back).
// Usage: train_step --model tiny|small|base [--device cpu|cuda] [--precision f32|bf16]
//                   [--batch 8] [--seq-len 128] [--warmup 2] [--repeats 7]
//                   [--threads N (CPU threads; 0: all cores this process may use; default 1)]
//                   [--attention auto|unfused|flash|flash_ds|flash_short (the GPU's kernels,
//                    model.attention)]
//                   [--overlap-generator (the generator's backward on a second CUDA stream,
//                    train.overlap_generator, which electra pretrain's configs turn on; not with
//                    --profile, which times ops on one stream)]
//                   [--no-fused-layers (the generator's blocks as separate ops on the GPU,
//                    model.fused_layers: false)]
//                   [--profile]
// Prints: RESULT impl=electra model=<m> device=<d> attention=<a> overlap_generator=<0|1>
//         fused_layers=<0|1> batch=<b> seq=<t> median_ms=<x> min_ms=<y>
//         seq_per_s=<s> tflops=<official-convention FLOP rate>
// With --profile, then one more update under the op profiler (engine/op_profiler.h): a PROFILE
// line (the update's time, its ops' time and its launches) and a table of every op, per model
// part and GEMM shape, with its calls, launches, time, share of the update and achieved GB/s and
// TFLOP/s. The updates here are eager (no CUDA graph), so every op call is seen.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/op_profiler.h"
#include "engine/timer.h"
#include "models/flops.h"
#include "models/pretrainer.h"
#include "optim/optimizer.h"

using namespace electra;

namespace {

// One more update under the op profiler (engine/op_profiler.h): its time by CUDA events on the
// GPU (the ops' clock) or the wall clock on the CPU, and the profiler's table.
template <class Update>
void print_profile(Context& ctx, const Update& update) {
  OpProfiler profiler(ctx);
  std::optional<CudaEventTimer> events;
  if (ctx.is_cuda()) {
    events.emplace(ctx.stream());
    events->start();
  }
  const Stopwatch wall;
  {
    const ObserveOps observe(&profiler);
    update();
  }
  if (events) events->stop();
  const double update_ms = events ? events->milliseconds() : wall.seconds() * 1e3;
  profiler.collect();
  const Launches launches = profiler.launches();
  std::printf(
      "PROFILE update_ms=%.3f op_ms=%.3f launches=%lld (kernels %lld, cuBLASLt calls %lld, "
      "memsets %lld; timed by %s)\n%s",
      update_ms, profiler.op_ms(), static_cast<long long>(launches.total()),
      static_cast<long long>(launches.kernels), static_cast<long long>(launches.library_calls),
      static_cast<long long>(launches.memsets), ctx.is_cuda() ? "CUDA events" : "the wall clock",
      profiler.table(update_ms).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "tiny", device = "cpu", precision = "f32", attention = "auto";
  int64_t batch = 8, seq_len = 128;
  int warmup = 2, repeats = 7, threads = 1;
  bool profile = false, overlap_generator = false, fused_layers = true;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--profile" || flag == "--overlap-generator") {
      (flag == "--profile" ? profile : overlap_generator) = true;
      continue;
    }
    if (flag == "--no-fused-layers") {
      fused_layers = false;
      continue;
    }
    if (i + 1 == argc) {
      std::fprintf(stderr, "train_step: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--model")
      model = value;
    else if (flag == "--batch")
      batch = std::atoll(value.c_str());
    else if (flag == "--seq-len")
      seq_len = std::atoll(value.c_str());
    else if (flag == "--warmup")
      warmup = std::atoi(value.c_str());
    else if (flag == "--repeats")
      repeats = std::atoi(value.c_str());
    else if (flag == "--device")
      device = value;
    else if (flag == "--precision")
      precision = value;
    else if (flag == "--threads")
      threads = std::atoi(value.c_str());
    else if (flag == "--attention")
      attention = value;
    else {
      std::fprintf(stderr, "train_step: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (profile && overlap_generator) {
    std::fprintf(stderr,
                 "train_step: --profile times each op between events on one stream; it cannot "
                 "time the generator's backward on a second one (drop --overlap-generator)\n");
    return 2;
  }
  try {
    ElectraConfig config = electra_preset(model);
    config.discriminator.attention = attention_impl_named(attention, "--attention");
    config.discriminator.fused_layers = fused_layers;
    const Precision p = precision == "bf16" ? Precision::BF16 : Precision::F32;
    Context ctx =
        device == "cuda" ? Context::cuda(0, 1, p) : Context::cpu(1, Precision::F32, threads);
    PretrainOptions options;
    options.batch = batch;
    options.seq_len = seq_len;
    options.overlap_generator = overlap_generator;
    ElectraPretrainer pretrainer(ctx, config, options);
    pretrainer.init_weights(ctx, 1);
    Arena state("optimizer", ctx.device(),
                Optimizer::state_bytes(pretrainer.store(), OptimizerKind::kAdamW));
    OptimizerConfig opt;
    opt.schedule.peak = 5e-4;
    opt.schedule.warmup_steps = 0;
    opt.schedule.total_steps = 1000000;
    Optimizer optimizer(ctx, pretrainer.store(), opt, state);

    // Random text ids with [CLS] A [SEP] B [SEP] and 10% padding at the end of each sequence.
    std::mt19937 gen(7);
    std::uniform_int_distribution<int32_t> word(1000, config.discriminator.vocab_size - 1);
    HostBatch host;
    host.ids.resize(static_cast<size_t>(batch * seq_len));
    host.segment_ids.resize(host.ids.size());
    const int64_t length = seq_len - seq_len / 10, middle = length / 2;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < seq_len; ++t) {
        int32_t id = t < length ? word(gen) : 0;
        if (t == 0) id = 101;
        if (t == middle || t == length - 1) id = 102;
        host.ids[b * seq_len + t] = id;
        host.segment_ids[b * seq_len + t] = t > middle && t < length ? 1 : 0;
      }
    }
    auto update = [&](int i) {
      pretrainer.zero_grads(ctx);
      pretrainer.step(ctx, host, static_cast<uint32_t>(i));
      optimizer.step(ctx, i);
    };
    std::vector<double> ms;
    for (int i = 0; i < warmup + repeats; ++i) {
      Stopwatch timer;
      update(i);
      ctx.synchronize();
      if (i >= warmup) ms.push_back(timer.seconds() * 1e3);
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double flops =
        step_flops(config, batch, seq_len, static_cast<double>(pretrainer.slots())).total();
    std::printf(
        "RESULT impl=electra model=%s device=%s attention=%s overlap_generator=%d fused_layers=%d "
        "precision=%s batch=%lld seq=%lld threads=%d median_ms=%.2f min_ms=%.2f seq_per_s=%.1f "
        "tflops=%.2f loss=%.4f\n",
        model.c_str(), device.c_str(), attention.c_str(), overlap_generator ? 1 : 0,
        fused_layers ? 1 : 0, precision.c_str(), static_cast<long long>(batch),
        static_cast<long long>(seq_len), ctx.threads(), median, ms.front(),
        static_cast<double>(batch) / (median * 1e-3), flops / (median * 1e-3) / 1e12,
        pretrainer.metrics(ctx).total_loss);
    if (profile) print_profile(ctx, [&] { update(warmup + repeats); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
