#include "models/tables_stage.h"

#include "models/stage_list.h"

namespace electra {

TablesStage::TablesStage(ModelBuilder& b, const ParameterStore& store, const std::string& prefix,
                         const EncoderConfig& config, int64_t vocab_rows) {
  begin_span(b);
  tables_ = EmbeddingTables(b, prefix, config, vocab_rows);
  end_span(b);
  if (!b.planning()) grads_ = span_grads(store, span());
}

TablesStage::TablesStage(ModelBuilder& b, const ParameterStore& store, const std::string& prefix,
                         const EncoderConfig& config, int64_t vocab_rows,
                         const EmbeddingTables& base) {
  begin_span(b);
  gdes_.emplace(b, prefix, config, vocab_rows, base);
  end_span(b);
  if (!b.planning()) grads_ = span_grads(store, span());
}

void TablesStage::drop_gradients(Context& ctx) {
  zero_tensor(ctx.stream(), grads_);
}

}  // namespace electra
