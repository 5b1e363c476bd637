// The benchmark mode of the op harness (test/common/op_case.h): a bench/<op>_bench.cu holds only
// its naive baselines and calls run_op_benchmarks(op_cases(), baselines), with the cases of
// test/kernels/<op>_cases.cpp. For each case with kBench, in its bench_dtype:
//   1. validation: the GPU parity run of the harness at the benchmark's shape (or at the smaller
//      OpCase::bench_validation), and of OpCase::baseline_case where the op's other implementation
//      is a baseline; a failure prints "FAILED validation" and exits 1 before
//      anything is timed;
//   2. a working set of copies of every tensor, at least twice L2 in all, and each timed repeat
//      uses the next copy, so a repeat reads nothing the previous ones left in L2 (the L2 is also
//      flushed before each repeat by time_median_ms);
//   3. the median time of the forward, then of the backward, as RESULT lines (<op>_fwd_<dtype>,
//      <op>_bwd_<dtype>, or OpCase::bench_op's names) beside every baseline of that pass; bytes
//      are the ideal traffic: each
//      tensor the pass names read or written once (an accumulated output both), workspaces not
//      counted, unless the case gives its own (OpCase::bench_bytes); roofline_pct is against the
//      device-to-device copy bandwidth measured in the same run, or against the bf16 GEMM rate
//      for a case with OpCase::bench_flops (bench_common.cuh).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "test/common/op_case.h"

namespace electra::bench {

enum class Pass { kForward, kBackward };

// A naive implementation of one pass of an op, timed on the same tensors as ours.
struct Baseline {
  std::string op;
  Pass pass;
  std::string name;  // RESULT impl=
  test::Run run;
};

// The ideal bytes of one pass: the tensors it names, each once (accumulated outputs twice).
inline double pass_bytes(const test::OpCase& c, const test::Args& args, const test::Run& pass,
                         Context& ctx) {
  std::vector<std::string> reads;
  args.record_reads(&reads);
  pass(ctx, args);
  args.record_reads(nullptr);
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  double bytes = 0;
  for (const std::string& name : reads) {
    const test::TensorSpec& s = c.spec(name);
    if (s.role == test::Role::kWorkspace) continue;
    bytes += static_cast<double>(args[name].nbytes()) * (s.accumulates ? 2 : 1);
  }
  return bytes;
}

inline int run_op_benchmarks(const std::vector<test::OpCase>& cases,
                             const std::vector<Baseline>& baselines) {
  Context ctx = Context::cuda(0);
  std::printf("device-to-device copy: %.1f GB/s\n", measured_copy_gbps(ctx));
  int device = 0, l2 = 0;
  ELECTRA_CUDA_CHECK(cudaGetDevice(&device));
  ELECTRA_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  for (const test::OpCase& c : cases) {
    if ((c.modes & test::kBench) == 0) continue;
    const DType dtype = c.bench_dtype;
    std::vector<test::OpCase> validated = {c.bench_validation ? c.bench_validation() : c};
    const test::OpCase other = c.baseline_case ? c.baseline_case() : test::OpCase{};
    if (c.baseline_case) validated.push_back(other);
    for (const test::OpCase& v : validated) {
      const std::vector<std::string> failures = test::gpu_parity(v, dtype);
      for (const std::string& f : failures) {
        std::printf("FAILED validation of %s/%s: %s\n", v.name().c_str(), dtype_name(dtype),
                    f.c_str());
      }
      if (!failures.empty()) return 1;
      std::printf("validated %s/%s against the CPU reference\n", v.name().c_str(),
                  dtype_name(dtype));
    }

    Context run_ctx = Context::cuda(0, c.seed);
    const size_t set_bytes = test::device_bytes(c, dtype);
    const size_t copies =
        std::clamp<size_t>((2 * static_cast<size_t>(l2) + set_bytes - 1) / set_bytes, 1, 64);
    Arena arena("op_bench", Device::CUDA, copies * (set_bytes + Arena::kAlignment));
    const std::vector<std::vector<double>> values = test::make_values(c);
    std::vector<test::Args> sets;
    for (size_t k = 0; k < copies; ++k) {
      sets.push_back(test::bind_device(run_ctx, arena, c, values, dtype));
      c.forward(run_ctx, sets.back());  // the backward reads what the forward saved
    }
    const std::string suffix = std::string("_") + dtype_name(dtype);
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      const test::Run& ours = pass == Pass::kBackward ? c.backward
                              : c.bench_forward       ? c.bench_forward
                                                      : c.forward;
      if (!ours) continue;
      const bool backward = pass == Pass::kBackward;
      const std::string op = c.bench_op.empty() ? c.op + (backward ? "_bwd" : "_fwd") + suffix
                                                : c.bench_op + (backward ? "_bwd" : "_fwd");
      const double bytes =
          c.bench_bytes ? c.bench_bytes(dtype, backward) : pass_bytes(c, sets[0], ours, run_ctx);
      const double flops = c.bench_flops ? c.bench_flops(sets[0], backward) : 0;
      auto time = [&](const test::Run& run) {
        size_t next = 0;
        return time_median_ms(run_ctx, [&] { run(run_ctx, sets[next++ % copies]); });
      };
      report(run_ctx, op, c.shape, "ours", time(ours), bytes, flops);
      for (const Baseline& b : baselines) {
        if (b.op == c.op && b.pass == pass)
          report(run_ctx, op, c.shape, b.name, time(b.run), bytes, flops);
      }
      // The other implementation's backward reads the state its forward, timed in the forward
      // pass over every copy, left.
      const test::Run& theirs = backward ? other.backward : other.forward;
      if (theirs) report(run_ctx, op, c.shape, c.baseline_impl, time(theirs), bytes, flops);
    }
  }
  return 0;
}

}  // namespace electra::bench
