#include "models/stage_list.h"

namespace electra {

StageList::StageList(std::vector<Entry> entries) : entries_(std::move(entries)) {
  for (size_t i = 1; i < entries_.size(); ++i) {
    ELECTRA_CHECK(entries_[i].stage->span().first >= entries_[i - 1].stage->span().end ||
                      entries_[i].stage->span().empty() ||
                      entries_[i - 1].stage->adds_into(*entries_[i].stage),
                  "StageList: stage ", i, " declares its parameters before stage ", i - 1,
                  " (only a stage that adds into the next one's may come first)");
  }
}

void StageList::forward(Context& ctx, const Corruption& c, ForwardContext& saved) const {
  for (const Entry& e : entries_) {
    if (e.mode != StageMode::kSkip) e.stage->forward(ctx, c, saved);
  }
}

void StageList::backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready,
                         SideStream* side) const {
  size_t beside = entries_.size();  // the stage whose own part runs on the side stream, if any
  if (side != nullptr) {
    for (size_t i = 0; i < entries_.size() && beside == entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (e.mode == StageMode::kTrain && e.stage->splits_backward()) beside = i;
    }
  }
  std::vector<ParamSpan> held;
  bool forked = false;  // and not yet joined
  auto join = [&] {
    side->join(ctx);
    forked = false;
  };
  std::vector<bool> done(entries_.size(), false);
  auto run = [&](size_t i) {
    done[i] = true;
    const Entry& e = entries_[i];
    if (i == beside) {
      join();
      for (const ParamSpan& span : held) ready(ctx, span);
      e.stage->backward_shared(ctx, saved, ready);
      return;
    }
    if (e.mode == StageMode::kTrain) {
      e.stage->backward(ctx, saved, ready);
      return;
    }
    if (e.mode == StageMode::kFrozen) e.stage->drop_gradients(ctx);
    report(ctx, ready, e.stage->span());
  };
  try {
    if (beside < entries_.size()) {
      side->fork(ctx);
      forked = true;
      GradientsReady hold;
      if (ready) hold = [&held](Context&, ParamSpan span) { held.push_back(span); };
      entries_[beside].stage->backward_own(side->ctx(ctx), saved, hold);
    }
    for (size_t i = entries_.size(); i-- > 0;) {
      if (done[i]) continue;
      for (size_t j = 0; j < i; ++j) {
        if (!done[j] && entries_[j].stage->adds_into(*entries_[i].stage)) run(j);
      }
      run(i);
    }
  } catch (...) {
    // A refusal between the fork and the join (a loss that did not run, ...): the main stream
    // still waits for the side work queued so far, so a caller that goes on does not reuse a
    // buffer under it. The first error is the one rethrown: a capture it invalidated refuses the
    // join's event too, and that second error would hide it.
    if (forked) {
      try {
        join();
      } catch (...) {  // the first error wins
      }
    }
    throw;
  }
}

MeanInputs StageList::mean_inputs(const Corruption& c, MeanInputs defaults) const {
  for (const Entry& e : entries_) {
    if (e.mode != StageMode::kSkip) e.stage->mean_inputs(c, defaults);
  }
  return defaults;
}

void StageList::accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) const {
  for (const Entry& e : entries_) {
    if (e.mode != StageMode::kSkip) e.stage->accumulate_metrics(ctx, c, acc);
  }
}

bool StageList::frozen(const ParameterStore& store, const ParamInfo& param) const {
  const std::vector<ParamInfo>& params = store.params();
  for (const Entry& e : entries_) {
    const ParamSpan span = e.stage->span();
    if (e.mode == StageMode::kTrain || span.empty()) continue;
    const ParamInfo& first = params[span.first];
    const ParamInfo& last = params[span.end - 1];
    if (param.offset >= first.offset && param.offset < last.offset + last.numel) return true;
  }
  return false;
}

Tensor span_grads(const ParameterStore& store, ParamSpan span) {
  ELECTRA_CHECK(!span.empty(), "span_grads: an empty span");
  const ParamInfo& first = store.params()[span.first];
  const ParamInfo& last = store.params()[span.end - 1];
  return store.flat_grads().rows(first.offset, last.offset + last.padded_numel());
}

}  // namespace electra
