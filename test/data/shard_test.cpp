// Shard format round trip, validation errors, and the reading order (epoch permutation, rank
// slices, resumable cursor).
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "data/example_order.h"
#include "data/pretrain_batches.h"
#include "data/shard.h"
#include "data/shard_manifest.h"
#include "data/shard_reader.h"
#include "data_test_util.h"
#include "engine/error.h"

using namespace electra;
using namespace electra::data;
using electra::data::test::TempDir;

namespace {

constexpr uint32_t kSeqLen = 16;
constexpr uint64_t kVocabHash = 0x1234abcd5678ef00ull;

ShardHeader test_header() {
  ShardHeader h;
  h.seq_len = kSeqLen;
  h.vocab_size = 1000;
  h.vocab_hash = kVocabHash;
  h.pad_id = 0;
  h.cls_id = 101;
  h.sep_id = 102;
  h.mask_id = 103;
  return h;
}

// Example i: [CLS] (i % 5 + 1 tokens) [SEP] (i % 3 tokens [SEP] when i % 3 != 0) then padding.
std::vector<uint16_t> record(uint64_t i) {
  std::vector<uint16_t> r{101};
  for (uint64_t k = 0; k <= i % 5; ++k) r.push_back(static_cast<uint16_t>(1000 - k - i % 7));
  r.push_back(102);
  if (i % 3 != 0) {
    for (uint64_t k = 0; k < i % 3; ++k) r.push_back(static_cast<uint16_t>(500 + k));
    r.push_back(102);
  }
  r.resize(kSeqLen, 0);
  return r;
}

std::string write_shard(const TempDir& dir, const std::string& name, uint64_t first, uint64_t count,
                        ShardHeader h = test_header()) {
  const std::string path = dir / name;
  ShardWriter writer(path, h);
  for (uint64_t i = first; i < first + count; ++i) writer.add(record(i));
  writer.finish();
  return path;
}

void corrupt(const std::string& path, size_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  const char c = static_cast<char>(f.get() ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(c);
}

}  // namespace

TEST_CASE("shards round-trip records, header fields and statistics", "[shard]") {
  TempDir dir("shard-roundtrip");
  const std::string path = write_shard(dir, "a.bin", 0, 30);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  CHECK(std::filesystem::file_size(path) == kShardHeaderBytes + 30 * kSeqLen * 2);
  const ShardFile shard(path);
  CHECK(shard.size() == 30);
  CHECK(shard.header().vocab_hash == kVocabHash);
  CHECK(shard.header().sep_id == 102);
  for (uint64_t i = 0; i < 30; ++i) {
    const auto r = shard.example(i);
    const auto want = record(i);
    REQUIRE(std::equal(r.begin(), r.end(), want.begin(), want.end()));
  }
  // Segment ids follow the [SEP]s: example 4 is [CLS] x x x x x [SEP] y [SEP].
  std::vector<int32_t> seg(kSeqLen);
  segment_ids_from_tokens(shard.example(4), 102, seg);
  CHECK(seg == std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0});
  CHECK(record_length(shard.example(4), 102) == 9);
  const ShardStats s = shard_stats(shard);
  CHECK(s.examples == 30);
  CHECK(s.single_segment == 10);  // i % 3 == 0
  uint64_t tokens = 0;
  for (uint64_t i = 0; i < 30; ++i) tokens += 3 + i % 5 + (i % 3 != 0 ? 1 + i % 3 : 0);
  CHECK(s.tokens == tokens);
  CHECK(s.padding_fraction() == Approx(1.0 - tokens / (30.0 * kSeqLen)));
}

