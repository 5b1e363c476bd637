// bias + GELU on the GPU against the CPU reference on fresh random inputs, outputs poisoned: f32
// (normwise error < 1e-5) and bf16 activations (< 2e-2), at ELECTRA-Small and Base FFN shapes and
// awkward widths; db accumulates and is bit-identical across runs.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "kernels/gelu.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_bias_gelu(int64_t n, int64_t h, DType dtype) {
  INFO("N " << n << ", H " << h << ", " << dtype_name(dtype));
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("gelu", Device::CUDA, static_cast<size_t>(n * h) * 32 + (16 << 20));
  std::vector<float> x = test::as_dtype(test::random_vector<float>(n * h, n + h, -4, 4), dtype);
  std::vector<float> b = test::random_vector<float>(h, h, -1, 1);
  std::vector<float> dy = test::as_dtype(test::random_vector<float>(n * h, n * h, -1, 1), dtype);
  std::vector<float> db0 = test::random_vector<float>(h, 3, -1, 1);
  std::vector<float> u(n * h);
  for (int64_t i = 0; i < n * h; ++i) u[i] = x[i] + b[i % h];
  u = test::as_dtype(u, dtype);

  std::vector<float> y(n * h), dx(n * h), db = db0, dx_u(n * h), db_u = db0;
  run_op(cpu,
         BiasGeluForward{
             .x = test::view(x, {n, h}), .b = test::view(b, {h}), .y = Out(test::view(y, {n, h}))});
  run_op(cpu, BiasGeluBackward{.dy = test::view(dy, {n, h}),
                               .x = test::view(x, {n, h}),
                               .b = test::view(b, {h}),
                               .dx = Out(test::view(dx, {n, h})),
                               .db = Out(test::view(db, {h})),
                               .workspace = Out(Tensor{})});
  run_op(cpu, BiasGeluBackwardPreact{.dy = test::view(dy, {n, h}),
                                     .u = test::view(u, {n, h}),
                                     .dx = Out(test::view(dx_u, {n, h})),
                                     .db = Out(test::view(db_u, {h})),
                                     .workspace = Out(Tensor{})});

  const Tensor gx = test::upload_as(gpu, arena, x, dtype, {n, h});
  const Tensor gu = test::upload_as(gpu, arena, u, dtype, {n, h});
  const Tensor gdy = test::upload_as(gpu, arena, dy, dtype, {n, h});
  const Tensor gb = test::upload(gpu, arena, b, {h});
  const Tensor gy = arena.alloc(dtype, {n, h});
  const Tensor gdx = arena.alloc(dtype, {n, h});
  const Tensor ws = arena.alloc<float>({bias_gelu_backward_workspace_floats(n, h)});
  poison_tensor(gpu.stream(), gy);
  poison_tensor(gpu.stream(), gdx);
  poison_tensor(gpu.stream(), ws);
  const Tensor gdb = test::upload(gpu, arena, db0, {h});
  run_op(gpu, BiasGeluForward{.x = gx, .b = gb, .y = Out(gy)});
  run_op(gpu,
         BiasGeluBackward{
             .dy = gdy, .x = gx, .b = gb, .dx = Out(gdx), .db = Out(gdb), .workspace = Out(ws)});
  CHECK(test::normwise_error(test::download_f32(gpu, gy), y) < tol);
  CHECK(test::normwise_error(test::download_f32(gpu, gdx), dx) < tol);
  const std::vector<float> got_db = test::download<float>(gpu, gdb);
  CHECK(test::normwise_error(got_db, db) < tol);

  // Again from the same db0: the same bits (deterministic reduction).
  const Tensor gdb2 = test::upload(gpu, arena, db0, {h});
  run_op(gpu,
         BiasGeluBackward{
             .dy = gdy, .x = gx, .b = gb, .dx = Out(gdx), .db = Out(gdb2), .workspace = Out(ws)});
  CHECK(std::memcmp(test::download<float>(gpu, gdb2).data(), got_db.data(), h * 4) == 0);

  const Tensor gdb_u = test::upload(gpu, arena, db0, {h});
  poison_tensor(gpu.stream(), gdx);
  run_op(gpu, BiasGeluBackwardPreact{
                  .dy = gdy, .u = gu, .dx = Out(gdx), .db = Out(gdb_u), .workspace = Out(ws)});
  CHECK(test::normwise_error(test::download_f32(gpu, gdx), dx_u) < tol);
  CHECK(test::normwise_error(test::download<float>(gpu, gdb_u), db_u) < tol);
}

}  // namespace

TEST_CASE("bias + GELU on the GPU matches the CPU reference", "[gelu][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    check_bias_gelu(8 * 128, 1024, dtype);  // ELECTRA-Small FFN
    check_bias_gelu(2 * 512, 3072, dtype);  // Base FFN
    check_bias_gelu(37, 7, dtype);
    check_bias_gelu(300, 100, dtype);
    check_bias_gelu(65, 1000, dtype);
    check_bias_gelu(1, 256, dtype);
    check_bias_gelu(40000, 64, dtype);  // 507 row blocks of 79 rows for db
  }
}
