// dropout (kernels/dropout.h) for the op harness (test/common/op_case.h). The backward is the
// same op applied to dy with the forward's site, so the gradient check sees the mask the finite
// differences see; on the GPU the mask and the outputs equal the CPU's bit for bit (bf16: the
// CPU's f32 result rounded once), on the vector and the scalar paths, at 4-aligned and unaligned
// site offsets. Keep fraction, site separation, the mask's bits and refusals: dropout_test.cpp.
#include "kernels/dropout.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

OpCase dropout(const std::string& shape, int64_t n, uint64_t offset, float p, unsigned modes,
               size_t max_checks = 0) {
  auto site = [offset, p](const Context& ctx) {
    return DropoutSite{ctx.rng(RngPurpose::kDropout, 12), offset, p};
  };
  return OpCase{
      .op = "dropout",
      .shape = shape,
      .tensors = {input("x", {n}, {.lo = -3, .hi = 3, .away_from_zero = true}),
                  output("y", {n}).bits().zeros_agree(), upstream("dy", "y", {n}),
                  grad("dx", "x", {n}).bits().zeros_agree()},
      .forward =
          [site](Context& ctx, const Args& a) {
            run_op(ctx, Dropout{.x = a["x"], .site = site(ctx), .y = Out(a["y"])});
          },
      .backward =
          [site](Context& ctx, const Args& a) {
            run_op(ctx, Dropout{.x = a["dy"], .site = site(ctx), .y = Out(a["dx"])});
          },
      .modes = modes,
      .seed = 77,
      .max_checks = max_checks,
  };
}

}  // namespace

std::vector<OpCase> op_cases() {
  const unsigned all = kGradcheck | kGpu;
  return {
      dropout("105", 105, dropout_site_offset(2), 0.3f, all),
      dropout("small_2x128x256", 2 * 128 * 256, dropout_site_offset(2), 0.1f, kGradcheck, 211),
      dropout("small_8x128x256", 8 * 128 * 256, dropout_site_offset(3), 0.1f, kGpu),
      dropout("base_2x512x768", 2 * 512 * 768, dropout_site_offset(9), 0.1f, kGpu),
      dropout("1000_offset_unaligned", 1000, dropout_site_offset(1) + 2, 0.5f, kGpu),
      dropout("7_scalar", 7, 0, 0.3f, kGpu),
      dropout("100003_scalar_tail", 100 * 1000 + 3, dropout_site_offset(4), 0.25f, kGpu),
      dropout("4096_p0_identity", 4096, dropout_site_offset(2), 0.0f, kGpu),
      dropout("small_128x128x256", 128 * 128 * 256, dropout_site_offset(2), 0.1f, kBench),
      dropout("base_32x512x768", 32 * 512 * 768, dropout_site_offset(2), 0.1f, kBench),
      dropout("large_32x512x1024", 32 * 512 * 1024, dropout_site_offset(2), 0.1f, kBench),
  };
}

}  // namespace electra::test
