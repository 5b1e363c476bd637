// weight_update (kernels/weight_update.h) for the op harness (test/common/op_case.h), GPU only (an
// optimizer has no gradient to check). The segment table is three input tensors made by
// make_segment_table on the CPU. Over a flat buffer of many segments (large ones spanning several
// chunks, tiny ones, gaps, an empty one; segment 0 frozen: lr_mult 0):
//   grad_norm: the norm and the segment norms;
//   adamw / lamb, with and without bias correction: two optimizer steps as the trainer runs them
//     (grad_norm recording its norm into a metrics accumulator, then adam_step reading the norm
//     from the device; clipping active), the gradients left as they were bit for bit;
//   every segment frozen: parameters and moments keep their bits (weight decay on);
//   a NaN or an Inf gradient: a non-finite norm, counted in the accumulator, and nothing moves;
//   adamw over segments at every offset modulo 4 (the CUDA kernel's 16-byte body and its scalar
//     head and tail) and over buffers 4 bytes off their 16-byte alignment (its scalar path).
// The GPU runs twice for the same bits. Benchmarks: grad_norm, AdamW (beside a plain
// one-thread-per-element AdamW with host hyper-parameters and no segments, and the scalar AdamW
// kernel the 16-byte one replaced) and LAMB over ELECTRA-Small's (~14M) and Base's (~110M)
// parameter buffers laid out like BERT.
// grad_norm_schedule: the schedule's advance in grad_norm's launch, over the mixed table and one
// without blocks. Tables, hand values and the f64 reference: weight_update_test.cpp.
//
// Tolerance 1e-5 relative on norms, moments and parameters. The two sides do not round alike: the
// CPU sums norms in f64 element by element while the GPU sums chunks in f32 first (relative error
// ~1e-7 at these sizes), and nvcc contracts the moment updates into FMAs while the host does not
// (-ffp-contract=off; the AdamW kernel spells its FMAs out: kernels/weight_update.cu), a difference
// of an ulp or two per operation over two steps.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "kernels/weight_update.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// A segment table's tensors as host values (make_segment_table on the CPU), made once per case.
struct HostTable {
  std::vector<double> segments, lr_mult, blocks;
  int64_t num_segments = 0, num_blocks = 0, num_params = 0;
  // The sizes alone (what the workspace sizes read).
  SegmentTable sizes() const {
    SegmentTable t;
    t.num_segments = num_segments;
    t.num_blocks = num_blocks;
    t.num_params = num_params;
    return t;
  }
};
using Table = std::shared_ptr<const HostTable>;

Table host_table(const std::vector<ParamSegment>& segs, int64_t num_params) {
  Context cpu = Context::cpu();
  Arena arena("table", Device::CPU, segment_table_bytes(segs));
  const SegmentTable t = make_segment_table(cpu, arena, segs, num_params);
  auto values = [](const Tensor& x) {
    return x.dtype == DType::I32
               ? std::vector<double>(x.ptr<int32_t>(), x.ptr<int32_t>() + x.numel())
               : std::vector<double>(x.ptr<float>(), x.ptr<float>() + x.numel());
  };
  return std::make_shared<const HostTable>(HostTable{values(t.segments), values(t.lr_mult),
                                                     values(t.blocks), t.num_segments, t.num_blocks,
                                                     num_params});
}

// The table's three tensors, and the SegmentTable the op takes from them.
std::vector<TensorSpec> table_specs(const Table& t) {
  return {input("segments", {t->num_segments, kSegFields}, fixed(t->segments), Kind::kI32),
          input("lr_mult", {t->num_segments}, fixed(t->lr_mult), Kind::kF32),
          input("blocks", {t->num_blocks, 2}, fixed(t->blocks), Kind::kI32)};
}

SegmentTable segment_table(const Table& t, const Args& a) {
  return SegmentTable{.segments = a["segments"],
                      .lr_mult = a["lr_mult"],
                      .blocks = a["blocks"],
                      .num_segments = t->num_segments,
                      .num_blocks = t->num_blocks,
                      .num_params = t->num_params};
}

// Large segments spanning several chunks, tiny ones, gaps after some, an empty one; segment 0
// (several blocks, decayed) frozen unless every segment is.
Table mixed_segments(bool all_frozen) {
  std::vector<ParamSegment> segs;
  int64_t offset = 0;
  const int64_t sizes[] = {3 * kOptimChunk + 17, 256, 1, 0, kOptimChunk, 128 * 256 + 5, 7, 999};
  int s = 0;
  for (int64_t size : sizes) {
    const float lr_mult = all_frozen || s == 0 ? 0.0f : 1.0f - 0.1f * s;
    segs.push_back({offset, size, s % 2 == 0, lr_mult});
    offset += size + (s % 3 == 0 ? 5 : 0);
    ++s;
  }
  return host_table(segs, offset + 3);
}