TEST_CASE("a truncated, corrupted or foreign shard is a UserError naming the file", "[shard]") {
  TempDir dir("shard-errors");
  const std::string path = write_shard(dir, "s.bin", 0, 20);
  SECTION("truncated payload") {
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
    CHECK_THROWS_AS(ShardFile(path), UserError);
    CHECK_THROWS_WITH(ShardFile(path), Catch::Contains(path) && Catch::Contains("truncated"));
  }
  SECTION("truncated header") {
    std::filesystem::resize_file(path, 40);
    CHECK_THROWS_WITH(ShardFile(path), Catch::Contains(path) && Catch::Contains("truncated"));
  }
  SECTION("corrupted payload") {
    corrupt(path, kShardHeaderBytes + 100);
    CHECK_THROWS_AS(ShardFile(path), UserError);
    CHECK_THROWS_WITH(ShardFile(path), Catch::Contains(path) && Catch::Contains("corrupted"));
  }
  SECTION("corrupted header") {
    corrupt(path, 33);  // inside example_count
    CHECK_THROWS_WITH(ShardFile(path), Catch::Contains(path) && Catch::Contains("header"));
  }
  SECTION("not a shard") {
    test::write_file(path, std::string(200, 'x'));
    CHECK_THROWS_WITH(ShardFile(path), Catch::Contains(path) && Catch::Contains("magic"));
  }
  SECTION("another vocabulary") {
    CHECK_NOTHROW(ShardSet({path}, kVocabHash, kSeqLen));
    CHECK_THROWS_AS(ShardSet({path}, kVocabHash + 1, kSeqLen), UserError);
    CHECK_THROWS_WITH(ShardSet({path}, 0xfeedull, kSeqLen),
                      Catch::Contains(path) && Catch::Contains("1234abcd5678ef00") &&
                          Catch::Contains("000000000000feed"));
  }
  SECTION("another seq_len") {
    CHECK_THROWS_WITH(ShardSet({path}, kVocabHash, 128), Catch::Contains(path) &&
                                                             Catch::Contains("seq_len 16") &&
                                                             Catch::Contains("seq_len 128"));
  }
  SECTION("shards that disagree with each other") {
    ShardHeader other = test_header();
    other.vocab_hash = 77;
    const std::string second = write_shard(dir, "t.bin", 0, 5, other);
    CHECK_THROWS_WITH(ShardSet({path, second}), Catch::Contains(second));
  }
}

// The manifest build-data writes last, for the shards of `dir` in the order given.
void write_manifest(const TempDir& dir, const std::vector<std::string>& names) {
  std::vector<ManifestEntry> entries;
  for (const std::string& name : names) {
    const ShardFile shard(dir / name);
    entries.push_back({name, std::filesystem::file_size(dir / name), shard.size(),
                       shard.header().payload_checksum});
  }
  write_shard_manifest(dir.path().string(), entries);
}

TEST_CASE("a shard set concatenates shards in order", "[shard]") {
  TempDir dir("shard-set");
  write_shard(dir, "shard-00001.bin", 7, 5);
  write_shard(dir, "shard-00000.bin", 0, 7);
  write_manifest(dir, {"shard-00000.bin", "shard-00001.bin"});
  const ShardSet set(expand_shard_inputs({dir.path().string()}), kVocabHash, kSeqLen);
  REQUIRE(set.size() == 12);
  for (uint64_t i = 0; i < 12; ++i) {
    const auto r = set.example(i);
    const auto want = record(i);
    REQUIRE(std::equal(r.begin(), r.end(), want.begin(), want.end()));
  }
}

TEST_CASE("a shard directory is read through its complete manifest", "[shard][manifest]") {
  TempDir dir("shard-manifest");
  write_shard(dir, "shard-00000.bin", 0, 7);
  write_shard(dir, "shard-00001.bin", 7, 5);
  const std::string d = dir.path().string();
  SECTION("no manifest: an incomplete build") {
    CHECK_THROWS_WITH(expand_shard_inputs({d}),
                      Catch::Contains(d) && Catch::Contains("no manifest.json"));
  }
  SECTION("a shard not in the manifest") {
    write_manifest(dir, {"shard-00000.bin"});
    CHECK_THROWS_WITH(expand_shard_inputs({d}), Catch::Contains("shard-00001.bin is not in"));
  }
  SECTION("a listed shard missing or of another size") {
    write_manifest(dir, {"shard-00000.bin", "shard-00001.bin"});
    std::filesystem::resize_file(dir / "shard-00001.bin", 100);
    CHECK_THROWS_WITH(expand_shard_inputs({d}), Catch::Contains("shard-00001.bin has 100 bytes"));
    std::filesystem::remove(dir / "shard-00001.bin");
    CHECK_THROWS_WITH(expand_shard_inputs({d}),
                      Catch::Contains("lists shard-00001.bin, which is missing"));
  }
  SECTION("complete") {
    write_manifest(dir, {"shard-00000.bin", "shard-00001.bin"});
    CHECK(expand_shard_inputs({d}).size() == 2);
  }
}

