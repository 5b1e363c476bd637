// FinetuneConfig: the fine-tuning hyper-parameters of `electra finetune` (paper Table 7), read
// strictly from configs/glue.yaml or configs/squad.yaml plus `--set section.key=value`:
//
//   finetune:   lr (0 = by model size: 3e-4 Small, 1e-4 Base, 5e-5 Large, judged by the hidden
//               size of the --init checkpoint: <= 256, <= 768, larger), layerwise_lr_decay (0 =
//               by size: 0.8 Small/Base, 0.9 Large), official_off_by_one (false: see
//               optim/layerwise_lr.h), weight_decay (0), adam_eps (1e-6), warmup_fraction (0.1),
//               max_grad_norm (1.0), batch_size (32), epochs (3), max_seq_len (128), dropout (the
//               head's, 0.1), head (official | hf_two_layer), swap_augment (true: MRPC and STS-B
//               also train on the swapped sentence pair), seed (1; --seeds N runs seed, seed + 1,
//               ...), device (auto | cpu | cuda), precision (bf16 | f32, GPU only), threads
//               (0: the CPU path's threads, 0 = all cores the process may use), attention (the
//               GPU's attention kernels, as model.attention: auto | unfused | flash | flash_ds |
//               flash_short)
//   squad:      doc_stride (128), max_query_length (64), max_answer_length (30), n_best (20),
//               null_threshold (0; SQuAD 2.0, see apps/finetune_squad.h)
//               (configs/squad.yaml only; max_seq_len 384 there)
//   tasks:      <task>: {epochs, lr, batch_size, max_seq_len}: per-task overrides, e.g.
//               rte: {epochs: 10}; task names as `electra finetune --task` takes them
// Every key is optional; an unknown key, a wrong type or an unknown task is a UserError naming
// file:line and the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/context.h"
#include "models/electra_config.h"

namespace electra::apps {

struct FinetuneSettings {
  double lr = 0;                  // 0: by model size
  double layerwise_lr_decay = 0;  // 0: by model size
  bool official_off_by_one = false;
  double weight_decay = 0;
  double adam_eps = 1e-6;
  double warmup_fraction = 0.1;
  double max_grad_norm = 1.0;
  int64_t batch_size = 32;
  int64_t epochs = 3;
  int64_t max_seq_len = 128;
  double dropout = 0.1;
  bool hf_two_layer = false;
  bool swap_augment = true;
  uint64_t seed = 1;
  std::string device = "auto";
  Precision precision = Precision::BF16;
  int64_t threads = 0;                             // CPU threads; 0: all cores this process may use
  AttentionImpl attention = AttentionImpl::kAuto;  // GPU only
  // SQuAD
  int64_t doc_stride = 128;
  int64_t max_query_length = 64;
  int64_t max_answer_length = 30;
  int64_t n_best = 20;
  double null_threshold = 0;  // SQuAD 2.0: "no answer" when the answerable logit says so past it

  // The paper's lr and layer-wise decay for an encoder of this size when left at 0.
  double resolved_lr(const EncoderConfig& encoder) const;
  double resolved_decay(const EncoderConfig& encoder) const;
};

struct FinetuneConfig {
  std::string path;
  FinetuneSettings defaults;
  std::map<std::string, FinetuneSettings> tasks;  // lower-case task name -> settings

  // The settings of `task` (lower-case, as parsed by the caller): its overrides or the defaults.
  FinetuneSettings for_task(const std::string& task) const;
};

// `known_tasks`: the lower-case task names a `tasks:` section may name.
FinetuneConfig read_finetune_config(const std::string& path,
                                    const std::vector<std::string>& overrides,
                                    const std::vector<std::string>& known_tasks);

}  // namespace electra::apps
