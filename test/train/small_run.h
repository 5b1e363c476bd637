// ELECTRA-Small as configs/electra-small.yaml trains it (seq 128, batch 128, one micro-batch per
// update), on one shard of 128 made-up sequences in its 30522-word vocabulary, in a temporary
// directory: what the launch count tests run one update of.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "apps/default_config.h"
#include "data/shard.h"
#include "models/pretrainer.h"
#include "train/pretrain_config.h"

namespace electra::test {

struct SmallRun {
  static constexpr uint64_t kVocabHash = 0x5e11;
  std::filesystem::path dir;
  std::string shard;
  PretrainConfig config;

  // `overrides` ("section.key=value") change the config before the shard is written.
  explicit SmallRun(const std::string& name, const std::vector<std::string>& overrides = {})
      : dir(std::filesystem::temp_directory_path() / ("electra_small_run_" + name)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    // Found as `electra` finds it (apps/default_config.h), so that the test also runs from the GPU
    // bundle, away from this source tree.
    config = read_pretrain_config(apps::find_default_config("electra-small.yaml").path, overrides);
    config.train.set_ranks(1);
    config.checkpoint.dir = (dir / "run").string();
    shard = (dir / "data.bin").string();
    const SpecialTokens tokens;
    data::ShardHeader h;
    h.seq_len = static_cast<uint32_t>(config.train.seq_len);
    h.vocab_size = static_cast<uint32_t>(config.model.discriminator.vocab_size);
    h.vocab_hash = kVocabHash;
    h.pad_id = static_cast<uint16_t>(tokens.pad);
    h.cls_id = static_cast<uint16_t>(tokens.cls);
    h.sep_id = static_cast<uint16_t>(tokens.sep);
    h.mask_id = static_cast<uint16_t>(tokens.mask);
    data::ShardWriter writer(shard, h);
    // [CLS] A [SEP] B [SEP] with words from 1000 up and the last tenth padding.
    std::mt19937 gen(7);
    std::uniform_int_distribution<int> word(1000, static_cast<int>(h.vocab_size) - 1);
    const int64_t t = config.train.seq_len, length = t - t / 10, middle = length / 2;
    for (int64_t s = 0; s < config.train.batch_size; ++s) {
      std::vector<uint16_t> tokens_of(static_cast<size_t>(t), h.pad_id);
      for (int64_t i = 0; i < length; ++i) tokens_of[i] = static_cast<uint16_t>(word(gen));
      tokens_of[0] = h.cls_id;
      tokens_of[middle] = tokens_of[length - 1] = h.sep_id;
      writer.add(tokens_of);
    }
    writer.finish();
  }
  ~SmallRun() { std::filesystem::remove_all(dir); }
};

}  // namespace electra::test