// Segments starting at every offset modulo 4, none frozen, for the CUDA AdamW kernel's split of a
// chunk (vector_body: 16-byte vectors from the first multiple of 4, scalar head and tail): heads
// and tails of 0 to 3 elements in every combination with a body, chunks too short for a vector (2
// to 6 elements), whole chunks with a head and a tail (1023 vectors: one thread without a second
// vector) and bodies of 1 to 600 vectors.
Table unaligned_segments() {
  const int64_t sizes[] = {
      2 * kOptimChunk + 6, 3, 5, 2, kOptimChunk + 1, 6, 4, 515, 1027, 9, 1203, 2403, 2048, 7};
  const int64_t gaps[] = {1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 2, 0, 0, 3};  // before each segment
  std::vector<ParamSegment> segs;
  int64_t offset = 0;
  for (int s = 0; s < 14; ++s) {
    offset += gaps[s];
    segs.push_back({offset, sizes[s], s % 2 == 0, 1.0f - 0.05f * s});
    offset += sizes[s];
  }
  return host_table(segs, offset + 2);
}

// Embeddings (vocab x E, 512 x E, 2 x E, LayerNorm) then `layers` encoder layers of width h.
Table bert_layout(int64_t e, int64_t h, int layers) {
  std::vector<ParamSegment> segs;
  int64_t total = 0;
  auto add = [&](int64_t size, bool decay) {
    segs.push_back({total, size, decay, 1.0f});
    total += size;
  };
  add(30522 * e, true);
  add(512 * e, true);
  add(2 * e, true);
  add(e, false);
  add(e, false);
  if (e != h) add(e * h, true);
  for (int l = 0; l < layers; ++l) {
    for (int k = 0; k < 4; ++k) {  // q, k, v, attention output
      add(h * h, true);
      add(h, false);
    }
    add(h, false);  // LayerNorm
    add(h, false);
    add(h * 4 * h, true);
    add(4 * h, false);
    add(4 * h * h, true);
    add(h, false);
    add(h, false);
    add(h, false);
  }
  return host_table(segs, total);
}

OpCase optimizer_case(std::string op, std::string shape, const Table& t,
                      std::vector<TensorSpec> tensors, Run forward, unsigned modes) {
  for (TensorSpec& s : table_specs(t)) tensors.push_back(std::move(s));
  return OpCase{
      .op = std::move(op),
      .shape = std::move(shape),
      .tensors = std::move(tensors),
      .forward = std::move(forward),
      .modes = modes,
      .dtypes = {DType::F32},  // optimizer state is f32 in every run
      .tol = {1e-5, 1e-5},
      .tol_reason =
          "the CPU's norms are f64 sums, the GPU's f32 chunks summed in f64; nvcc "
          "contracts the moment updates into FMAs (top of weight_update_cases.cpp)",
      .bench_dtype = DType::F32,
  };
}

// The metrics accumulator grad_norm records into: the norm into row 1, a non-finite one counted in
// row 2, rows 0 and 3 kept. f64 [4] from values in [1, 2); the stored norm is the f32 norm (1e-5
// relative, as the norm itself), the count exact, non-finite norms compared by class.
TensorSpec record_acc() {
  return updated("acc", {4}, {.lo = 1, .hi = 2}, Kind::kF64)
      .relative({1e-5, 1e-5})
      .nonfinite()
      .any_shape("at least the rows the op writes");
}
NormRecord norm_record(const Args& a) {
  return {.acc = Out(a["acc"]), .row = 1, .non_finite = 2};
}

