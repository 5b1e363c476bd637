// The tokenizer of a model directory, in HF transformers' files, so that a checkpoint of ours and
// an HF ELECTRA directory are read and written the same way:
//
//   vocab.txt                 the WordPiece vocabulary (data/vocab.h)
//   tokenizer_config.json     {"tokenizer_class": "ElectraTokenizer", "do_lower_case": ...,
//                             "strip_accents": null, "tokenize_chinese_chars": true, the five
//                             special tokens, "model_max_length"}: what AutoTokenizer reads to
//                             tokenize as the engine does (strip_accents null follows
//                             do_lower_case, as our BasicTokenizer)
//   special_tokens_map.json   the five special tokens
//   tokenizer.json            (read only) what transformers 5.x save_pretrained writes instead of
//                             vocab.txt: model.vocab (WordPiece, token -> id) and
//                             normalizer.lowercase
//
// Casing: do_lower_case of tokenizer_config.json, else normalizer.lowercase of tokenizer.json, else
// inferred from the vocabulary (uncased_vocabulary below), the same rule for every directory.
#pragma once

#include <cstdint>
#include <string>

#include "data/vocab.h"

namespace electra::data {

struct ModelTokenizer {
  Vocab vocab;
  bool lowercase = true;
  std::string casing_source;  // the file (or "inferred from <vocab>") the casing came from
};

// A vocabulary without any letter that lower-casing changes, outside its special ("[...]") tokens,
// was built from lower-cased text (build-vocab --lowercase, BERT's uncased vocabularies, which
// keep upper-case letters without a lower case such as U+211D): text is lower-cased before
// WordPiece. A cased vocabulary holds such letters in practice ("The", "A").
bool uncased_vocabulary(const Vocab& vocab);

// The tokenizer of model directory `dir`: vocab.txt, else tokenizer.json's WordPiece vocabulary;
// UserError naming the directory when it has neither (and naming the file on a malformed one).
ModelTokenizer load_model_tokenizer(const std::string& dir);

// vocab_path's vocabulary with the casing of its directory's tokenizer files when it has some,
// else inferred (uncased_vocabulary).
ModelTokenizer load_vocab_tokenizer(const std::string& vocab_path);

// Writes vocab.txt, tokenizer_config.json and special_tokens_map.json into dir (each atomically).
void write_tokenizer_files(const std::string& dir, const Vocab& vocab, bool lowercase,
                           int64_t model_max_length);

// UserError naming both files unless `given` (the user's --vocab) holds the same tokens in the
// same order as `recorded` (the vocabulary the checkpoint was trained with).
void check_same_vocabulary(const Vocab& given, const Vocab& recorded);

}  // namespace electra::data
