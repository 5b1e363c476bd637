// GLUE readers on small fixtures in each task's real layout (test/fixtures/glue), quirks included:
// CoLA without header and without a final newline, SST-2's trailing space, MRPC's BOM, STS-B's
// float score, QQP's CRLF dev file, MNLI's 12/16-column rows, unbalanced quotes in QNLI and RTE.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "data/glue.h"
#include "data/glue_tsv.h"
#include "engine/error.h"

namespace electra {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(ELECTRA_SOURCE_DIR) / "test" / "fixtures" / "glue";

std::vector<GlueExample> read(GlueTask task, const std::string& split) {
  return read_glue_split(task, kFixtures / glue_task_info(task).name, split);
}

// The UserError message of reading `file` as `task`, or "" when it parses.
std::string error_of(GlueTask task, const std::string& file) {
  try {
    read_glue_file(task, kFixtures / "malformed" / file, true);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("split_tsv: BOM, CRLF, missing final newline, TAB-only splitting") {
  const auto rows = split_tsv("\xEF\xBB\xBFh1\th2\r\na \"b\t\"c\n\nlast\t");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].fields == std::vector<std::string>{"h1", "h2"});
  CHECK(rows[1].line == 2);
  CHECK(rows[1].fields == std::vector<std::string>{"a \"b", "\"c"});
  CHECK(rows[2].fields == std::vector<std::string>{""});  // an empty line is a 1-field row
  CHECK(rows[3].line == 4);
  CHECK(rows[3].fields == std::vector<std::string>{"last", ""});
  CHECK(split_tsv("a\n").size() == 1);  // no row after the final newline
}

TEST_CASE("CoLA: no header, label in column 1, dev.tsv without final newline") {
  const auto train = read(GlueTask::kCoLA, "train");
  REQUIRE(train.size() == 3);
  CHECK(train[0].id == "0");
  CHECK(train[0].text_a ==
        "Our friends won't buy this analysis, let alone the next one we propose.");
  CHECK(!train[0].text_b);
  CHECK(train[0].label == 1);
  CHECK(train[1].text_a == "They drank the pub.");
  CHECK(train[1].label == 0);
  CHECK(train[2].id == "2");
  const auto dev = read(GlueTask::kCoLA, "dev");
  REQUIRE(dev.size() == 2);
  CHECK(dev[1].text_a == "John talked to Bill about himself himself.");  // last line, no newline
  CHECK(dev[1].label == 0);
  const auto test = read(GlueTask::kCoLA, "test");
  REQUIRE(test.size() == 2);
  CHECK(test[1].id == "1");
  CHECK(test[1].text_a == "The car honked down the road.");
  CHECK(!test[1].has_label);
  CHECK(test[1].label == -1);
}

TEST_CASE("SST-2: the trailing space before the tab stays in the text") {
  const auto train = read(GlueTask::kSST2, "train");
  REQUIRE(train.size() == 4);
  CHECK(train[1].text_a == "a patient viewer ");
  CHECK(train[1].label == 1);
  CHECK(train[3].label == 0);
  const auto test = read(GlueTask::kSST2, "test");
  REQUIRE(test.size() == 1);
  CHECK(test[0].id == "0");
  CHECK(test[0].text_a == "uneasy mishmash of styles and genres . ");
}

TEST_CASE("MRPC: header with a BOM, quality first, the two strings last") {
  const auto train = read(GlueTask::kMRPC, "train");
  REQUIRE(train.size() == 2);
  CHECK(train[0].label == 1);
  CHECK(train[0].text_a.rfind("Amrozi accused his brother , whom he called \" the witness", 0) ==
        0);
  CHECK(*train[1].text_b ==
        "Yucaipa bought Dominick 's in 1995 for $ 693 million and sold it to Safeway for $ 1.8 "
        "billion in 1998 .");
  CHECK(train[1].label == 0);
  REQUIRE(read(GlueTask::kMRPC, "dev").size() == 1);
  const auto test = read(GlueTask::kMRPC, "test");
  REQUIRE(test.size() == 1);
  CHECK(test[0].id == "0");
  CHECK(test[0].text_b->rfind("Current Chief Operating Officer", 0) == 0);
}

TEST_CASE("STS-B: ten columns, float score last; nine in test") {
  const auto train = read(GlueTask::kSTSB, "train");
  REQUIRE(train.size() == 3);
  CHECK(train[1].id == "1");
  CHECK(train[1].text_a == "A man is playing a large flute.");
  CHECK(*train[1].text_b == "A man is playing a flute.");
  CHECK(train[1].score == 3.8f);
  CHECK(train[1].label == -1);
  CHECK(train[2].score == 0.0f);
  CHECK(train[2].has_label);
  CHECK(read(GlueTask::kSTSB, "dev")[1].score == 4.75f);
  const auto test = read(GlueTask::kSTSB, "test");
  REQUIRE(test.size() == 1);
  CHECK(*test[0].text_b == "A girl is brushing her hair.");
  CHECK(!test[0].has_label);
}

TEST_CASE("QQP: id, qid1, qid2, question1, question2, is_duplicate; CRLF dev file") {
  const auto train = read(GlueTask::kQQP, "train");
  REQUIRE(train.size() == 2);
  CHECK(train[1].id == "402555");
  CHECK(train[1].text_a == "How do I control my horny emotions?");
  CHECK(*train[1].text_b == "How do you control your horniness?");
  CHECK(train[1].label == 1);
  const auto dev = read(GlueTask::kQQP, "dev");
  REQUIRE(dev.size() == 3);
  CHECK(dev[0].label == 0);  // "0\r" would be an unknown label
  CHECK(dev[2].label == 1);
  CHECK(*dev[2].text_b == "What are some reasons to travel alone?");
  const auto test = read(GlueTask::kQQP, "test");
  REQUIRE(test.size() == 1);
  CHECK(test[0].text_a == "How does the Surface Pro himself 4 compare with iPad Pro?");
}

TEST_CASE("MNLI: sentence1/2 at columns 8/9, gold_label last in 12- and 16-column files") {
  const auto& info = glue_task_info(GlueTask::kMNLI);
  CHECK(info.label_names == std::vector<std::string>{"contradiction", "entailment", "neutral"});
  CHECK(info.dev_splits == std::vector<std::string>{"dev_matched", "dev_mismatched"});
  const auto train = read(GlueTask::kMNLI, "train");
  REQUIRE(train.size() == 4);
  CHECK(train[0].text_a ==
        "Conceptually cream skimming has two basic dimensions - product and geography.");
  CHECK(*train[0].text_b == "Product and geography are what make cream skimming work. ");
  CHECK(train[0].label == 2);
  CHECK(train[1].label == 1);
  CHECK(train[3].label == 0);
  const auto matched = read(GlueTask::kMNLI, "dev_matched");
  REQUIRE(matched.size() == 2);
  CHECK(matched[0].label == 2);  // label1 is "neutral" too, label2 "entailment": gold is last
  CHECK(matched[1].label == 0);
  const auto mismatched = read(GlueTask::kMNLI, "dev_mismatched");
  REQUIRE(mismatched.size() == 3);
  CHECK(mismatched[2].label == 1);
  CHECK(*mismatched[2].text_b == "We serve a meal of Florentine terrine.");
  const auto test = read(GlueTask::kMNLI, "test_matched");
  REQUIRE(test.size() == 1);
  CHECK(*test[0].text_b == "Hierbas is a name worth looking out for.");
}

TEST_CASE("QNLI and RTE: unbalanced quotes do not merge fields") {
  const auto qnli = read(GlueTask::kQNLI, "train");
  REQUIRE(qnli.size() == 3);
  CHECK(qnli[2].text_a == "What did the \"Happy\" singer say?");
  CHECK(*qnli[2].text_b == "He said \"it was wonderful and the crowd sang along.");
  CHECK(qnli[2].label == 0);
  CHECK(qnli[0].label == 1);
  CHECK(read(GlueTask::kQNLI, "dev").size() == 1);
  CHECK(read(GlueTask::kQNLI, "test")[0].text_b->find("\"quiescent\"") != std::string::npos);
  const auto rte = read(GlueTask::kRTE, "train");
  REQUIRE(rte.size() == 3);
  CHECK(rte[1].text_a.rfind("He said: \"No democratic government", 0) == 0);
  CHECK(*rte[1].text_b == "Greenpeace director said that peace is terrorism.");
  CHECK(rte[1].label == 1);
  CHECK(rte[2].label == 0);
  const auto rte_dev = read(GlueTask::kRTE, "dev");
  REQUIRE(rte_dev.size() == 2);
  CHECK(rte_dev[1].text_a == "The \"Sun\" reported it\"s true.");
}

TEST_CASE("WNLI: 0/1 labels") {
  const auto train = read(GlueTask::kWNLI, "train");
  REQUIRE(train.size() == 4);
  CHECK(train[3].id == "3");
  CHECK(*train[3].text_b == "Steve influences him hugely.");
  CHECK(train[3].label == 0);
  CHECK(train[0].label == 1);
  CHECK(read(GlueTask::kWNLI, "test").size() == 1);
}

TEST_CASE("task metadata: label order, classes, metrics, names") {
  CHECK(glue_task_info(GlueTask::kRTE).label_names ==
        std::vector<std::string>{"entailment", "not_entailment"});
  CHECK(glue_task_info(GlueTask::kQNLI).label_names ==
        std::vector<std::string>{"entailment", "not_entailment"});
  CHECK(glue_task_info(GlueTask::kSTSB).num_classes == 1);
  CHECK(glue_task_info(GlueTask::kSTSB).is_regression());
  CHECK(glue_task_info(GlueTask::kMNLI).num_classes == 3);
  CHECK(glue_task_info(GlueTask::kCoLA).metrics == std::vector<GlueMetric>{GlueMetric::kMatthews});
  CHECK(glue_task_info(GlueTask::kMRPC).metrics ==
        std::vector<GlueMetric>{GlueMetric::kF1, GlueMetric::kAccuracy});
  CHECK(glue_metric_name(GlueMetric::kSpearman) == "spearman");
  for (GlueTask task : all_glue_tasks()) {
    CHECK(glue_task_info(task).task == task);
    CHECK(parse_glue_task(glue_task_info(task).name) == task);
  }
  CHECK(parse_glue_task("sst2") == GlueTask::kSST2);
  CHECK(parse_glue_task("sts-b") == GlueTask::kSTSB);
  CHECK_THROWS_WITH(parse_glue_task("squad"),
                    Catch::Contains("unknown GLUE task 'squad'") && Catch::Contains("MNLI"));
}

TEST_CASE("malformed rows name the file and the line") {
  const std::string columns = error_of(GlueTask::kCoLA, "CoLA_columns.tsv");
  CHECK_THAT(columns, Catch::Contains("CoLA_columns.tsv:2:") &&
                          Catch::Contains("has 3 columns, expected 4"));
  const std::string label = error_of(GlueTask::kRTE, "RTE_label.tsv");
  CHECK_THAT(label, Catch::Contains("RTE_label.tsv:3:") &&
                        Catch::Contains("unknown RTE label 'contradiction'"));
  const std::string score = error_of(GlueTask::kSTSB, "STS-B_score.tsv");
  CHECK_THAT(score, Catch::Contains("STS-B_score.tsv:4:") && Catch::Contains("'4.x'"));
  const std::string mnli = error_of(GlueTask::kMNLI, "MNLI_columns.tsv");
  CHECK_THAT(mnli, Catch::Contains("MNLI_columns.tsv:2:") &&
                       Catch::Contains("has 10 columns, expected 12 to 16"));
  const std::string range = error_of(GlueTask::kSTSB, "STS-B_range.tsv");
  CHECK_THAT(range, Catch::Contains("STS-B_range.tsv:3:") &&
                        Catch::Contains("score 5.5 is outside [0, 5]"));
  CHECK_THROWS_WITH(read(GlueTask::kCoLA, "no_such_split"),
                    Catch::Contains("cannot open") && Catch::Contains("no_such_split.tsv"));
}

TEST_CASE("one task's files are refused as another's by their header") {
  // QNLI's "question" and "sentence" columns where RTE has "sentence1" and "sentence2".
  CHECK_THROWS_WITH(read_glue_split(GlueTask::kRTE, kFixtures / "QNLI", "train"),
                    Catch::Contains("QNLI/train.tsv:1:") && Catch::Contains("'question'") &&
                        Catch::Contains("not a RTE file"));
  CHECK_THROWS_WITH(read_glue_split(GlueTask::kQNLI, kFixtures / "RTE", "test"),
                    Catch::Contains("RTE/test.tsv:1:") && Catch::Contains("not a QNLI file"));
  CHECK_THROWS_WITH(read_glue_split(GlueTask::kSST2, kFixtures / "STS-B", "dev"),
                    Catch::Contains("columns"));
  CHECK_THROWS_WITH(read_glue_split(GlueTask::kQQP, kFixtures / "MNLI", "dev_matched"),
                    Catch::Contains("columns"));
  // Every task reads its own files (the fixtures hold MNLI's matched test split only).
  for (GlueTask task : all_glue_tasks()) {
    const GlueTaskInfo& info = glue_task_info(task);
    CHECK_NOTHROW(read(task, "train"));
    CHECK_NOTHROW(read(task, info.dev_splits.front()));
    CHECK_NOTHROW(read(task, info.test_splits.front()));
  }
}

}  // namespace
}  // namespace electra
