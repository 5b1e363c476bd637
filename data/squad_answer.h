// SQuAD answer extraction (run_squad's write_predictions): from the start/end logits of an
// example's windows to its best answer span, mapped back to the original context.
//
// Candidates are the n_best highest start and end logits of each window; a pair is kept when both
// positions are document sub-tokens, end >= start, the span is at most max_answer_len sub-tokens,
// and the window gives the start token its maximum context. Candidates are ranked by
// start + end logit and deduplicated by text.
//
// Text alignment (our version of get_final_text): a sub-token maps to the code-point span of the
// BERT basic-tokenizer piece it came from (SquadDocTokens), so an answer starts and ends on piece
// boundaries of the original text ("1895" out of "(1895–1943),", "Zürich" with its accent) rather
// than on the lowercased, accent-stripped WordPiece text; whitespace runs inside the answer become
// one space, as " ".join(doc_tokens) does in the reference. A span starting or ending inside a
// word piece ("##ing") widens to the whole piece.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/squad.h"
#include "data/squad_features.h"

namespace electra {

struct SquadAnswerOptions {
  int32_t n_best = 20;
  int32_t max_answer_len = 30;  // in sub-tokens
};

// One window's logits, indexed by position (at least input_ids.size() entries).
struct SquadLogits {
  std::span<const float> start, end;
};

struct SquadCandidate {
  std::string text;
  float start_logit = 0, end_logit = 0;
  int32_t char_begin = 0, char_end = 0;  // code-point span in the context
};

struct SquadPrediction {
  std::string text;  // the best non-null span; "" when no window yields a valid span
  double score = 0;  // its start + end logit
  // SQuAD 2.0: the least null score over windows, start[0] + end[0] ([CLS]); the answer is ""
  // when null_score - score exceeds a threshold tuned on dev (see answer_or_null). +infinity when
  // the example has no window (an empty context).
  double null_score = 0;
  std::vector<SquadCandidate> nbest;  // best first, distinct texts, at most n_best
};

// The prediction for one example from its features (its consecutive windows, as featurize_squad
// emits them) and their logits (logits[i] belongs to features[i]).
SquadPrediction extract_answer(const SquadExample& example, std::span<const SquadFeature> features,
                               std::span<const SquadLogits> logits, const SquadTokenizer& tokenizer,
                               const SquadAnswerOptions& options = {});

// SQuAD 2.0 decision: "" when the null score beats the best span by more than `threshold`.
std::string answer_or_null(const SquadPrediction& prediction, double threshold);

}  // namespace electra
