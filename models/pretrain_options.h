// The checks of a pretrainer's options against its model (ElectraPretrainer's constructor; the
// pretrain config refuses the same combinations with its keys' names, train/pretrain_config.h).
#pragma once

#include "models/pretrainer.h"

namespace electra {

// UserError naming the first problem: shapes, the variant's combinations (unigram without a
// generator, adversarial without an MLM generator and a binary discriminator or at a
// temperature other than 1, two-stage with adversarial training or tied encoders),
// sharing_problem.
void check_pretrain_options(const ElectraConfig& config, const PretrainOptions& options);

}  // namespace electra
