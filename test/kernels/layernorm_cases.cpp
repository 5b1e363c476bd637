// layernorm (alone and with its dy_dropout: dropout(layernorm(x))) and the fused residual
// layernorm (kernels/layernorm.h) for the op harness
// (test/common/op_case.h): gradient checks at a small odd shape and ELECTRA-Small's width, GPU
// parity at ELECTRA-Small, Base and Large widths and awkward shapes, benchmarks at the three
// models' activation sizes. Hand values and refusals: layernorm_test.cpp.
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

constexpr float kEps = 1e-12f;  // ELECTRA's

// The statistics are f32 in every run and computed from the same (rounded) inputs, so they agree
// to f32 rounding of row sums of length H whatever the activation dtype.
constexpr Tol kStatTol = {1e-5, 1e-5};

// y, mean, rstd = layernorm(x) with the case's gamma and beta.
void layernorm_forward(Context& ctx, const Args& a, const Tensor& x) {
  run_op(ctx, LayerNormForward{.x = x,
                               .gamma = a["gamma"],
                               .beta = a["beta"],
                               .eps = kEps,
                               .y = Out(a["y"]),
                               .mean = Out(a["mean"]),
                               .rstd = Out(a["rstd"])});
}

OpCase layernorm(const std::string& shape, int64_t n, int64_t h, unsigned modes,
                 size_t max_checks = 0) {
  return OpCase{
      .op = "layernorm",
      .shape = shape,
      .tensors = {input("x", {n, h}, {.lo = -2, .hi = 3}),
                  param("gamma", {h}, {.lo = 0.5, .hi = 1.5}), param("beta", {h}),
                  output("y", {n, h}), output("mean", {n}, Kind::kParam).with_tol(kStatTol),
                  output("rstd", {n}, Kind::kParam).with_tol(kStatTol), upstream("dy", "y", {n, h}),
                  grad("dx", "x", {n, h}), grad_acc("dgamma", "gamma", {h}),
                  grad_acc("dbeta", "beta", {h}),
                  workspace("workspace", layernorm_backward_workspace_floats(n, h))},
      .forward = [](Context& ctx, const Args& a) { layernorm_forward(ctx, a, a["x"]); },
      .backward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, LayerNormBackward{.dy = a["dy"],
                                          .x = a["x"],
                                          .gamma = a["gamma"],
                                          .mean = a["mean"],
                                          .rstd = a["rstd"],
                                          .dx = Out(a["dx"]),
                                          .dgamma = Out(a["dgamma"]),
                                          .dbeta = Out(a["dbeta"]),
                                          .workspace = Out(a["workspace"])});
          },
      .modes = modes,
      .max_checks = max_checks,
  };
}

// dropped = dropout(layernorm(x)) (the embeddings' LayerNorm and dropout): the backward is
// layernorm_backward with the dropout's site as its dy_dropout, dy the gradient of `dropped`.
OpCase layernorm_dropped(const std::string& shape, int64_t n, int64_t h, uint64_t offset, float p,
                         unsigned modes, size_t max_checks = 0) {
  auto site = [offset, p](const Context& ctx) {
    return DropoutSite{ctx.rng(RngPurpose::kDropout, 4), offset, p};
  };
  return OpCase{
      .op = "layernorm_dropped",
      .shape = shape,
      .tensors = {input("x", {n, h}, {.lo = -2, .hi = 3}),
                  param("gamma", {h}, {.lo = 0.5, .hi = 1.5}), param("beta", {h}),
                  output("y", {n, h}), output("dropped", {n, h}).zeros_agree(),
                  output("mean", {n}, Kind::kParam).with_tol(kStatTol),
                  output("rstd", {n}, Kind::kParam).with_tol(kStatTol),
                  upstream("ddropped", "dropped", {n, h}), grad("dx", "x", {n, h}),
                  grad_acc("dgamma", "gamma", {h}), grad_acc("dbeta", "beta", {h}),
                  workspace("workspace", layernorm_backward_workspace_floats(n, h))},
      .forward =
          [site](Context& ctx, const Args& a) {
            layernorm_forward(ctx, a, a["x"]);
            run_op(ctx, Dropout{.x = a["y"], .site = site(ctx), .y = Out(a["dropped"])});
          },
      .backward =
          [site](Context& ctx, const Args& a) {
            run_op(ctx, LayerNormBackward{.dy = a["ddropped"],
                                          .x = a["x"],
                                          .gamma = a["gamma"],
                                          .mean = a["mean"],
                                          .rstd = a["rstd"],
                                          .dy_dropout = site(ctx),
                                          .dx = Out(a["dx"]),
                                          .dgamma = Out(a["dgamma"]),
                                          .dbeta = Out(a["dbeta"]),
                                          .workspace = Out(a["workspace"])});
          },
      .modes = modes,
      .seed = 13,
      .max_checks = max_checks,
  };
}

