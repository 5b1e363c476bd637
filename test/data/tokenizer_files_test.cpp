// The tokenizer files of a model directory (data/tokenizer_files.h): written and read back with
// their casing, HF's tokenizer.json alone, casing inferred from the vocabulary, and a vocabulary
// that is not the checkpoint's refused with both files named.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "data/tokenizer_files.h"
#include "engine/error.h"

namespace electra::data {
namespace {
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / name) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

const std::vector<std::string> kCased = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                         "The",   "the",   "cat",   "##s"};

TEST_CASE("tokenizer files keep the casing of a checkpoint") {
  TempDir dir("electra_tokenizer_files_test");
  for (bool lowercase : {true, false}) {
    const Vocab vocab = Vocab::from_tokens(kCased, "cased");
    write_tokenizer_files(dir.path.string(), vocab, lowercase, 128);
    CHECK(fs::exists(dir.path / "special_tokens_map.json"));
    const ModelTokenizer t = load_model_tokenizer(dir.path.string());
    CHECK(t.lowercase == lowercase);
    CHECK(t.casing_source == (dir.path / "tokenizer_config.json").string());
    CHECK(t.vocab.size() == kCased.size());
    // A cased tokenizer keeps "The"; a lower-casing one finds "the".
    Tokenizer tokenizer(t.vocab, t.lowercase);
    CHECK(tokenizer.encode("The cats") == std::vector<int32_t>{lowercase ? 6 : 5, 7, 8});
  }
}

TEST_CASE("an HF directory with only tokenizer.json is read") {
  TempDir dir("electra_tokenizer_json_test");
  write_text(dir.path / "tokenizer.json", R"({"version": "1.0",
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": false},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "The": 5,
                        "the": 6, "cat": 7, "##s": 8}}})");
  const ModelTokenizer t = load_model_tokenizer(dir.path.string());
  CHECK_FALSE(t.lowercase);
  REQUIRE(t.vocab.size() == 9);
  CHECK(t.vocab.token(5) == "The");
  CHECK(t.vocab.token(8) == "##s");

  write_text(dir.path / "tokenizer.json",
             R"({"normalizer": {"type": "BertNormalizer"}, "model": {"type": "WordPiece",
                 "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 3}}})");
  CHECK_THROWS_WITH(load_model_tokenizer(dir.path.string()),
                    Catch::Contains("tokenizer.json") && Catch::Contains("gives id 3 to both"));
  write_text(dir.path / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {}}})");
  CHECK_THROWS_WITH(load_model_tokenizer(dir.path.string()), Catch::Contains("'BPE'"));
  fs::remove(dir.path / "tokenizer.json");
  CHECK_THROWS_WITH(load_model_tokenizer(dir.path.string()),
                    Catch::Contains("no vocab.txt or tokenizer.json"));
}

TEST_CASE("without tokenizer files the casing follows the vocabulary") {
  CHECK_FALSE(uncased_vocabulary(Vocab::from_tokens(kCased, "cased")));
  std::vector<std::string> uncased = kCased;
  uncased[5] = "a";
  CHECK(uncased_vocabulary(Vocab::from_tokens(uncased, "uncased")));
  uncased[5] = "\xc3\x89t\xc3\xa9";  // "Été": a non-ASCII capital
  CHECK_FALSE(uncased_vocabulary(Vocab::from_tokens(uncased, "accented")));
  uncased[5] = "\xe2\x84\x9d";  // U+211D, an upper-case letter lower-casing keeps (BERT's uncased)
  CHECK(uncased_vocabulary(Vocab::from_tokens(uncased, "double-struck")));
  TempDir dir("electra_tokenizer_infer_test");
  write_text(dir.path / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n");
  const ModelTokenizer t = load_vocab_tokenizer((dir.path / "vocab.txt").string());
  CHECK(t.lowercase);
  CHECK_THAT(t.casing_source, Catch::Contains("inferred"));
}

TEST_CASE("a vocabulary other than the checkpoint's is refused, naming both") {
  TempDir dir("electra_vocab_check_test");
  write_text(dir.path / "a.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n");
  write_text(dir.path / "crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nthe\r\ncat\r\n");
  write_text(dir.path / "swapped.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncat\nthe\n");
  const Vocab a = Vocab::load((dir.path / "a.txt").string());
  CHECK_NOTHROW(check_same_vocabulary(Vocab::load((dir.path / "crlf.txt").string()), a));
  CHECK_THROWS_WITH(check_same_vocabulary(Vocab::load((dir.path / "swapped.txt").string()), a),
                    Catch::Contains("swapped.txt") && Catch::Contains("a.txt") &&
                        Catch::Contains("not the vocabulary the checkpoint was trained with"));
}

}  // namespace
}  // namespace electra::data
