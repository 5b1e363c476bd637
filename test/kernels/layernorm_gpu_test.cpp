// layernorm and the fused residual layernorm on the GPU against the CPU reference on fresh random
// inputs, outputs poisoned: f32 (normwise error < 1e-5) and bf16 activations (< 2e-2) at
// ELECTRA-Small, Base and Large widths and awkward shapes; dgamma/dbeta accumulate and are
// bit-identical across runs; the fused dropout mask equals the CPU's.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "kernels/layernorm.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Inputs {
  std::vector<float> x, residual, gamma, beta, dy, dgamma0, dbeta0;
};

Inputs make_inputs(int64_t n, int64_t h, DType dtype) {
  Inputs in;
  in.x = test::as_dtype(test::random_vector<float>(n * h, n + h, -2, 3), dtype);
  in.residual = test::as_dtype(test::random_vector<float>(n * h, n * h + 1, -1, 1), dtype);
  in.gamma = test::random_vector<float>(h, h + 2, 0.5, 1.5);
  in.beta = test::random_vector<float>(h, h + 3, -1, 1);
  in.dy = test::as_dtype(test::random_vector<float>(n * h, n + 4, -1, 1), dtype);
  in.dgamma0 = test::random_vector<float>(h, 5, -1, 1);
  in.dbeta0 = test::random_vector<float>(h, 6, -1, 1);
  return in;
}

void check_layernorm(int64_t n, int64_t h, DType dtype) {
  INFO("layernorm N " << n << ", H " << h << ", " << dtype_name(dtype));
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("layernorm", Device::CUDA, static_cast<size_t>(n * h) * 24 + (16 << 20));
  Inputs in = make_inputs(n, h, dtype);
  std::vector<float> y(n * h), mean(n), rstd(n), dx(n * h), dgamma = in.dgamma0, dbeta = in.dbeta0;
  run_op(cpu, LayerNormForward{.x = test::view(in.x, {n, h}),
                               .gamma = test::view(in.gamma, {h}),
                               .beta = test::view(in.beta, {h}),
                               .eps = 1e-12f,
                               .y = Out(test::view(y, {n, h})),
                               .mean = Out(test::view(mean, {n})),
                               .rstd = Out(test::view(rstd, {n}))});
  run_op(cpu, LayerNormBackward{.dy = test::view(in.dy, {n, h}),
                                .x = test::view(in.x, {n, h}),
                                .gamma = test::view(in.gamma, {h}),
                                .mean = test::view(mean, {n}),
                                .rstd = test::view(rstd, {n}),
                                .dx = Out(test::view(dx, {n, h})),
                                .dgamma = Out(test::view(dgamma, {h})),
                                .dbeta = Out(test::view(dbeta, {h})),
                                .workspace = Out(Tensor{})});

  const Tensor gx = test::upload_as(gpu, arena, in.x, dtype, {n, h});
  const Tensor gdy = test::upload_as(gpu, arena, in.dy, dtype, {n, h});
  const Tensor ggamma = test::upload(gpu, arena, in.gamma, {h});
  const Tensor gbeta = test::upload(gpu, arena, in.beta, {h});
  const Tensor gy = arena.alloc(dtype, {n, h});
  const Tensor gdx = arena.alloc(dtype, {n, h});
  const Tensor gmean = arena.alloc<float>({n});
  const Tensor grstd = arena.alloc<float>({n});
  const Tensor ws = arena.alloc<float>({layernorm_backward_workspace_floats(n, h)});
  for (const Tensor* t : {&gy, &gdx, &gmean, &grstd, &ws}) poison_tensor(gpu.stream(), *t);
  const Tensor gdgamma = test::upload(gpu, arena, in.dgamma0, {h});
  const Tensor gdbeta = test::upload(gpu, arena, in.dbeta0, {h});
  run_op(gpu, LayerNormForward{.x = gx,
                               .gamma = ggamma,
                               .beta = gbeta,
                               .eps = 1e-12f,
                               .y = Out(gy),
                               .mean = Out(gmean),
                               .rstd = Out(grstd)});
  run_op(gpu, LayerNormBackward{.dy = gdy,
                                .x = gx,
                                .gamma = ggamma,
                                .mean = gmean,
                                .rstd = grstd,
                                .dx = Out(gdx),
                                .dgamma = Out(gdgamma),
                                .dbeta = Out(gdbeta),
                                .workspace = Out(ws)});
  CHECK(test::normwise_error(test::download_f32(gpu, gy), y) < tol);
  CHECK(test::normwise_error(test::download<float>(gpu, gmean), mean) < 1e-5);
  CHECK(test::normwise_error(test::download<float>(gpu, grstd), rstd) < 1e-5);
  CHECK(test::normwise_error(test::download_f32(gpu, gdx), dx) < tol);
  const std::vector<float> got_dgamma = test::download<float>(gpu, gdgamma);
  const std::vector<float> got_dbeta = test::download<float>(gpu, gdbeta);
  CHECK(test::normwise_error(got_dgamma, dgamma) < tol);
  CHECK(test::normwise_error(got_dbeta, dbeta) < tol);

  // A second run from the same starting gradients gives the same bits.
  const Tensor gdgamma2 = test::upload(gpu, arena, in.dgamma0, {h});
  const Tensor gdbeta2 = test::upload(gpu, arena, in.dbeta0, {h});
  run_op(gpu, LayerNormBackward{.dy = gdy,
                                .x = gx,
                                .gamma = ggamma,
                                .mean = gmean,
                                .rstd = grstd,
                                .dx = Out(gdx),
                                .dgamma = Out(gdgamma2),
                                .dbeta = Out(gdbeta2),
                                .workspace = Out(ws)});
  CHECK(std::memcmp(test::download<float>(gpu, gdgamma2).data(), got_dgamma.data(), h * 4) == 0);
  CHECK(std::memcmp(test::download<float>(gpu, gdbeta2).data(), got_dbeta.data(), h * 4) == 0);
}

