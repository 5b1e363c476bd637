// Vocabulary files (errors name the file and line; the hash is the file's FNV-1a) and WordPiece
// vocabulary training.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/fnv.h"
#include "data/tokenizer.h"
#include "data/vocab.h"
#include "data/vocab_trainer.h"
#include "data_test_util.h"
#include "engine/error.h"

using namespace electra;
using namespace electra::data;
using electra::data::test::TempDir;
using electra::data::test::write_file;

namespace {
const std::string kSpecials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
}

TEST_CASE("vocab.txt loads ids by line, special ids and a hash of the file bytes", "[vocab]") {
  TempDir dir("vocab-load");
  const std::string bytes = "[PAD]\r\n[unused0]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nthe\r\n##s";
  write_file(dir / "vocab.txt", bytes);
  const Vocab v = Vocab::load(dir / "vocab.txt");
  CHECK(v.size() == 8);
  CHECK(v.pad_id() == 0);
  CHECK(v.unk_id() == 2);
  CHECK(v.cls_id() == 3);
  CHECK(v.sep_id() == 4);
  CHECK(v.mask_id() == 5);
  CHECK(v.find("the") == 6);
  CHECK(v.find_continuation("s") == 7);
  CHECK(v.find_initial("s") == -1);
  CHECK(v.token(7) == "##s");
  CHECK(v.hash() == fnv1a64(bytes.data(), bytes.size()));
  // save() writes the canonical form (LF, final newline): a different file, a different hash.
  v.save(dir / "saved.txt");
  const Vocab saved = Vocab::load(dir / "saved.txt");
  CHECK(saved.size() == v.size());
  CHECK(saved.hash() != v.hash());
  CHECK(saved.hash() ==
        Vocab::from_tokens(
            {"[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"}, "x")
            .hash());
}

TEST_CASE("vocab.txt errors name the file, the line and the problem", "[vocab]") {
  TempDir dir("vocab-errors");
  const std::string path = dir / "vocab.txt";
  SECTION("missing file") {
    CHECK_THROWS_WITH(Vocab::load(dir / "nope.txt"), Catch::Contains("nope.txt"));
  }
  SECTION("empty file") {
    write_file(path, "");
    CHECK_THROWS_AS(Vocab::load(path), UserError);
    CHECK_THROWS_WITH(Vocab::load(path), Catch::Contains(path) && Catch::Contains("empty"));
  }
  SECTION("duplicate token") {
    write_file(path, kSpecials + "a\nb\na\n");
    CHECK_THROWS_AS(Vocab::load(path), UserError);
    CHECK_THROWS_WITH(Vocab::load(path), Catch::Contains(path + ":8: duplicate token 'a'") &&
                                             Catch::Contains("first at line 6"));
  }
  SECTION("empty line") {
    write_file(path, kSpecials + "a\n\nb\n");
    CHECK_THROWS_WITH(Vocab::load(path), Catch::Contains(path + ":7: empty token"));
  }
  for (const std::string special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    SECTION("missing " + special) {
      std::string bytes = kSpecials + "a\n";
      bytes.erase(bytes.find(special), special.size() + 1);
      write_file(path, bytes);
      CHECK_THROWS_AS(Vocab::load(path), UserError);
      CHECK_THROWS_WITH(Vocab::load(path),
                        Catch::Contains(path) && Catch::Contains("no special token " + special));
    }
  }
}

