// Reading the tokenizer parity fixtures written by test/fixtures/make_tokenizer_fixture.py, and
// checking the "text" and "pair" records (shared by the full-vocab and small-vocab parity tests).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "data/vocab.h"

namespace electra::data::test {

inline const std::string kFixtureDir = std::string(ELECTRA_SOURCE_DIR) + "/test/fixtures";

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<nlohmann::json> records;
  std::string line;
  while (std::getline(in, line)) records.push_back(nlohmann::json::parse(line));
  return records;
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

inline std::string tokens_of(const Vocab& vocab, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    out += out.empty() ? "" : " ";
    out += id >= 0 && static_cast<size_t>(id) < vocab.size() ? std::string(vocab.token(id)) : "?";
  }
  return out;
}

// Checks a "text" record (crafted text, possibly ill-formed UTF-8 given as hex); returns the
// number of expected tokens.
inline size_t check_text_record(Tokenizer& tokenizer, const Vocab& vocab,
                                const nlohmann::json& rec) {
  const std::string text =
      rec.contains("hex") ? from_hex(rec.at("hex")) : rec.at("text").get<std::string>();
  const auto expected = rec.at("ids").get<std::vector<int32_t>>();
  const auto ids = tokenizer.encode(text);
  INFO("case " << rec.at("name").get<std::string>() << "\n  got      " << tokens_of(vocab, ids)
               << "\n  expected " << tokens_of(vocab, expected));
  CHECK(ids == expected);
  return expected.size();
}

// Checks a "pair" record: encode_pair with longest-first truncation.
inline void check_pair_record(Tokenizer& tokenizer, const nlohmann::json& rec) {
  const auto enc = tokenizer.encode_pair(rec.at("a").get<std::string>(),
                                         rec.at("b").get<std::string>(), rec.at("max_len"));
  INFO("pair " << rec.at("a") << " / " << rec.at("b") << " max_len " << rec.at("max_len"));
  CHECK(enc.ids == rec.at("ids").get<std::vector<int32_t>>());
  CHECK(enc.segment_ids == rec.at("segments").get<std::vector<int32_t>>());
}

}  // namespace electra::data::test