TEST_CASE("an example count that overflows the size check is refused", "[shard]") {
  // example_count + 2^59 examples of 16 tokens: x 32 bytes wraps to the real payload size; the
  // header checksum is recomputed so that only the size check can catch it.
  TempDir dir("shard-overflow");
  const std::string path = write_shard(dir, "s.bin", 0, 3);
  std::vector<unsigned char> bytes(kShardHeaderBytes);
  {
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes.data()), kShardHeaderBytes);
  }
  ShardHeader h = decode_shard_header(bytes.data(), bytes.size(), path);
  h.example_count += uint64_t{1} << 59;
  encode_shard_header(h, bytes.data());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), kShardHeaderBytes);
  }
  CHECK_THROWS_WITH(ShardFile(path), Catch::Contains(path) && Catch::Contains("truncated"));
}

TEST_CASE("a FIFO or a directory given as a shard is refused without opening it", "[shard]") {
  TempDir dir("shard-fifo");
  const std::string fifo = dir / "pipe.bin";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ShardFile(fifo), Catch::Contains(fifo) && Catch::Contains("FIFO"));
  CHECK_THROWS_WITH(ShardFile(dir.path().string()), Catch::Contains("is a directory"));
}

TEST_CASE("each epoch is a seeded permutation, read front to back", "[shard][order]") {
  constexpr uint64_t n = 1003;
  ExampleOrder order(n, 42);
  const std::vector<uint32_t> p0 = order.permutation(0);
  const std::vector<uint32_t> p1 = order.permutation(1);
  std::vector<uint32_t> sorted = p0;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
  CHECK(p0 != p1);
  CHECK(ExampleOrder(n, 42).permutation(1) == p1);  // a pure function of (seed, epoch)
  CHECK(ExampleOrder(n, 43).permutation(0) != p0);
  // Not the identity nor a rotation: most elements move.
  size_t fixed = 0;
  for (uint32_t i = 0; i < n; ++i) fixed += p0[i] == i;
  CHECK(fixed < 20);

  ExampleOrder reader(n, 42);
  DataCursor c;
  for (uint64_t k = 0; k < n; ++k) REQUIRE(reader.next(c) == p0[k]);
  CHECK(c == DataCursor{1, 0});  // the epoch rolled over
  CHECK(reader.next(c) == p1[0]);
}

// Data-parallel reading (example_order.h): the ranks split each update in contiguous blocks of
// micro-batches, skipping the others' with advance(); rank r's micro-batch m is the single
// process's micro-batch r * a + m, and together the ranks read every example of the update once.
TEST_CASE("ranks skip to their micro-batches and read what one process reads", "[shard][order]") {
  constexpr uint64_t n = 37;
  constexpr uint64_t world = 2, local = 2, batch = 3;  // an update: 2 ranks x 2 x 3 = 12 examples
  ExampleOrder single(n, 9);
  DataCursor single_cursor;
  std::vector<uint64_t> single_reads;  // 7 updates: 84 examples, crossing two epochs
  for (int i = 0; i < 84; ++i) single_reads.push_back(single.next(single_cursor));

  std::vector<uint64_t> rank_reads(single_reads.size());
  DataCursor update;  // the same on every rank
  for (uint64_t step = 0; step < 7; ++step) {
    for (uint64_t rank = 0; rank < world; ++rank) {
      ExampleOrder order(n, 9);
      DataCursor c = update;
      order.advance(c, rank * local * batch);
      for (uint64_t k = 0; k < local * batch; ++k) {
        rank_reads[step * world * local * batch + rank * local * batch + k] = order.next(c);
      }
    }
    ExampleOrder(n, 9).advance(update, world * local * batch);
  }
  CHECK(rank_reads == single_reads);
  CHECK(update == single_cursor);
}

