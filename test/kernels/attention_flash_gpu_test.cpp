// The flash attention kernels (kernels/attention_flash.cu, attention_flash_bf16.cu) are
// deterministic: a forward and a backward run twice on the same inputs give the same bits of out,
// L and dqkv (no atomics; every reduction has a fixed order). Every output is poisoned (NaN)
// before each run, so an element that one run leaves unwritten fails the comparison. f32 and
// bf16, dropout 0.1 and 0, the tile widths 32, 64 and 128 with partial tiles, a head dim whose
// tiles are loaded element by element (d = 20), and a sequence that is all padding. The values
// themselves are checked against the CPU reference by attention_gpu_test.
#include <catch2/catch.hpp>

#include "engine/arena.h"
#include "kernels/attention.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Case {
  const char* name;
  int64_t b, t, h, heads;
  bool empty_sequence = false;  // the last sequence is all padding
};

// out, L and dqkv of one flash forward + backward, as f32 (exact for bf16).
struct Run {
  std::vector<float> out, lse, dqkv;
};

void check_twice(const Case& c, DType dtype, float p) {
  INFO(c.name << " " << dtype_name(dtype) << " p = " << p);
  Context gpu = Context::cuda(0);
  const int64_t b = c.b, t = c.t, h = c.h;
  AttentionArgs args{c.heads, p, RngStream{77, RngPurpose::kDropout, 5, 0}, 3,
                     AttentionImpl::kFlash};
  const AttentionState state = attention_state(Device::CUDA, args, b, t, h, dtype);
  REQUIRE(state.flash);
  std::vector<int32_t> mask(b * t, 1);
  for (int64_t bi = 1; bi < b; ++bi) {
    for (int64_t j = t - 1 - (bi * 13) % (t / 2); j < t; ++j) mask[bi * t + j] = 0;
  }
  if (c.empty_sequence) std::fill(mask.end() - t, mask.end(), 0);

  Arena arena("attention_flash", Device::CUDA, size_t{64} << 20);
  const Tensor qkv = test::upload_as(gpu, arena, test::random_vector<float>(b * t * 3 * h, 91),
                                     dtype, {b, t, 3 * h});
  const Tensor dout =
      test::upload_as(gpu, arena, test::random_vector<float>(b * t * h, 93), dtype, {b, t, h});
  const Tensor gmask = test::upload(gpu, arena, mask, {b, t});
  const Tensor saved = state.view(arena.alloc(state.dtype, {state.numel()}));
  const Tensor scratch = state.view(arena.alloc(state.dtype, {state.numel()}));
  const Tensor out = arena.alloc(dtype, {b, t, h});
  const Tensor dqkv = arena.alloc(dtype, {b, t, 3 * h});
  const auto run = [&] {
    for (const Tensor* x : {&saved, &scratch, &out, &dqkv}) poison_tensor(gpu.stream(), *x);
    run_op(gpu, AttentionForward{.qkv = qkv,
                                 .mask = gmask,
                                 .args = args,
                                 .saved = Out(saved),
                                 .scratch = Out(scratch),
                                 .out = Out(out)});
    run_op(gpu, AttentionBackward{.qkv = qkv,
                                  .mask = gmask,
                                  .args = args,
                                  .saved = saved,
                                  .dout = dout,
                                  .scratch = Out(scratch),
                                  .dqkv = Out(dqkv),
                                  .out = out});
    return Run{test::download_f32(gpu, out), test::download_f32(gpu, saved),
               test::download_f32(gpu, dqkv)};
  };
  const Run first = run(), second = run();
  // NaN != NaN: a poisoned element left unwritten fails here too.
  CHECK(first.out == second.out);
  CHECK(first.lse == second.lse);
  CHECK(first.dqkv == second.dqkv);
}

void check_all(const Case& c) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (float p : {0.1f, 0.0f}) check_twice(c, dtype, p);
  }
}

}  // namespace

TEST_CASE("flash attention twice gives the same bits: ELECTRA-Small shape", "[attention][gpu]") {
  check_all({"small", 4, 128, 256, 4});
}

TEST_CASE("flash attention twice gives the same bits: partial tiles, d = 32, 64, 128",
          "[attention][gpu]") {
  check_all({"d32 t37", 3, 37, 64, 2});
  check_all({"d64 t77", 3, 77, 128, 2});
  check_all({"d128 t129", 2, 129, 256, 2});
}

TEST_CASE("flash attention twice gives the same bits: element-wise tile loads (d = 20)",
          "[attention][gpu]") {
  check_all({"d20", 2, 65, 40, 2});
}

TEST_CASE("flash attention twice gives the same bits: a sequence of padding only",
          "[attention][gpu]") {
  check_all({"empty", 3, 70, 128, 2, true});
}
