// The pre-training data builder: example layout, segment statistics, and output that is
// byte-identical whatever the number of threads.
#include <zstd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_builder.h"
#include "data/example_builder.h"
#include "data/shard_reader.h"
#include "data/tokenizer.h"
#include "data_test_util.h"
#include "engine/error.h"

using namespace electra;
using namespace electra::data;
using electra::data::test::TempDir;

namespace {

std::string zstd_compress(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace

TEST_CASE("examples follow the official layout and segment statistics", "[builder]") {
  const Vocab vocab = test::synthetic_vocab();
  Tokenizer tok(vocab);
  constexpr uint32_t kSeqLen = 64;
  ExampleBuilder builder(vocab, kSeqLen, 5);
  // Long documents so that end-of-document examples are rare.
  const std::string corpus = test::synthetic_corpus(40, 150, 11);
  std::vector<uint16_t> records;
  DocumentTokens doc;
  uint64_t doc_index = 0, input_tokens = 0;
  size_t start = 0;
  while (start < corpus.size()) {
    size_t end = corpus.find('\n', start);
    const std::string_view line = std::string_view(corpus).substr(start, end - start);
    start = end + 1;
    if (!line.empty()) {
      tok.encode(line, doc.tokens);
      doc.ends.push_back(static_cast<uint32_t>(doc.tokens.size()));
    }
    if (line.empty() || start >= corpus.size()) {
      input_tokens += doc.tokens.size();
      builder.build(doc, doc_index++, records);
      doc.clear();
    }
  }
  REQUIRE(doc_index == 40);
  const size_t n = records.size() / kSeqLen;
  REQUIRE(n > 500);
  size_t single = 0, full = 0, short_targets = 0, content = 0;
  for (size_t e = 0; e < n; ++e) {
    const std::span<const uint16_t> r(records.data() + e * kSeqLen, kSeqLen);
    REQUIRE(r[0] == vocab.cls_id());
    const auto seps = std::count(r.begin(), r.end(), vocab.sep_id());
    REQUIRE((seps == 1 || seps == 2));
    const size_t len = record_length(r, static_cast<uint16_t>(vocab.sep_id()));
    for (size_t i = 1; i < len; ++i) REQUIRE(r[i] != vocab.pad_id());
    for (size_t i = len; i < kSeqLen; ++i) REQUIRE(r[i] == vocab.pad_id());
    if (seps == 2) REQUIRE(r[len - 2] != vocab.sep_id());  // B is never empty
    single += seps == 1;
    full += len == kSeqLen;
    short_targets += len < 24;
    content += len - 1 - static_cast<size_t>(seps);
  }
  const double single_fraction = static_cast<double>(single) / static_cast<double>(n);
  INFO(n << " examples, " << single << " single-segment, " << full << " full, " << short_targets
         << " short");
  // 10% by the coin, a little more from one-sentence examples (short targets, document ends).
  CHECK(single_fraction > 0.08);
  CHECK(single_fraction < 0.16);
  CHECK(full > n / 2);             // accumulation reaches seq_len most of the time
  CHECK(short_targets > n / 200);  // the 5% random short targets exist
  CHECK(short_targets < n / 10);
  CHECK(content <= input_tokens);     // nothing is invented
  CHECK(content > input_tokens / 2);  // and truncation drops a minority
}

TEST_CASE("build-data output is byte-identical for 1 and 3 threads", "[builder]") {
  TempDir dir("builder-threads");
  const Vocab vocab = test::synthetic_vocab();
  std::filesystem::create_directories(dir.path() / "in" / "sub");
  test::write_file(dir / "in/a.txt", test::synthetic_corpus(70, 12, 1));
  test::write_file(dir / "in/sub/b.txt.zst", zstd_compress(test::synthetic_corpus(50, 30, 2)));
  test::write_file(dir / "in/ignored.json", "{}");

  BuildDataOptions options;
  options.inputs = {(dir.path() / "in").string()};
  options.seq_len = 32;
  options.seed = 123;
  options.docs_per_shard = 40;
  options.chunk_bytes = 2048;  // many chunks in flight
  std::vector<BuildDataReport> reports;
  for (unsigned threads : {1u, 3u}) {
    options.threads = threads;
    options.output_dir = dir / ("out" + std::to_string(threads));
    reports.push_back(build_pretraining_data(vocab, options));
  }
  const auto& r1 = reports[0];
  const auto& r3 = reports[1];
  CHECK(r1.files == 2);
  CHECK(r1.documents == 120);
  REQUIRE(r1.shards.size() == 3);  // documents [0, 40), [40, 80), [80, 120)
  REQUIRE(r3.shards.size() == r1.shards.size());
  CHECK(r1.examples == r3.examples);
  uint64_t total = 0;
  for (size_t k = 0; k < r1.shards.size(); ++k) {
    CHECK(std::filesystem::path(r1.shards[k]).filename() ==
          std::filesystem::path(r3.shards[k]).filename());
    const std::string b1 = test::read_file(r1.shards[k]), b3 = test::read_file(r3.shards[k]);
    CHECK(b1.size() > kShardHeaderBytes);
    CHECK(b1 == b3);
    const ShardFile shard(r1.shards[k]);
    CHECK(shard.header().vocab_hash == vocab.hash());
    total += shard.size();
  }
  CHECK(total == r1.examples);

  SECTION("another seed gives other examples") {
    options.seed = 124;
    options.output_dir = dir / "out-seed";
    const auto r = build_pretraining_data(vocab, options);
    CHECK(test::read_file(r.shards[0]) != test::read_file(r1.shards[0]));
  }
  SECTION("an output directory that already holds shards is refused") {
    CHECK_THROWS_AS(build_pretraining_data(vocab, options), UserError);
  }
  SECTION("a missing input is a user error naming it") {
    options.inputs = {dir / "nope"};
    options.output_dir = dir / "out-missing";
    CHECK_THROWS_WITH(build_pretraining_data(vocab, options), Catch::Contains(dir / "nope"));
  }
}
