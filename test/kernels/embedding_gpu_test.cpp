// embedding on the GPU against the CPU reference on fresh random ids and tables, outputs
// poisoned: the forward is bit-identical in f32 (and equals the f32 sum rounded once in bf16);
// the backward matches (normwise error < 1e-5 with f32 dout, < 2e-2 with bf16), accumulates, and
// gives the same bits when run twice, with many repeated ids (one id covering most tokens). Bad
// ids give NaN rows and are skipped by the backward.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "kernels/embedding.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_embedding(int64_t batch, int64_t len, int64_t e, int64_t vocab, DType dtype) {
  INFO("B " << batch << ", T " << len << ", E " << e << ", V " << vocab << ", "
            << dtype_name(dtype));
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  const int64_t positions = 512, segments = 2, tokens = batch * len;
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("embedding", Device::CUDA,
              static_cast<size_t>((vocab + positions + segments) * e) * 16 +
                  static_cast<size_t>(tokens * e) * 8 +
                  embedding_backward_workspace_bytes(batch, len, segments, e) + (16 << 20));
  std::vector<int32_t> ids =
      test::random_ints(tokens, tokens + 1, 0, static_cast<int32_t>(vocab - 1));
  for (int64_t i = 0; i < tokens; i += 3) ids[i] = 0;  // one long run (a padding id)
  std::vector<int32_t> sids = test::random_ints(tokens, tokens + 2, 0, 1);
  std::vector<float> word = test::random_vector<float>(vocab * e, 1);
  std::vector<float> position = test::random_vector<float>(positions * e, 2);
  std::vector<float> segment = test::random_vector<float>(segments * e, 3);
  std::vector<float> dout = test::as_dtype(test::random_vector<float>(tokens * e, 4), dtype);
  std::vector<float> dword0 = test::random_vector<float>(vocab * e, 5);
  std::vector<float> dpos0 = test::random_vector<float>(positions * e, 6);
  std::vector<float> dseg0 = test::random_vector<float>(segments * e, 7);

  std::vector<float> out(tokens * e), dword = dword0, dpos = dpos0, dseg = dseg0;
  const Tensor cid = test::view(ids, {batch, len});
  const Tensor csid = test::view(sids, {batch, len});
  run_op(cpu, EmbeddingForward{.ids = cid,
                               .segment_ids = csid,
                               .word = test::view(word, {vocab, e}),
                               .position = test::view(position, {positions, e}),
                               .segment = test::view(segment, {segments, e}),
                               .out = Out(test::view(out, {batch, len, e}))});
  run_op(cpu, EmbeddingBackward{.dout = test::view(dout, {batch, len, e}),
                                .ids = cid,
                                .segment_ids = csid,
                                .dword = Out(test::view(dword, {vocab, e})),
                                .dposition = Out(test::view(dpos, {positions, e})),
                                .dsegment = Out(test::view(dseg, {segments, e})),
                                .workspace = Out(Tensor{})});

  const Tensor gid = test::upload(gpu, arena, ids, {batch, len});
  const Tensor gsid = test::upload(gpu, arena, sids, {batch, len});
  const Tensor gword = test::upload(gpu, arena, word, {vocab, e});
  const Tensor gpos = test::upload(gpu, arena, position, {positions, e});
  const Tensor gseg = test::upload(gpu, arena, segment, {segments, e});
  const Tensor gout = arena.alloc(dtype, {batch, len, e});
  poison_tensor(gpu.stream(), gout);
  run_op(gpu, EmbeddingForward{.ids = gid,
                               .segment_ids = gsid,
                               .word = gword,
                               .position = gpos,
                               .segment = gseg,
                               .out = Out(gout)});
  const std::vector<float> got = test::download_f32(gpu, gout);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < tokens * e; ++i) {
    const float want = dtype == DType::F32 ? out[i] : bf16_to_float(float_to_bf16(out[i]));
    mismatches += std::memcmp(&got[i], &want, 4) != 0;
  }
  CHECK(mismatches == 0);

  const Tensor gdout = test::upload_as(gpu, arena, dout, dtype, {batch, len, e});
  const Tensor ws = arena.alloc(
      DType::F32,
      {static_cast<int64_t>(embedding_backward_workspace_bytes(batch, len, segments, e) / 4)});
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    poison_tensor(gpu.stream(), ws);
    const Tensor gdword = test::upload(gpu, arena, dword0, {vocab, e});
    const Tensor gdpos = test::upload(gpu, arena, dpos0, {positions, e});
    const Tensor gdseg = test::upload(gpu, arena, dseg0, {segments, e});
    run_op(gpu, EmbeddingBackward{.dout = gdout,
                                  .ids = gid,
                                  .segment_ids = gsid,
                                  .dword = Out(gdword),
                                  .dposition = Out(gdpos),
                                  .dsegment = Out(gdseg),
                                  .workspace = Out(ws)});
    const std::vector<float> got_dword = test::download<float>(gpu, gdword);
    CHECK(test::normwise_error(got_dword, dword) < tol);
    CHECK(test::normwise_error(test::download<float>(gpu, gdpos), dpos) < tol);
    CHECK(test::normwise_error(test::download<float>(gpu, gdseg), dseg) < tol);
    runs.push_back(got_dword);
  }
  CHECK(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * 4) == 0);
}

}  // namespace