// BERT's LayerNorm(dropout(x) + residual); `site` is dropout_site_offset(k) + shift. With
// `linear_bias`, x is the output of a linear x = a I^T + bias (the identity keeps x = a + bias
// exact: a product by 1 and sums of zeros), and the backward adds bias's gradient (dbias, the
// column sums of dx) while dx is a plain output: the op as models/self_attention.cpp and
// models/feed_forward.cpp call it.
OpCase residual_layernorm(const std::string& shape, int64_t n, int64_t h, uint64_t offset, float p,
                          unsigned modes, size_t max_checks = 0, bool linear_bias = false) {
  auto site = [offset, p](const Context& ctx) {
    return DropoutSite{ctx.rng(RngPurpose::kDropout, 8), offset, p};
  };
  auto linear = [linear_bias](Context& ctx, const Args& a) {
    if (linear_bias) linear_forward(ctx, a["a"], a["identity"], a["bias"], a["x"]);
  };
  auto residual_forward = [site](Context& ctx, const Args& a) {
    run_op(ctx, ResidualLayerNormForward{.x = a["x"],
                                         .residual = a["residual"],
                                         .site = site(ctx),
                                         .gamma = a["gamma"],
                                         .beta = a["beta"],
                                         .eps = kEps,
                                         .sum = Out(a["sum"]),
                                         .y = Out(a["y"]),
                                         .mean = Out(a["mean"]),
                                         .rstd = Out(a["rstd"])});
  };
  auto backward = [site, linear_bias](Context& ctx, const Args& a) {
    run_op(ctx, ResidualLayerNormBackward{.dy = a["dy"],
                                          .sum = a["sum"],
                                          .gamma = a["gamma"],
                                          .mean = a["mean"],
                                          .rstd = a["rstd"],
                                          .site = site(ctx),
                                          .dx = Out(a["dx"]),
                                          .dresidual = Out(a["dresidual"]),
                                          .dgamma = Out(a["dgamma"]),
                                          .dbeta = Out(a["dbeta"]),
                                          .dbias = Out(linear_bias ? a["dbias"] : Tensor{}),
                                          .workspace = Out(a["workspace"])});
  };
  std::vector<TensorSpec> tensors = {
      input("residual", {n, h}), param("gamma", {h}, {.lo = 0.5, .hi = 1.5}), param("beta", {h}),
      // The same mask and one f32 add, rounded once to the activation dtype.
      output("sum", {n, h}).relative({1e-6, 1e-6}), output("y", {n, h}),
      output("mean", {n}, Kind::kParam).with_tol(kStatTol),
      output("rstd", {n}, Kind::kParam).with_tol(kStatTol), upstream("dy", "y", {n, h}),
      grad("dresidual", "residual", {n, h}), grad_acc("dgamma", "gamma", {h}),
      grad_acc("dbeta", "beta", {h}),
      workspace("workspace", layernorm_backward_workspace_floats(n, h))};
  if (linear_bias) {
    const Fill identity{.make = [h](size_t count, uint64_t) {
      std::vector<double> v(count, 0.0);
      for (int64_t i = 0; i < h; ++i) v[i * h + i] = 1.0;
      return v;
    }};
    for (TensorSpec t :
         {input("a", {n, h}, {.lo = -2, .hi = 3}), input("identity", {h, h}, identity),
          param("bias", {h}), output("x", {n, h}), output("dx", {n, h}).zeros_agree(),
          grad_acc("dbias", "bias", {h})}) {
      tensors.push_back(std::move(t));
    }
  } else {
    tensors.push_back(input("x", {n, h}, {.lo = -2, .hi = 3}));
    tensors.push_back(grad("dx", "x", {n, h}).zeros_agree());
  }
  return OpCase{
      .op = linear_bias ? "residual_layernorm_bias" : "residual_layernorm",
      .shape = shape,
      .tensors = std::move(tensors),
      .forward =
          [linear, residual_forward](Context& ctx, const Args& a) {
            linear(ctx, a);
            residual_forward(ctx, a);
          },
      .backward = backward,
      // The GPU stores x (the linear's output) and sum in the activation dtype and normalises
      // that rounded sum: so does the reference (the CPU ops keep them in f32).
      .reference =
          [linear, residual_forward, backward](Context& ctx, const Args& a) {
            linear(ctx, a);
            round_to_act(a["x"], a.act());
            residual_forward(ctx, a);
            round_to_act(a["sum"], a.act());
            layernorm_forward(ctx, a, a["sum"]);
            backward(ctx, a);
          },
      .modes = modes,
      .seed = 21,
      .max_checks = max_checks,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  const unsigned all = kGradcheck | kGpu;
  return {
      layernorm("15x7", 15, 7, all),
      layernorm("small_256x256", 256, 256, kGradcheck, 97),
      layernorm("small_1024x256", 8 * 128, 256, kGpu),
      layernorm("base_1024x768", 2 * 512, 768, kGpu),
      layernorm("large_512x1024", 512, 1024, kGpu),
      layernorm("33x100", 33, 100, kGpu),
      layernorm("9x1000", 9, 1000, kGpu),
      layernorm("1x256", 1, 256, kGpu),
      // 507 row blocks of 79 rows for dgamma / dbeta (kernels/column_sum.cuh: 8 chains of 63-64
      // partial rows; the GPU run is repeated on the same context, so a counter left nonzero
      // would fail the same-bits check). Base and Large run 7 and 5 warps a block.
      layernorm("40000x64", 40000, 64, kGpu),
      // 10 row blocks: chains of 2 and 1 partial rows.
      layernorm("300x256", 300, 256, kGpu),
      // 8 lanes a row with 5 holding columns; 2 row blocks, the second of 5 rows.
      layernorm("37x40", 37, 40, kGpu),
      layernorm("small_16384x256", 128 * 128, 256, kBench),
      layernorm("base_16384x768", 32 * 512, 768, kBench),
      layernorm("large_16384x1024", 32 * 512, 1024, kBench),
      // The embeddings' shape (E = 128: 16 lanes of 8 columns), an unaligned site offset, the
      // scalar path (H % 8 != 0) with 10 row blocks.
      layernorm_dropped("15x7", 15, 7, dropout_site_offset(6), 0.3f, all),
      layernorm_dropped("small_128x128", 128, 128, dropout_site_offset(1), 0.1f, kGradcheck, 97),
      layernorm_dropped("small_2048x128", 16 * 128, 128, dropout_site_offset(1), 0.1f, kGpu),
      layernorm_dropped("300x100_offset_unaligned", 300, 100, dropout_site_offset(2) + 3, 0.1f,
                        kGpu),
      layernorm_dropped("small_16384x128", 128 * 128, 128, dropout_site_offset(1), 0.1f, kBench),
      residual_layernorm("15x7", 15, 7, dropout_site_offset(6), 0.3f, all),
      residual_layernorm("small_256x256", 256, 256, dropout_site_offset(5), 0.1f, kGradcheck, 97),
      residual_layernorm("small_1024x256", 8 * 128, 256, dropout_site_offset(4), 0.1f, kGpu),
      residual_layernorm("base_1024x768", 2 * 512, 768, dropout_site_offset(5), 0.1f, kGpu),
      residual_layernorm("21x1000", 21, 1000, dropout_site_offset(7) + 1, 0.1f, kGpu),
      residual_layernorm("1x256", 1, 256, dropout_site_offset(1) + 2, 0.1f, kGpu),
      // 10 row blocks (chains of 2 and 1 partial rows), the scalar path (H % 8 != 0).
      residual_layernorm("300x100", 300, 100, dropout_site_offset(3), 0.1f, kGpu),
      residual_layernorm("small_16384x256", 128 * 128, 256, dropout_site_offset(2), 0.1f, kBench),
      // Rows narrower than a warp (kernels/layernorm.cu, lanes_per_row): the generator's H = 64
      // (8 lanes a row, 4 rows a warp), H = 40 (5 of a group's 8 lanes hold columns) and H = 120
      // (16 lanes, 15 hold columns), each with a last row block whose rows end inside a warp.
      residual_layernorm("generator_1000x64", 1000, 64, dropout_site_offset(3), 0.1f, kGpu),
      residual_layernorm("37x40", 37, 40, dropout_site_offset(2) + 1, 0.1f, kGpu),
      residual_layernorm("generator_16384x64", 128 * 128, 64, dropout_site_offset(2), 0.1f, kBench),
      // With the linear's bias gradient (3 parts a partial row: 8, 5 and 3 warps a block at H =
      // 256, 768 and 1000; 10 row blocks and the scalar path at 300x100).
      residual_layernorm("15x7", 15, 7, dropout_site_offset(6), 0.3f, all, 0, true),
      residual_layernorm("small_256x256", 256, 256, dropout_site_offset(5), 0.1f, kGradcheck, 97,
                         true),
      residual_layernorm("small_1024x256", 8 * 128, 256, dropout_site_offset(4), 0.1f, kGpu, 0,
                         true),
      residual_layernorm("base_1024x768", 2 * 512, 768, dropout_site_offset(5), 0.1f, kGpu, 0,
                         true),
      residual_layernorm("21x1000", 21, 1000, dropout_site_offset(7) + 1, 0.1f, kGpu, 0, true),
      residual_layernorm("300x100", 300, 100, dropout_site_offset(3), 0.1f, kGpu, 0, true),
      residual_layernorm("generator_1000x64", 1000, 64, dropout_site_offset(3), 0.1f, kGpu, 0,
                         true),
      residual_layernorm("37x120", 37, 120, dropout_site_offset(4), 0.1f, kGpu, 0, true),
  };
}

}  // namespace electra::test
