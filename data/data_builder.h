// `electra build-data`: text files -> tokenized pre-training examples (example_builder.h) -> shards
// (shard.h).
//
// Parallelism: the calling thread reads the inputs in order, numbers the documents globally (files
// in sorted order, then documents within a file) and hands chunks of whole documents (about
// chunk_bytes of text) to `threads` workers, which tokenize and build examples; results are written
// strictly in chunk order. Randomness depends only on (seed, document index), so the shards are
// byte-identical for any thread count. Shard k holds the examples of documents
// [k x docs_per_shard, (k+1) x docs_per_shard) (shards without examples are skipped); files are
// named shard-00000.bin, shard-00001.bin, ... in that order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace electra::data {

// More workers than this only cost memory (each holds chunks in flight).
inline constexpr unsigned kMaxBuildThreads = 256;

struct BuildDataOptions {
  std::vector<std::string> inputs;  // .txt / .txt.zst files or directories
  std::string output_dir;           // created if missing; must not already contain shards
  uint32_t seq_len = 128;
  unsigned threads = 0;  // 0: every hardware thread
  uint64_t seed = 0;
  uint64_t docs_per_shard = 10000;
  bool lowercase = true;
  bool progress = false;         // progress lines (MB/s, ETA) on stderr
  size_t chunk_bytes = 1 << 20;  // text per work item (whole documents; tests use small chunks)
};

struct BuildDataReport {
  uint64_t files = 0;
  uint64_t documents = 0;
  uint64_t examples = 0;
  uint64_t text_bytes = 0;
  uint64_t invalid_utf8 = 0;  // ill-formed UTF-8 sequences replaced and dropped
  std::vector<std::string> shards;
  double seconds = 0;
};

BuildDataReport build_pretraining_data(const Vocab& vocab, const BuildDataOptions& options);

}  // namespace electra::data
