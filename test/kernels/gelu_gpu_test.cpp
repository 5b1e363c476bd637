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

// max_i |a_i - b_i| / max_i |b_i|: the normwise error. The tests use it because these outputs are
// sums whose terms cancel (row and column reductions, GELU's zero crossing, x - mean), where an
// elementwise relative error in f32 measures the conditioning of the entry, not the kernel.
double normwise_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return std::isnan(err) ? INFINITY : err / scale;
}

Tensor cpu_view(std::vector<float>& v, std::initializer_list<int64_t> dims) {
  return Tensor::view_of(v.data(), Device::CPU, dims);
}

Tensor upload_as(Context& ctx, Arena& arena, const std::vector<float>& v, DType dtype,
                 std::initializer_list<int64_t> dims) {
  return dtype == DType::F32 ? test::upload(ctx, arena, v, dims)
                             : test::upload_bf16(ctx, arena, v, dims);
}

// Values as the GPU sees them: rounded to bf16 when the activations are bf16.
std::vector<float> as_dtype(std::vector<float> v, DType dtype) {
  if (dtype == DType::BF16) {
    for (float& x : v) x = bf16_to_float(float_to_bf16(x));
  }
  return v;
}

void check_bias_gelu(int64_t n, int64_t h, DType dtype) {
  INFO("N " << n << ", H " << h << ", " << dtype_name(dtype));
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("gelu", Device::CUDA, static_cast<size_t>(n * h) * 32 + (16 << 20));
  std::vector<float> x = as_dtype(test::random_vector<float>(n * h, n + h, -4, 4), dtype);
  std::vector<float> b = test::random_vector<float>(h, h, -1, 1);
  std::vector<float> dy = as_dtype(test::random_vector<float>(n * h, n * h, -1, 1), dtype);
  std::vector<float> db0 = test::random_vector<float>(h, 3, -1, 1);
  std::vector<float> u(n * h);
  for (int64_t i = 0; i < n * h; ++i) u[i] = x[i] + b[i % h];
  u = as_dtype(u, dtype);

  std::vector<float> y(n * h), dx(n * h), db = db0, dx_u(n * h), db_u = db0;
  bias_gelu_forward(cpu, cpu_view(x, {n, h}), cpu_view(b, {h}), cpu_view(y, {n, h}));
  bias_gelu_backward(cpu, cpu_view(dy, {n, h}), cpu_view(x, {n, h}), cpu_view(b, {h}),
                     cpu_view(dx, {n, h}), cpu_view(db, {h}), Tensor{});
  bias_gelu_backward_preact(cpu, cpu_view(dy, {n, h}), cpu_view(u, {n, h}), cpu_view(dx_u, {n, h}),
                            cpu_view(db_u, {h}), Tensor{});

  const Tensor gx = upload_as(gpu, arena, x, dtype, {n, h});
  const Tensor gu = upload_as(gpu, arena, u, dtype, {n, h});
  const Tensor gdy = upload_as(gpu, arena, dy, dtype, {n, h});
  const Tensor gb = test::upload(gpu, arena, b, {h});
  const Tensor gy = arena.alloc(dtype, {n, h});
  const Tensor gdx = arena.alloc(dtype, {n, h});
  const Tensor ws = arena.alloc<float>({bias_gelu_backward_workspace_floats(n, h)});
  poison_tensor(gpu.stream(), gy);
  poison_tensor(gpu.stream(), gdx);
  poison_tensor(gpu.stream(), ws);
  const Tensor gdb = test::upload(gpu, arena, db0, {h});
  bias_gelu_forward(gpu, gx, gb, gy);
  bias_gelu_backward(gpu, gdy, gx, gb, gdx, gdb, ws);
  CHECK(normwise_error(test::download_f32(gpu, gy), y) < tol);
  CHECK(normwise_error(test::download_f32(gpu, gdx), dx) < tol);
  const std::vector<float> got_db = test::download<float>(gpu, gdb);
  CHECK(normwise_error(got_db, db) < tol);

  // Again from the same db0: the same bits (deterministic reduction).
  const Tensor gdb2 = test::upload(gpu, arena, db0, {h});
  bias_gelu_backward(gpu, gdy, gx, gb, gdx, gdb2, ws);
  CHECK(std::memcmp(test::download<float>(gpu, gdb2).data(), got_db.data(), h * 4) == 0);

  const Tensor gdb_u = test::upload(gpu, arena, db0, {h});
  poison_tensor(gpu.stream(), gdx);
  bias_gelu_backward_preact(gpu, gdy, gu, gdx, gdb_u, ws);
  CHECK(normwise_error(test::download_f32(gpu, gdx), dx_u) < tol);
  CHECK(normwise_error(test::download<float>(gpu, gdb_u), db_u) < tol);
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
  }
}
