// Token-for-token parity with HF's BertTokenizer on a small vocabulary committed in
// test/fixtures/small_vocab.txt (special tokens plus every token of at most 3 characters of the
// BERT uncased vocab): many words split into several pieces or become [UNK]. Unlike the
// full-vocab test it needs nothing from ../shared, so it always runs.
#include <catch2/catch.hpp>

#include "test/data/tokenizer_fixture_util.h"

using namespace electra::data;
using namespace electra::data::test;

TEST_CASE("tokenizer matches HF BertTokenizer with the committed small vocabulary",
          "[tokenizer][fixture]") {
  const Vocab vocab = Vocab::load(kFixtureDir + "/small_vocab.txt");
  REQUIRE(vocab.size() > 2000);
  Tokenizer tokenizer(vocab);
  size_t texts = 0, pairs = 0, tokens = 0, unknown = 0;
  for (const auto& rec : read_jsonl(kFixtureDir + "/small_vocab_fixture.jsonl")) {
    if (rec.at("kind") == "text") {
      tokens += check_text_record(tokenizer, vocab, rec);
      for (int32_t id : rec.at("ids").get<std::vector<int32_t>>()) unknown += id == vocab.unk_id();
      ++texts;
    } else {
      check_pair_record(tokenizer, rec);
      ++pairs;
    }
  }
  CHECK(texts >= 40);
  CHECK(pairs >= 6);
  CHECK(tokens > 500);
  CHECK(unknown > 10);  // the small vocabulary really exercises [UNK]
}
