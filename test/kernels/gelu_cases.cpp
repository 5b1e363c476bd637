// bias + GELU (kernels/gelu.h), both backward entry points, for the op harness
// (test/common/op_case.h): gradient checks at a small odd shape and ELECTRA-Small's FFN shape,
// GPU parity at the generator's, ELECTRA-Small's and Base's FFN shapes and awkward widths,
// benchmarks at the FFN intermediates of the generator, Small, Base and Large. Hand values and the
// left tail: gelu_test.cpp.
#include "kernels/gelu.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

OpCase bias_gelu(const std::string& shape, int64_t n, int64_t h, unsigned modes,
                 size_t max_checks = 0) {
  return OpCase{
      .op = "bias_gelu",
      .shape = shape,
      .tensors = {input("x", {n, h}, {.lo = -4, .hi = 4}), param("b", {h}), output("y", {n, h}),
                  upstream("dy", "y", {n, h}), grad("dx", "x", {n, h}), grad_acc("db", "b", {h}),
                  workspace("workspace", bias_gelu_backward_workspace_floats(n, h))},
      .forward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, BiasGeluForward{.x = a["x"], .b = a["b"], .y = Out(a["y"])});
          },
      .backward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, BiasGeluBackward{.dy = a["dy"],
                                         .x = a["x"],
                                         .b = a["b"],
                                         .dx = Out(a["dx"]),
                                         .db = Out(a["db"]),
                                         .workspace = Out(a["workspace"])});
          },
      .modes = modes,
      .max_checks = max_checks,
  };
}

// The backward from the pre-activation u (what a cuBLASLt GELU_AUX epilogue stores): the forward
// is bias + GELU at b = 0, so db (the sum of dx over rows) is the gradient w.r.t. that b.
OpCase bias_gelu_preact(const std::string& shape, int64_t n, int64_t h, unsigned modes,
                        size_t max_checks = 0) {
  return OpCase{
      .op = "bias_gelu_preact",
      .shape = shape,
      .tensors = {input("u", {n, h}, {.lo = -4, .hi = 4}),
                  param("b", {h},
                        {.make = [](size_t count,
                                    uint64_t) { return std::vector<double>(count, 0.0); }}),
                  output("y", {n, h}), upstream("dy", "y", {n, h}), grad("dx", "u", {n, h}),
                  grad_acc("db", "b", {h}),
                  workspace("workspace", bias_gelu_backward_workspace_floats(n, h))},
      .forward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, BiasGeluForward{.x = a["u"], .b = a["b"], .y = Out(a["y"])});
          },
      .backward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, BiasGeluBackwardPreact{.dy = a["dy"],
                                               .u = a["u"],
                                               .dx = Out(a["dx"]),
                                               .db = Out(a["db"]),
                                               .workspace = Out(a["workspace"])});
          },
      .modes = modes,
      .max_checks = max_checks,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  const unsigned all = kGradcheck | kGpu;
  std::vector<OpCase> cases = {
      bias_gelu("15x7", 15, 7, all),
      bias_gelu_preact("15x7", 15, 7, all),
      bias_gelu("small_ffn_128x1024", 128, 1024, kGradcheck, 97),
      bias_gelu_preact("small_ffn_128x1024", 128, 1024, kGradcheck, 97),
  };
  // The benchmarks validate 1024 of their rows (the CPU reference of 67M elements takes long).
  for (const auto& [name, h] :
       {std::pair{"generator_16384x256", int64_t{256}},
        std::pair{"small_16384x1024", int64_t{1024}}, std::pair{"base_16384x3072", int64_t{3072}},
        std::pair{"large_16384x4096", int64_t{4096}}}) {
    OpCase c = bias_gelu(name, 128 * 128, h, kBench);
    c.bench_validation = [h] { return bias_gelu("1024_rows", 1024, h, kBench); };
    cases.push_back(std::move(c));
  }
  struct Shape {
    const char* name;
    int64_t n, h;
  };
  // ELECTRA-Small and Base FFN, awkward widths, and 507 row blocks of 79 rows for db. db's sums
  // (kernels/column_sum.cuh, 8 chains of row blocks for H >= 32): 32 row blocks (4 per chain),
  // 10 (chains of 2 and 1), 3 (empty chains), 1; H = 3072 and 2056 (16-byte loads) and 1001
  // (scalar) make several column tiles, 2056's last one 8 columns wide; the GPU run is repeated
  // on the same context, so a counter left nonzero would fail the same-bits check.
  for (const Shape& s :
       {Shape{"small_ffn_1024x1024", 8 * 128, 1024}, Shape{"base_ffn_1024x3072", 2 * 512, 3072},
        Shape{"37x7", 37, 7}, Shape{"300x100", 300, 100}, Shape{"65x1000", 65, 1000},
        Shape{"1x256", 1, 256}, Shape{"40000x64", 40000, 64}, Shape{"300x2056", 300, 2056},
        Shape{"300x1001", 300, 1001},
        // 512 row blocks of 5 warps, 2560 warps: more than 16 an SM on up to 160 SMs, so the
        // backward takes its one-row loop (kernels/gelu.cu); the cases above take four rows.
        Shape{"many_warps_16384x1280", 16384, 1280},
        // The generator's FFN: one warp of columns, so row groups share a block row (8 in the
        // forward, 4 in the backward on 132 SMs) and the backward adds their sums in the block;
        // 40000x64 above has row groups of 20 rows and a shorter last one.
        Shape{"generator_16384x256", 16384, 256}}) {
    cases.push_back(bias_gelu(s.name, s.n, s.h, kGpu));
    cases.push_back(bias_gelu_preact(s.name, s.n, s.h, kGpu));
  }
  return cases;
}

}  // namespace electra::test
