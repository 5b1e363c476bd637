// TablesStage: embedding tables (word, position, segment, the embedding LayerNorm) that the
// models' stages read and add into. It runs nothing itself: the models look the tables up, and
// their backwards add into the tables' gradients, so the tables are final last; listed first,
// this stage reports them last. There are one or two:
//   the discriminator's tables, "discriminator/electra.embeddings.*" (shared with the generator
//     but for sharing: none and gdes); with sharing: gdes, sums E_G + E_delta whose gradient is
//     E_delta's (models/embeddings.h), and its forward is not this stage's: the discriminator
//     stage refreshes them before it reads them;
//   the generator's own, "generator/electra.embeddings.*" (sharing: none, gdes).
// Frozen (two-stage, stage 2 with shared tables: they are the frozen generator's), it zeroes
// what the discriminator's backward added into them.
#pragma once

#include <optional>
#include <string>

#include "models/embeddings.h"
#include "models/update_stage.h"

namespace electra {

class TablesStage : public UpdateStage {
 public:
  // Tables of their own, named `prefix`embeddings.*, in `store` (b's).
  TablesStage(ModelBuilder& b, const ParameterStore& store, const std::string& prefix,
              const EncoderConfig& config, int64_t vocab_rows);
  // sharing: gdes: the discriminator's tables over the generator's `base`.
  TablesStage(ModelBuilder& b, const ParameterStore& store, const std::string& prefix,
              const EncoderConfig& config, int64_t vocab_rows, const EmbeddingTables& base);

  const EmbeddingTables& tables() const { return gdes_ ? gdes_->tables() : tables_; }
  // sharing: gdes: the sums to refresh before a forward reads them (nullptr otherwise).
  const GdesTables* gdes() const { return gdes_ ? &*gdes_ : nullptr; }

  void forward(Context& /*ctx*/, const Corruption& /*c*/, ForwardContext& /*saved*/) override {}
  void drop_gradients(Context& ctx) override;

 private:
  EmbeddingTables tables_;
  std::optional<GdesTables> gdes_;
  Tensor grads_;  // the gradients of span() (bound pass; unset while planning)
};

}  // namespace electra
