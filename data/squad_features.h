// SQuAD featurisation, as run_squad's convert_examples_to_features: the document is split into
// WordPiece sub-tokens word by word, then covered by sliding windows
//   [CLS] query [SEP] doc[start .. start+length) [SEP]
// of at most max_seq_len tokens (the query cut to max_query_len), consecutive windows starting
// min(length, doc_stride) sub-tokens apart. A sub-token seen by several windows has its "max
// context" in the window maximising min(left, right context) + 0.01 * window length.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/squad.h"

namespace electra {

// An example's document as WordPiece sub-tokens, with where each came from.
struct SquadDocTokens {
  std::vector<int32_t> ids;      // all doc sub-tokens in order
  std::vector<int32_t> to_word;  // sub-token -> doc token (word) index
  std::vector<int32_t>
      word_start;  // word -> its first sub-token (= the next word's if it has none)
  // Code-point span [char_begin, char_end) in the context of the text a sub-token came from: the
  // BERT basic-tokenizer piece of its word (words split at punctuation, CJK characters, Unicode
  // spaces and control characters) when the pieces tokenise to the word's ids, else the whole word.
  std::vector<int32_t> char_begin, char_end;
};

SquadDocTokens tokenize_document(const SquadExample& example, const WordPieceFn& wordpiece);

struct SquadFeatureOptions {
  int32_t max_seq_len = 384;
  int32_t doc_stride = 128;
  int32_t max_query_len = 64;
};

struct SquadFeature {
  int32_t example_index = 0;  // into the examples given to featurize_squad
  int32_t span_index = 0;     // window number within the example
  // [CLS] query [SEP] doc span [SEP], unpadded: the input mask is 1 on these positions, the
  // segment id is 0 before doc_offset and 1 from it on.
  std::vector<int32_t> input_ids;
  int32_t doc_offset = 0;  // position of the first doc sub-token (query length + 2)
  int32_t doc_start = 0;   // index in SquadDocTokens::ids of the sub-token at doc_offset
  std::vector<int32_t> token_to_orig_map;  // per position: doc word index, -1 off the doc span
  std::vector<uint8_t>
      token_is_max_context;  // per position: 1 when this window is the token's best
  // Positions of the first answer's first and last sub-token (tightened to the tokenised answer
  // text as _improve_answer_span does); 0 ([CLS]) for impossible questions, questions without an
  // answer, and answers not wholly inside this window.
  int32_t start_position = 0, end_position = 0;
};

// Features of all examples, in example order (an example's windows are consecutive).
std::vector<SquadFeature> featurize_squad(std::span<const SquadExample> examples,
                                          const SquadTokenizer& tokenizer,
                                          const SquadFeatureOptions& options = {});

}  // namespace electra
