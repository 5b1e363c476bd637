// Tokenizer behaviour that the HF fixture cannot show: encode_pair truncation, counting of
// ill-formed UTF-8, and the vocabulary file checks.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "data/vocab.h"

using namespace electra::data;

namespace {

Vocab small_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "un",
                             "##able", "##believ", "believ", "##a", ",", "!", "é", "e"},
                            "small");
}

}  // namespace

TEST_CASE("WordPiece splits greedily and maps unsplittable words to [UNK]", "[tokenizer]") {
  const Vocab v = small_vocab();
  Tokenizer tok(v);
  CHECK(tok.encode("Unbelievable, a!") == std::vector<int32_t>{v.find("un"), v.find("##believ"),
                                                               v.find("##able"), v.find(","),
                                                               v.find("a"), v.find("!")});
  CHECK(tok.encode("aaa") == std::vector<int32_t>{v.find("a"), v.find("##a"), v.find("##a")});
  CHECK(tok.encode("abz") == std::vector<int32_t>{v.unk_id()});
  CHECK(tok.encode("É") == std::vector<int32_t>{v.find("e")});
  CHECK(tok.encode(std::string(100, 'a')).size() == 100);
  CHECK(tok.encode(std::string(101, 'a')) == std::vector<int32_t>{v.unk_id()});
  CHECK(tok.encode(" \t\n").empty());
}

TEST_CASE("ill-formed UTF-8 is dropped and counted, never fatal", "[tokenizer]") {
  const Vocab v = small_vocab();
  Tokenizer tok(v);
  // \xff: one bad byte; \xe2\x82: a truncated 3-byte sequence (one maximal subpart);
  // \xed\xa0\x80: a surrogate (3 subparts); a trailing lone lead byte \xc3.
  // The dropped U+FFFD joins its neighbours, as HF's cleaning does: "a\xffa" is the word "aa".
  CHECK(tok.encode("a\xff"
                   "a") == std::vector<int32_t>{v.find("a"), v.find("##a")});
  CHECK(tok.invalid_utf8() == 1);
  CHECK(tok.encode("a\xe2\x82 b") == std::vector<int32_t>{v.find("a"), v.find("b")});
  CHECK(tok.invalid_utf8() == 2);
  CHECK(tok.encode("\xed\xa0\x80"
                   "c\xc3") == std::vector<int32_t>{v.find("c")});
  CHECK(tok.invalid_utf8() == 6);
}

TEST_CASE("encode_pair builds [CLS] a [SEP] b [SEP] and truncates longest-first", "[tokenizer]") {
  const Vocab v = small_vocab();
  Tokenizer tok(v);
  const int32_t a = v.find("a"), b = v.find("b"), cls = v.cls_id(), sep = v.sep_id();
  SECTION("no truncation") {
    const auto enc = tok.encode_pair("a a", "b", 16);
    CHECK(enc.ids == std::vector<int32_t>{cls, a, a, sep, b, sep});
    CHECK(enc.segment_ids == std::vector<int32_t>{0, 0, 0, 0, 1, 1});
  }
  SECTION("only the longer side is cut when the shorter fits in half the budget") {
    const auto enc = tok.encode_pair("a a a a a a", "b", 7);  // budget 4: a keeps 3
    CHECK(enc.ids == std::vector<int32_t>{cls, a, a, a, sep, b, sep});
    CHECK(enc.segment_ids == std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1});
  }
  SECTION("both sides cut: the longer keeps the odd token") {
    const auto enc = tok.encode_pair("a a a a a a a", "b b b b b b", 8);  // budget 5: 3 + 2
    CHECK(enc.ids == std::vector<int32_t>{cls, a, a, a, sep, b, b, sep});
  }
  SECTION("equal lengths: b keeps the odd token") {
    const auto enc = tok.encode_pair("a a a a", "b b b b", 8);  // budget 5: 2 + 3
    CHECK(enc.ids == std::vector<int32_t>{cls, a, a, sep, b, b, b, sep});
  }
  SECTION("the minimum length keeps only the special tokens") {
    const auto enc = tok.encode_pair("a", "b", 3);
    CHECK(enc.ids == std::vector<int32_t>{cls, sep, sep});
    CHECK(enc.segment_ids == std::vector<int32_t>{0, 0, 1});
  }
}

TEST_CASE("encode_single builds [CLS] a [SEP] and keeps the first tokens", "[tokenizer]") {
  const Vocab v = small_vocab();
  Tokenizer tok(v);
  const int32_t a = v.find("a"), cls = v.cls_id(), sep = v.sep_id();
  const auto enc = tok.encode_single("a a a a", 5);
  CHECK(enc.ids == std::vector<int32_t>{cls, a, a, a, sep});
  CHECK(enc.segment_ids == std::vector<int32_t>{0, 0, 0, 0, 0});
  CHECK(tok.encode_single("a", 16).ids == std::vector<int32_t>{cls, a, sep});
  CHECK(tok.encode_single("a a", 2).ids == std::vector<int32_t>{cls, sep});
}