TEST_CASE("embedding on the GPU matches the CPU reference and is deterministic",
          "[embedding][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    check_embedding(8, 128, 128, 30522, dtype);  // ELECTRA-Small (E = 128)
    check_embedding(2, 512, 768, 30522, dtype);  // Base
    check_embedding(32, 128, 256, 50, dtype);    // 4096 tokens over 50 ids: long runs
    check_embedding(4, 128, 64, 1, dtype);       // one id: a run across every 64-key segment
    check_embedding(3, 5, 7, 11, dtype);
    check_embedding(1, 100, 100, 1000, dtype);
    check_embedding(1, 1, 1000, 3, dtype);
  }
}

TEST_CASE("embedding on the GPU writes NaN rows for bad ids and skips them in the backward",
          "[embedding][gpu]") {
  Context gpu = Context::cuda(0);
  Arena arena("embedding", Device::CUDA, 16 << 20);
  const int64_t e = 8;
  std::vector<int32_t> ids = {1, 7, -2, 1}, sids = {0, 0, 1, 2};
  std::vector<float> word = test::random_vector<float>(5 * e, 1);
  std::vector<float> position = test::random_vector<float>(4 * e, 2);
  std::vector<float> segment = test::random_vector<float>(2 * e, 3);
  const Tensor gid = test::upload(gpu, arena, ids, {1, 4});
  const Tensor gsid = test::upload(gpu, arena, sids, {1, 4});
  const Tensor gout = arena.alloc<float>({1, 4, e});
  run_op(gpu, EmbeddingForward{.ids = gid,
                               .segment_ids = gsid,
                               .word = test::upload(gpu, arena, word, {5, e}),
                               .position = test::upload(gpu, arena, position, {4, e}),
                               .segment = test::upload(gpu, arena, segment, {2, e}),
                               .out = Out(gout)});
  const std::vector<float> out = test::download<float>(gpu, gout);
  for (int64_t j = 0; j < e; ++j) {
    CHECK(out[j] == word[e + j] + position[j] + segment[j]);
    CHECK(std::isnan(out[e + j]));      // id 7 >= V
    CHECK(std::isnan(out[2 * e + j]));  // id -2
    CHECK(std::isnan(out[3 * e + j]));  // segment 2 >= S
  }
  std::vector<float> dout = test::random_vector<float>(4 * e, 4), zeros5(5 * e, 0.0f),
                     zeros4(4 * e, 0.0f), zeros2(2 * e, 0.0f);
  const Tensor gdword = test::upload(gpu, arena, zeros5, {5, e});
  const Tensor gdseg = test::upload(gpu, arena, zeros2, {2, e});
  const Tensor ws = arena.alloc(
      DType::F32, {static_cast<int64_t>(embedding_backward_workspace_bytes(1, 4, 2, e) / 4)});
  run_op(gpu, EmbeddingBackward{.dout = test::upload(gpu, arena, dout, {1, 4, e}),
                                .ids = gid,
                                .segment_ids = gsid,
                                .dword = Out(gdword),
                                .dposition = Out(test::upload(gpu, arena, zeros4, {4, e})),
                                .dsegment = Out(gdseg),
                                .workspace = Out(ws)});
  const std::vector<float> dword = test::download<float>(gpu, gdword);
  const std::vector<float> dseg = test::download<float>(gpu, gdseg);
  for (int64_t j = 0; j < e; ++j) {
    CHECK(dword[e + j] == dout[j] + dout[3 * e + j]);  // id 1 at tokens 0 and 3
    CHECK(dword[j] == 0.0f);
    CHECK(dseg[j] == dout[j] + dout[e + j]);  // segment 0 at tokens 0 and 1
    CHECK(dseg[e + j] == dout[2 * e + j]);    // segment 1 at token 2; segment 2 skipped
  }
}