// The norm (and on the GPU the segment norms); with `schedule`, three calls advancing a schedule of
// three learning rates from counter 1, the last past the table's end (lr and step compare by bits:
// a copy and an integer count on both devices; the other hyper-parameters stay), each recording
// the norm.
OpCase grad_norm(const std::string& shape, const Table& t, unsigned modes, bool schedule = false) {
  const int64_t p = t->num_params;
  const bool segment_norms = (modes & kGpu) != 0;  // the benchmark times the norm alone
  std::vector<TensorSpec> tensors = {
      input("grads", {p}, {.lo = -2, .hi = 2}, Kind::kF32),
      output("norm", {1}, Kind::kF32).relative({1e-5, 1e-5}),
      // At least one float: a table without blocks still gets a workspace tensor.
      workspace("workspace", std::max<int64_t>(1, grad_norm_workspace_size(t->sizes())))};
  if (segment_norms) {
    tensors.push_back(
        output("segment_norms", {t->num_segments}, Kind::kF32).relative({1e-5, 1e-5}));
  }
  if (schedule) {
    const std::array<float, kNumHyper> start = OptimHyperValues{}.packed();
    tensors.push_back(input("lr_table", {3}, fixed({1e-3, 5e-4, 2.5e-4}), Kind::kF32)
                          .any_shape("a schedule of any number of updates"));
    tensors.push_back(updated("counter", {1}, fixed({1}), Kind::kI32).bits());
    tensors.push_back(
        updated("hyper", {kNumHyper}, fixed({start.begin(), start.end()}), Kind::kF32).bits());
    tensors.push_back(record_acc());
  }
  return optimizer_case(
      schedule ? "grad_norm_schedule" : "grad_norm", shape, t, std::move(tensors),
      [t, segment_norms, schedule](Context& ctx, const Args& a) {
        for (int call = 0; call < (schedule ? 3 : 1); ++call) {
          run_op(ctx, GradNorm{.grads = a["grads"],
                               .table = segment_table(t, a),
                               .workspace = Out(a["workspace"]),
                               .norm = Out(a["norm"]),
                               .segment_norms = Out(segment_norms ? a["segment_norms"] : Tensor{}),
                               .schedule = schedule ? ScheduleState{.lr_table = a["lr_table"],
                                                                    .counter = Out(a["counter"]),
                                                                    .hyper = Out(a["hyper"])}
                                                    : no_schedule(),
                               .record = schedule ? norm_record(a) : no_record()});
        }
      },
      modes);
}

Fill hyper(float lr, int step) {
  OptimHyperValues h;  // max_norm 1: the norms of these gradients are far above it
  h.lr = lr;
  h.step = static_cast<float>(step);
  const std::array<float, kNumHyper> packed = h.packed();
  return fixed({packed.begin(), packed.end()});
}

struct Adam {
  bool lamb = false, bias_correction = false;
};

// The optimizer state, updated in place: parameters, moments.
std::vector<TensorSpec> state_specs(int64_t p, const Compare& compare) {
  std::vector<TensorSpec> s = {updated("params", {p}, {.lo = -1, .hi = 1}, Kind::kF32),
                               updated("m", {p}, {.lo = -0.1, .hi = 0.1}, Kind::kF32),
                               updated("v", {p}, {.lo = 1e-3, .hi = 1e-2}, Kind::kF32)};
  for (TensorSpec& x : s) x = compare == Compare::kBits ? x.bits() : x.relative({1e-5, 1e-5});
  return s;
}

void adam_step(Context& ctx, const Args& a, const Table& t, Adam adam, const char* grads,
               const char* hyper_name) {
  run_op(ctx, AdamStep{.params = Out(a["params"]),
                       .grads = a[grads],
                       .m = Out(a["m"]),
                       .v = Out(a["v"]),
                       .table = segment_table(t, a),
                       .hyper = a[hyper_name],
                       .norm = a["norm"],
                       .bias_correction = adam.bias_correction,
                       .lamb = adam.lamb,
                       .workspace = Out(a["workspace"])});
}

// x (a 1-D tensor) from its second element: a view 4 bytes past x's alignment (an unset x stays
// unset, one element shorter).
Tensor from_second(const Tensor& x) {
  if (x.data != nullptr) return x.rows(1, x.shape[0]);
  Tensor t = x;
  t.shape[0] -= 1;
  return t;
}

// `steps` optimizer steps as the trainer runs them: grad_norm, then adam_step on that norm, with
// gradients grads<k> and hyper-parameters hyper<k> (lr 1e-2, t = k). `grads` fills the gradients;
// `state` says how parameters and moments compare (bits: nothing may move). misaligned: the flat
// buffers (parameters, moments, gradients) hold one element more than the table and the steps see
// them from their second element, off the 16-byte alignment of the harness's allocations, so that
// AdamStep::cuda takes its scalar path; element 0, outside every segment, keeps its value.
OpCase optimizer_steps(const std::string& shape, const Table& t, Adam adam, int steps, Fill grads,
                       Compare state, unsigned modes = kGpu, bool misaligned = false) {
  const int64_t p = t->num_params + (misaligned ? 1 : 0);
  std::vector<TensorSpec> tensors = state_specs(p, state);
  for (int k = 1; k <= steps; ++k) {
    // Declared updated so that the harness compares them: the op leaves them as they were.
    tensors.push_back(updated("grads" + std::to_string(k), {p}, grads, Kind::kF32).bits());
    tensors.push_back(input("hyper" + std::to_string(k), {kNumHyper}, hyper(1e-2f, k), Kind::kF32));
  }
  // A non-finite norm compares by its class.
  tensors.push_back(output("norm", {1}, Kind::kF32).relative({1e-5, 1e-5}).nonfinite());
  tensors.push_back(record_acc());  // each step's norm recorded, as the trainer does
  tensors.push_back(workspace("workspace", lamb_workspace_size(t->sizes())));
  return optimizer_case(
      adam.lamb ? "lamb" : "adamw", shape + (adam.bias_correction ? "_bias_correction" : ""), t,
      std::move(tensors),
      [t, adam, steps, misaligned](Context& ctx, const Args& args) {
        Args a = args;
        if (misaligned) {
          std::vector<std::string> flat = {"params", "m", "v"};
          for (int k = 1; k <= steps; ++k) flat.push_back("grads" + std::to_string(k));
          for (const std::string& name : flat) a.replace(name, from_second(args[name]));
        }
        for (int k = 1; k <= steps; ++k) {
          const std::string g = "grads" + std::to_string(k), h = "hyper" + std::to_string(k);
          run_op(ctx, GradNorm{.grads = a[g],
                               .table = segment_table(t, a),
                               .workspace = Out(a["workspace"]),
                               .norm = Out(a["norm"]),
                               .segment_norms = Out(Tensor{}),
                               .schedule = no_schedule(),
                               .record = norm_record(a)});
          adam_step(ctx, a, t, adam, g.c_str(), h.c_str());
        }
      },
      modes);
}

