// A tiny pre-training run for the Trainer tests: a directory with one shard of 24 tiny examples
// (vocabulary 97, T = 16) and a config of 2 micro-batches of 3 per update, logging every 4.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/shard.h"
#include "test/models/tiny_pretrainer.h"
#include "train/pretrain_config.h"

namespace electra::test {

struct TinyRun {
  std::filesystem::path dir;
  std::string shard;

  explicit TinyRun(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / ("electra_trainer_test_" + name)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    shard = (dir / "data.bin").string();
    data::ShardHeader h;
    h.seq_len = 16;
    h.vocab_size = 97;
    h.vocab_hash = 0x97;
    h.pad_id = 0;
    h.cls_id = 1;
    h.sep_id = 2;
    h.mask_id = 3;
    data::ShardWriter writer(shard, h);
    const HostBatch batch = tiny_batch();
    for (int copy = 0; copy < 8; ++copy) {
      std::vector<uint16_t> tokens(batch.ids.begin(), batch.ids.end());
      writer.add(tokens);
    }
    writer.finish();
  }
  ~TinyRun() { std::filesystem::remove_all(dir); }

  PretrainConfig config() const {
    PretrainConfig c;
    c.model = tiny_electra_config(0.1f);
    c.train.batch_size = 6;
    c.train.micro_batch_size = 3;
    c.train.seq_len = 16;
    c.train.steps = 10;
    c.train.seed = 5;
    c.train.precision = Precision::F32;
    c.masking.mask_prob = 0.25;
    c.optimizer.schedule.peak = 1e-3;
    c.optimizer.schedule.warmup_steps = 2;
    c.optimizer.schedule.total_steps = c.train.steps;
    c.log_every = 4;
    c.checkpoint.dir = (dir / "run").string();
    c.train.set_ranks(1);
    return c;
  }
};

inline const SpecialTokens kTinyTokens{0, 1, 2, 3};

}  // namespace electra::test