TEST_CASE("build-vocab trains a WordPiece vocabulary: specials first, size respected",
          "[vocab][trainer]") {
  WordCounter counter(true);
  const std::string corpus = test::synthetic_corpus(60, 20, 7);
  size_t start = 0;
  while (start < corpus.size()) {
    const size_t end = corpus.find('\n', start);
    counter.add(std::string_view(corpus).substr(start, end - start));
    start = end + 1;
  }
  CHECK(counter.counts().at("the") > 100);
  CHECK(counter.counts().count("The") == 0);  // lowercased

  VocabTrainerOptions options;
  options.vocab_size = 120;
  options.unused_tokens = 3;
  const auto tokens = train_wordpiece_vocab(counter.counts(), options);
  REQUIRE(tokens.size() == 120);
  CHECK(std::vector<std::string>(tokens.begin(), tokens.begin() + 8) ==
        std::vector<std::string>{"[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]",
                                 "[SEP]", "[MASK]"});
  CHECK(std::set<std::string>(tokens.begin(), tokens.end()).size() == tokens.size());

  // Tokenizing with the trained vocabulary never gives [UNK] on corpus words and round-trips
  // them: the pieces, "##" removed, spell the word.
  const Vocab vocab = Vocab::from_tokens(tokens, "trained");
  Tokenizer tok(vocab);
  size_t multi_char_tokens = 0;
  for (const auto& t : tokens)
    multi_char_tokens += t.size() > 1 && !t.starts_with("#") && t[0] != '[';
  CHECK(multi_char_tokens > 10);  // merges happened
  for (const auto& word : test::corpus_words()) {
    std::string spelled;
    for (int32_t id : tok.encode(word)) {
      REQUIRE(id != vocab.unk_id());
      const std::string_view piece = vocab.token(id);
      spelled += piece.starts_with("##") ? piece.substr(2) : piece;
    }
    CHECK(spelled == word);
  }

  SECTION("a corpus smaller than the target stops when no pair is frequent enough") {
    options.vocab_size = 100000;
    const auto all = train_wordpiece_vocab(counter.counts(), options);
    CHECK(all.size() < 100000);
    // Every corpus word became one token: nothing frequent is left to merge.
    const Vocab full = Vocab::from_tokens(all, "full");
    for (const auto& word : test::corpus_words()) CHECK(full.find(word) >= 0);
  }
  SECTION("a size that cannot hold the special tokens is a user error") {
    options.vocab_size = 8;
    CHECK_THROWS_AS(train_wordpiece_vocab(counter.counts(), options), UserError);
  }
  SECTION("sizes are checked before anything is built for them") {
    // 1e11 unused tokens were built (~100 MB/s) before the size check.
    options.vocab_size = 1000;
    options.unused_tokens = 100000000000;
    CHECK_THROWS_WITH(validate_vocab_options(options), Catch::StartsWith("--unused 100000000000"));
    options.unused_tokens = 994;
    CHECK_NOTHROW(validate_vocab_options(options));
  }
}

TEST_CASE("build-vocab merges the most frequent pairs first, so frequent words become tokens",
          "[vocab][trainer]") {
  // Frequent words of frequent letters against rare digit strings: the likelihood score
  // count(ab) / (count(a) count(b)) would merge the rare digits first and never reach "the".
  std::unordered_map<std::string, uint64_t> counts = {
      {"the", 5000}, {"and", 3000}, {"then", 400}, {"hand", 300}};
  for (int year = 1800; year < 1830; ++year) counts[std::to_string(year)] = 2;
  VocabTrainerOptions options;
  options.vocab_size = 1000;
  const auto all = train_wordpiece_vocab(counts, options);
  const auto index = [&](const std::string& token) {
    return std::find(all.begin(), all.end(), token) - all.begin();
  };
  REQUIRE(index("the") < static_cast<ptrdiff_t>(all.size()));
  REQUIRE(index("and") < static_cast<ptrdiff_t>(all.size()));
  // Merged in order of frequency: "the" (5000 + 400) and "and" (3000 + 300) before any digits.
  CHECK(index("the") < index("and"));
  CHECK(index("and") < index("18"));
}

TEST_CASE("counting words on 1 to 3 threads gives the counts of counting line by line",
          "[vocab][trainer]") {
  TempDir dir("vocab-threads");
  // Over one counting block (WordCounter::kBlockBytes), so that blocks, pieces and shards all
  // have several members; a second file continues the last block.
  std::string corpus;
  for (uint64_t seed = 0; corpus.size() <= WordCounter::kBlockBytes; ++seed) {
    corpus += test::synthetic_corpus(50, 20, seed) + "Été " + std::to_string(seed) + " 中文\n";
  }
  const std::string first = (dir.path() / "a.txt").string();
  const std::string second = (dir.path() / "b.txt").string();
  write_file(first, corpus);
  write_file(second, corpus.substr(0, 100000));
  WordCounter reference(true);
  for (const std::string& text : {corpus, corpus.substr(0, 100000)}) {
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = std::min(text.find('\n', start), text.size());
      reference.add(std::string_view(text).substr(start, end - start));
      start = end + 1;
    }
  }
  for (int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    ThreadPool pool(threads);
    WordCounter counter(true);
    counter.add_files({first, second}, false, pool);
    CHECK(counter.counts() == reference.counts());
  }
  uint64_t words = 0;
  for (const auto& [word, count] : reference.counts()) words += count;
  CHECK(words > WordCounter::kBlockBytes / 8);
  CHECK(reference.counts().at("ete") > 0);
  CHECK(reference.counts().at("中") > 0);
}
