// SQuAD JSON reader and the run_squad whitespace tokenisation of contexts, on the fixtures in
// test/fixtures/squad (answer offsets count code points: "Zürich" shifts bytes but not offsets).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "data/squad.h"
#include "engine/error.h"

namespace electra {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(ELECTRA_SOURCE_DIR) / "test" / "fixtures" / "squad";

std::string error_of(const std::string& json, bool training = false) {
  try {
    parse_squad(json, "inline.json", SquadReadOptions{training});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("split_doc_tokens: run_squad whitespace, offsets per code point") {
  std::vector<std::string> tokens;
  std::vector<int32_t> offsets;
  // Leading whitespace maps to -1; U+202F splits, U+00A0 (no-break space) does not.
  split_doc_tokens("  a\u202Fb\tc\u00A0d \u00E9t\u00E9\n", tokens, offsets);
  CHECK(tokens == std::vector<std::string>{"a", "b", "c\u00A0d", "\u00E9t\u00E9"});
  CHECK(offsets == std::vector<int32_t>{-1, -1, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
}

TEST_CASE("read_squad: SQuAD 1.1 fixture") {
  const SquadDataset data = read_squad(kFixtures / "tiny-v1.1.json");
  REQUIRE(data.examples.size() == 3);
  CHECK(data.skipped == 0);
  const SquadExample& zurich = data.examples[0];
  CHECK(zurich.id == "q-zurich");
  CHECK(zurich.question == "Where is the museum?");
  CHECK(zurich.doc_tokens() == std::vector<std::string>{"The", "museum", "in", "Z\u00FCrich",
                                                        "opened", "in", "1898", "(1895-1943),",
                                                        "after", "a", "long", "debate."});
  CHECK(zurich.char_to_word_offset().size() == 71);  // code points, not bytes (72)
  CHECK(zurich.char_to_word_offset()[3] == 0);       // the two spaces after "The"
  CHECK(zurich.char_to_word_offset()[4] == 0);
  CHECK(zurich.char_to_word_offset()[5] == 1);
  REQUIRE(zurich.answers.size() == 1);
  CHECK(zurich.answers[0].text == "Z\u00FCrich");
  CHECK(zurich.answers[0].char_start == 15);
  CHECK(zurich.start_word == 3);
  CHECK(zurich.end_word == 3);
  CHECK(!zurich.is_impossible);
  const SquadExample& year = data.examples[1];
  REQUIRE(year.answers.size() == 3);  // evaluation keeps every gold answer
  CHECK(year.answers[1].text == "in 1898");
  CHECK(year.start_word == 6);  // from the first answer, "1898" at code point 32 (byte 33)
  CHECK(year.end_word == 6);
  CHECK(year.paragraph == zurich.paragraph);  // one paragraph, shared by its questions
  CHECK(data.examples[2].paragraph != zurich.paragraph);
  CHECK(data.examples[2].context() == "Marie Curie won the Nobel Prize. She was born in Warsaw.");
  CHECK(data.examples[2].start_word == 0);
  CHECK(data.examples[2].end_word == 1);
}

TEST_CASE("read_squad: SQuAD 2.0 fixture with an impossible question") {
  const SquadDataset data = read_squad(kFixtures / "tiny-v2.0.json", SquadReadOptions{true});
  REQUIRE(data.examples.size() == 3);
  const SquadExample& impossible = data.examples[1];
  CHECK(impossible.id == "n-impossible");
  CHECK(impossible.is_impossible);
  CHECK(impossible.answers.empty());  // plausible_answers are not answers
  CHECK(impossible.start_word == -1);
  CHECK(impossible.end_word == -1);
  CHECK(data.examples[2].answers[0].text == "10th century");
  CHECK(data.examples[2].doc_tokens()[data.examples[2].start_word] == "10th");
  CHECK(data.examples[2].doc_tokens()[data.examples[2].end_word] == "century.");
}

TEST_CASE("read_squad: training skips answers that do not match their words") {
  const auto path = kFixtures / "mismatch.json";
  const SquadDataset train = read_squad(path, SquadReadOptions{true});
  REQUIRE(train.examples.size() == 1);
  CHECK(train.examples[0].id == "ok");
  CHECK(train.skipped == 1);
  CHECK(read_squad(path).examples.size() == 2);  // evaluation keeps it
  // Training needs exactly one answer per answerable question ("q-year" has three).
  CHECK_THROWS_WITH(
      read_squad(kFixtures / "tiny-v1.1.json", SquadReadOptions{true}),
      Catch::Contains("question q-year") && Catch::Contains("exactly one answer, it has 3"));
}

TEST_CASE("read_squad: malformed input names the source and the place") {
  CHECK_THAT(error_of("{\"data\": [}"), Catch::Contains("inline.json: invalid JSON"));
  CHECK_THAT(error_of("{\"version\": \"1.1\"}"),
             Catch::Contains("inline.json: top level: missing array 'data'"));
  const std::string no_question =
      R"({"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "x", "answers": []}]}]}]})";
  CHECK_THAT(error_of(no_question),
             Catch::Contains("data[0].paragraphs[0].qas[0]: missing 'question'"));
  const std::string bad_start =
      R"({"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "x", "question": "q",)"
      R"( "answers": [{"text": "b", "answer_start": "1"}]}]}]}]})";
  CHECK_THAT(error_of(bad_start),
             Catch::Contains("qas[0].answers[0]: 'answer_start' must be a character offset"));
  const std::string outside =
      R"({"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "x", "question": "q",)"
      R"( "answers": [{"text": "b c", "answer_start": 2}]}]}]}]})";
  CHECK_THAT(error_of(outside), Catch::Contains("question x: answer 'b c' at 2 lies outside"));
  CHECK_THROWS_WITH(read_squad(kFixtures / "missing.json"), Catch::Contains("cannot open"));
}

}  // namespace
}  // namespace electra