TEST_CASE("advance moves the cursor as repeated next() calls do", "[shard][order]") {
  ExampleOrder order(37, 9);
  for (uint64_t start : {0, 5, 36}) {
    for (uint64_t count : {0, 1, 31, 32, 36, 37, 38, 100}) {
      DataCursor stepped{2, start}, jumped{2, start};
      for (uint64_t i = 0; i < count; ++i) order.next(stepped);
      order.advance(jumped, count);
      INFO("start " << start << " count " << count);
      CHECK(jumped == stepped);
    }
  }
}

TEST_CASE("a saved cursor resumes exactly the same sequence", "[shard][order]") {
  ExampleOrder order(37, 9);
  DataCursor cursor;
  std::vector<uint64_t> straight;
  for (int i = 0; i < 100; ++i) straight.push_back(order.next(cursor));  // crosses epochs

  DataCursor c;
  ExampleOrder first(37, 9);
  std::vector<uint64_t> resumed;
  for (int i = 0; i < 45; ++i) resumed.push_back(first.next(c));
  const DataCursor saved = c;  // as a checkpoint stores it
  CHECK(saved.epoch == 1);     // 45 = 37 + 8
  CHECK(saved.position == 8);
  ExampleOrder second(37, 9);  // a new process
  DataCursor restored = saved;
  for (int i = 45; i < 100; ++i) resumed.push_back(second.next(restored));
  CHECK(resumed == straight);
}

TEST_CASE("pre-training batches hold the ordered examples with their segment ids",
          "[shard][batches]") {
  TempDir dir("batches");
  const std::string a = write_shard(dir, "a.bin", 0, 7);
  const std::string b = write_shard(dir, "b.bin", 7, 5);
  const ShardSet shards({a, b});
  PretrainBatches batches(shards, 9);
  ExampleOrder order(shards.size(), 9);
  DataCursor cursor, expected_cursor;
  std::vector<int32_t> ids(3 * kSeqLen), segments(3 * kSeqLen);
  for (int step = 0; step < 5; ++step) {  // 15 examples: crosses into the second epoch
    batches.next(3, cursor, ids, segments);
    for (int j = 0; j < 3; ++j) {
      const uint64_t i = order.next(expected_cursor);
      const std::vector<uint16_t> r = record(i);
      bool second = false, seen_first_sep = false;
      for (uint32_t t = 0; t < kSeqLen; ++t) {
        INFO("step " << step << " example " << i << " position " << t);
        CHECK(ids[j * kSeqLen + t] == r[t]);
        const int32_t want_segment = r[t] == 0 ? 0 : (second ? 1 : 0);
        CHECK(segments[j * kSeqLen + t] == want_segment);
        if (r[t] == 102) {
          if (seen_first_sep)
            second = false;
          else
            second = true, seen_first_sep = true;
        }
      }
    }
  }
  CHECK(cursor == expected_cursor);
  CHECK(cursor.epoch == 1);

  // skip() passes examples without reading them: the next batch is the one after them.
  batches.skip(4, cursor);
  for (int k = 0; k < 4; ++k) order.next(expected_cursor);
  batches.next(1, cursor, std::span(ids).first(kSeqLen), std::span(segments).first(kSeqLen));
  const std::vector<uint16_t> r = record(order.next(expected_cursor));
  CHECK(std::equal(r.begin(), r.end(), ids.begin()));
  CHECK(cursor == expected_cursor);
}