// The benchmark: one step, adam_step alone timed (the norm from the step run before timing).
OpCase adam_bench(const std::string& shape, const Table& t, Adam adam) {
  const Fill grads{.lo = -1, .hi = 1};
  OpCase c = optimizer_steps(shape, t, adam, 1, grads, Compare::kRelative, kBench);
  c.bench_forward = [t, adam](Context& ctx, const Args& a) {
    adam_step(ctx, a, t, adam, "grads1", "hyper1");
  };
  // AdamStep::bytes(): 7 (AdamW) or 10 (LAMB) f32 passes over the parameters.
  const int64_t p = t->num_params;
  c.bench_bytes = [p, lamb = adam.lamb](DType, bool) { return (lamb ? 10.0 : 7.0) * 4.0 * p; };
  // The same step on the mixed table: the CPU reference of 110M parameters takes long.
  c.bench_validation = [adam, grads] {
    return optimizer_steps("8_segments", mixed_segments(false), adam, 1, grads, Compare::kRelative,
                           kBench);
  };
  return c;
}

// Gradients with one non-finite element.
Fill with_element(double value) {
  return {.make = [value](size_t n, uint64_t seed) {
    std::vector<double> g = random_vector<double>(n, seed, -1, 1);
    g[n / 2] = value;
    return g;
  }};
}

}  // namespace

std::vector<OpCase> op_cases() {
  const Table mixed = mixed_segments(false), frozen = mixed_segments(true);
  const Fill grads{.lo = -1, .hi = 1};
  // Only an empty segment: no block, the norm 0 from the launch's one block.
  const Table no_blocks = host_table({{0, 0, true, 1.0f}}, 5);
  std::vector<OpCase> cases = {grad_norm("8_segments", mixed, kGpu),
                               grad_norm("8_segments", mixed, kGpu, /*schedule=*/true),
                               grad_norm("no_blocks", no_blocks, kGpu, /*schedule=*/true)};
  for (bool lamb : {false, true}) {
    for (bool bias_correction : {false, true}) {
      const Adam adam{lamb, bias_correction};
      cases.push_back(
          optimizer_steps("8_segments_2_steps", mixed, adam, 2, grads, Compare::kRelative));
      cases.push_back(optimizer_steps("all_frozen", frozen, adam, 2, grads, Compare::kBits));
    }
  }
  // The CUDA AdamW kernel's 16-byte body with scalar heads and tails at every offset, and its
  // all-scalar path for buffers off the 16-byte alignment.
  cases.push_back(optimizer_steps("unaligned_segments_2_steps", unaligned_segments(),
                                  {.lamb = false}, 2, grads, Compare::kRelative));
  cases.push_back(optimizer_steps("misaligned_buffers_2_steps", mixed, {.lamb = false}, 2, grads,
                                  Compare::kRelative, kGpu, /*misaligned=*/true));
  cases.push_back(optimizer_steps("nan_gradient", mixed, {.lamb = false}, 1, with_element(NAN),
                                  Compare::kBits));
  cases.push_back(optimizer_steps("inf_gradient", mixed, {.lamb = true}, 1, with_element(INFINITY),
                                  Compare::kBits));
  for (const auto& [name, table] : {std::pair{"small_14M", bert_layout(128, 256, 12)},
                                    std::pair{"base_110M", bert_layout(768, 768, 12)}}) {
    OpCase norm = grad_norm(name, table, kBench);
    norm.bench_validation = [] { return grad_norm("8_segments", mixed_segments(false), kBench); };
    cases.push_back(std::move(norm));
    cases.push_back(adam_bench(name, table, {.lamb = false}));
    cases.push_back(adam_bench(name, table, {.lamb = true}));
  }
  return cases;
}

}  // namespace electra::test