void check_residual_layernorm(int64_t n, int64_t h, uint64_t offset, DType dtype) {
  INFO("residual layernorm N " << n << ", H " << h << ", offset " << offset << ", "
                               << dtype_name(dtype));
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  Context gpu = Context::cuda(0, 21);
  Context cpu = Context::cpu(21);
  Arena arena("layernorm", Device::CUDA, static_cast<size_t>(n * h) * 40 + (16 << 20));
  const DropoutSite site{gpu.rng(RngPurpose::kDropout, 8), offset, 0.1f};
  Inputs in = make_inputs(n, h, dtype);
  // The reference: sum = dropout(x) + residual in f32, rounded to the activation dtype (what the
  // GPU stores and normalises), then the plain layernorm and its backward.
  std::vector<float> sum(n * h), y(n * h), mean(n), rstd(n), y_fused(n * h), m2(n), r2(n);
  run_op(cpu, ResidualLayerNormForward{.x = test::view(in.x, {n, h}),
                                       .residual = test::view(in.residual, {n, h}),
                                       .site = site,
                                       .gamma = test::view(in.gamma, {h}),
                                       .beta = test::view(in.beta, {h}),
                                       .eps = 1e-12f,
                                       .sum = Out(test::view(sum, {n, h})),
                                       .y = Out(test::view(y_fused, {n, h})),
                                       .mean = Out(test::view(m2, {n})),
                                       .rstd = Out(test::view(r2, {n}))});
  sum = test::as_dtype(sum, dtype);
  run_op(cpu, LayerNormForward{.x = test::view(sum, {n, h}),
                               .gamma = test::view(in.gamma, {h}),
                               .beta = test::view(in.beta, {h}),
                               .eps = 1e-12f,
                               .y = Out(test::view(y, {n, h})),
                               .mean = Out(test::view(mean, {n})),
                               .rstd = Out(test::view(rstd, {n}))});
  std::vector<float> dx(n * h), dres(n * h), dgamma = in.dgamma0, dbeta = in.dbeta0;
  run_op(cpu, ResidualLayerNormBackward{.dy = test::view(in.dy, {n, h}),
                                        .sum = test::view(sum, {n, h}),
                                        .gamma = test::view(in.gamma, {h}),
                                        .mean = test::view(mean, {n}),
                                        .rstd = test::view(rstd, {n}),
                                        .site = site,
                                        .dx = Out(test::view(dx, {n, h})),
                                        .dresidual = Out(test::view(dres, {n, h})),
                                        .dgamma = Out(test::view(dgamma, {h})),
                                        .dbeta = Out(test::view(dbeta, {h})),
                                        .workspace = Out(Tensor{})});

  const Tensor gx = test::upload_as(gpu, arena, in.x, dtype, {n, h});
  const Tensor gres = test::upload_as(gpu, arena, in.residual, dtype, {n, h});
  const Tensor gdy = test::upload_as(gpu, arena, in.dy, dtype, {n, h});
  const Tensor ggamma = test::upload(gpu, arena, in.gamma, {h});
  const Tensor gbeta = test::upload(gpu, arena, in.beta, {h});
  const Tensor gsum = arena.alloc(dtype, {n, h});
  const Tensor gy = arena.alloc(dtype, {n, h});
  const Tensor gdx = arena.alloc(dtype, {n, h});
  const Tensor gdres = arena.alloc(dtype, {n, h});
  const Tensor gmean = arena.alloc<float>({n});
  const Tensor grstd = arena.alloc<float>({n});
  const Tensor ws = arena.alloc<float>({layernorm_backward_workspace_floats(n, h)});
  for (const Tensor* t : {&gsum, &gy, &gdx, &gdres, &gmean, &grstd, &ws}) {
    poison_tensor(gpu.stream(), *t);
  }
  const Tensor gdgamma = test::upload(gpu, arena, in.dgamma0, {h});
  const Tensor gdbeta = test::upload(gpu, arena, in.dbeta0, {h});
  run_op(gpu, ResidualLayerNormForward{.x = gx,
                                       .residual = gres,
                                       .site = site,
                                       .gamma = ggamma,
                                       .beta = gbeta,
                                       .eps = 1e-12f,
                                       .sum = Out(gsum),
                                       .y = Out(gy),
                                       .mean = Out(gmean),
                                       .rstd = Out(grstd)});
  run_op(gpu, ResidualLayerNormBackward{.dy = gdy,
                                        .sum = gsum,
                                        .gamma = ggamma,
                                        .mean = gmean,
                                        .rstd = grstd,
                                        .site = site,
                                        .dx = Out(gdx),
                                        .dresidual = Out(gdres),
                                        .dgamma = Out(gdgamma),
                                        .dbeta = Out(gdbeta),
                                        .workspace = Out(ws)});
  const std::vector<float> got_sum = test::download_f32(gpu, gsum);
  CHECK(test::max_relative_error(got_sum, sum) < 1e-6);  // same mask, one f32 add, same rounding
  CHECK(test::normwise_error(test::download_f32(gpu, gy), y) < tol);
  CHECK(test::normwise_error(test::download<float>(gpu, gmean), mean) < 1e-5);
  CHECK(test::normwise_error(test::download<float>(gpu, grstd), rstd) < 1e-5);
  CHECK(test::normwise_error(test::download_f32(gpu, gdres), dres) < tol);
  const std::vector<float> got_dx = test::download_f32(gpu, gdx);
  CHECK(test::normwise_error(got_dx, dx) < tol);
  int64_t mask_mismatch = 0;
  for (int64_t i = 0; i < n * h; ++i) mask_mismatch += (got_dx[i] == 0.0f) != (dx[i] == 0.0f);
  CHECK(mask_mismatch == 0);
  CHECK(test::normwise_error(test::download<float>(gpu, gdgamma), dgamma) < tol);
  CHECK(test::normwise_error(test::download<float>(gpu, gdbeta), dbeta) < tol);
}

}  // namespace

TEST_CASE("layernorm on the GPU matches the CPU reference", "[layernorm][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    check_layernorm(8 * 128, 256, dtype);  // ELECTRA-Small
    check_layernorm(2 * 512, 768, dtype);  // Base
    check_layernorm(512, 1024, dtype);     // Large
    check_layernorm(15, 7, dtype);
    check_layernorm(33, 100, dtype);
    check_layernorm(9, 1000, dtype);
    check_layernorm(1, 256, dtype);
    check_layernorm(40000, 64, dtype);  // 507 row blocks of 79 rows for dgamma / dbeta
  }
}

TEST_CASE("residual layernorm with dropout on the GPU matches the CPU reference",
          "[layernorm][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    check_residual_layernorm(8 * 128, 256, dropout_site_offset(4), dtype);
    check_residual_layernorm(2 * 512, 768, dropout_site_offset(5), dtype);
    check_residual_layernorm(15, 7, dropout_site_offset(6), dtype);
    check_residual_layernorm(21, 1000, dropout_site_offset(7) + 1, dtype);
    check_residual_layernorm(1, 256, dropout_site_offset(1) + 2, dtype);
  }
}
