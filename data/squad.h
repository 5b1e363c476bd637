// SQuAD 1.1 / 2.0 reader and the tokenizer interface of the SQuAD pipeline.
//
// A context is split into "doc tokens" on whitespace exactly as the BERT/ELECTRA run_squad
// preprocessing does (space, tab, CR, LF, U+202F; every other character belongs to a token), and
// char_to_word_offset[c] is the doc token of code point c (the previous token for whitespace, -1
// for leading whitespace). Offsets count code points, as answer_start does in the JSON.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace electra {

// The tokenizer as the SQuAD code sees it: one whitespace-free word -> its WordPiece ids (what
// BertTokenizer.tokenize(word) then convert_tokens_to_ids give; possibly several ids, possibly none
// for a word of control characters), plus the special ids.
using WordPieceFn = std::function<std::vector<int32_t>(const std::string& word)>;

struct SquadTokenizer {
  WordPieceFn wordpiece;
  int32_t cls_id = 101;  // [CLS] in the BERT uncased vocabulary
  int32_t sep_id = 102;  // [SEP]
};

struct SquadAnswer {
  std::string text;
  int32_t char_start = 0;  // code-point offset of the answer in the context
};

// A context and its doc tokens, shared by the paragraph's questions (SQuAD has ~5 questions per
// paragraph; copying would multiply the largest part of the data).
struct SquadParagraph {
  std::string context;
  std::vector<std::string> doc_tokens;
  std::vector<int32_t> char_to_word_offset;  // one entry per code point of `context`
};

struct SquadExample {
  std::string id;
  std::string question;
  std::shared_ptr<const SquadParagraph> paragraph;
  std::vector<SquadAnswer> answers;  // empty for impossible questions
  bool is_impossible = false;        // SQuAD 2.0 only; false for 1.1
  // Doc tokens covering the first answer (the training target); -1 for impossible questions.
  int32_t start_word = -1, end_word = -1;

  const std::string& context() const { return paragraph->context; }
  const std::vector<std::string>& doc_tokens() const { return paragraph->doc_tokens; }
  const std::vector<int32_t>& char_to_word_offset() const { return paragraph->char_to_word_offset; }
};

// Splits a context into doc tokens and fills char_to_word_offset (see the top of this file).
void split_doc_tokens(std::string_view context, std::vector<std::string>& doc_tokens,
                      std::vector<int32_t>& char_to_word_offset);

struct SquadReadOptions {
  // Training: each answerable question must have exactly one answer, and a question whose answer
  // text does not match its doc tokens (" ".join(doc_tokens[start:end+1]) does not contain the
  // whitespace-normalised answer) is skipped with a warning, as run_squad does.
  bool training = false;
};

struct SquadDataset {
  std::vector<SquadExample> examples;
  size_t skipped = 0;  // training questions dropped because the answer did not match the text
};

// Reads a SQuAD JSON file ({"data": [{"title", "paragraphs": [{"context", "qas": [{"id",
// "question", "answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}). Malformed JSON, a
// missing key or an answer outside its context is a UserError naming the file and the question.
SquadDataset read_squad(const std::filesystem::path& path, const SquadReadOptions& options = {});

// The same from JSON text; `source` names it in errors.
SquadDataset parse_squad(std::string_view json_text, std::string_view source,
                         const SquadReadOptions& options = {});

}  // namespace electra
