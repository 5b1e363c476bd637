// Helpers of the data tests: a temporary directory and a synthetic corpus with a matching
// vocabulary (every word of the corpus is one token, so token counts are known exactly).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace electra::data::test {

// A fresh directory under the system temp dir, removed with its content on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() /
            ("data-test-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const std::vector<std::string>& corpus_words() {
  static const std::vector<std::string> kWords = {
      "the",   "of",    "and",    "to",    "in",     "a",      "is",    "was",   "for",
      "on",    "that",  "with",   "as",    "by",     "at",     "river", "city",  "music",
      "house", "north", "school", "team",  "family", "played", "built", "known", "year",
      "world", "first", "small",  "great", "church", "film",   "album", "water", "light"};
  return kWords;
}

// Documents of `sentences_per_doc` sentences (one per line) of 4..14 words plus ".", blank lines
// between documents.
inline std::string synthetic_corpus(size_t docs, size_t sentences_per_doc, uint64_t seed) {
  std::mt19937_64 gen(seed);
  const auto& words = corpus_words();
  std::uniform_int_distribution<size_t> word(0, words.size() - 1), length(4, 14);
  std::string text;
  for (size_t d = 0; d < docs; ++d) {
    if (d > 0) text += "\n";
    for (size_t s = 0; s < sentences_per_doc; ++s) {
      const size_t n = length(gen);
      for (size_t w = 0; w < n; ++w) {
        std::string token = words[word(gen)];
        if (w == 0) token[0] = static_cast<char>(token[0] - 'a' + 'A');
        text += (w == 0 ? "" : " ") + token;
      }
      text += ".\n";
    }
  }
  return text;
}

// The special tokens, ".", and every corpus word.
inline Vocab synthetic_vocab() {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."};
  for (const auto& w : corpus_words()) tokens.push_back(w);
  return Vocab::from_tokens(tokens, "synthetic");
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace electra::data::test
