// Parses the real GLUE train and dev files in ../shared/data/glue completely (the executable is
// skipped when ../shared/data is absent) and checks the row counts of the GLUE release.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "data/glue.h"

namespace electra {
namespace {

const std::filesystem::path kGlue = std::filesystem::path(ELECTRA_SHARED_DIR) / "data" / "glue";

struct Expected {
  GlueTask task;
  size_t train, dev;
};

TEST_CASE("real GLUE files parse completely with the release's row counts") {
  const Expected expected[] = {{GlueTask::kCoLA, 8551, 1043}, {GlueTask::kSST2, 67349, 872},
                               {GlueTask::kMRPC, 3668, 408},  {GlueTask::kSTSB, 5749, 1500},
                               {GlueTask::kRTE, 2490, 277},   {GlueTask::kWNLI, 635, 71}};
  for (const Expected& e : expected) {
    const GlueTaskInfo& info = glue_task_info(e.task);
    INFO(info.name);
    const auto dir = kGlue / info.name;
    const auto train = read_glue_split(e.task, dir, "train");
    const auto dev = read_glue_split(e.task, dir, "dev");
    CHECK(train.size() == e.train);
    CHECK(dev.size() == e.dev);
    for (const auto* split : {&train, &dev}) {
      for (const GlueExample& ex : *split) {
        REQUIRE(ex.has_label);
        REQUIRE(!ex.text_a.empty());
        if (info.is_regression()) {
          REQUIRE(ex.score >= 0.0f);
          REQUIRE(ex.score <= 5.0f);
        } else {
          REQUIRE(ex.label >= 0);
          REQUIRE(ex.label < info.num_classes);
        }
      }
    }
  }
}

TEST_CASE("real GLUE label distributions match the files") {
  // Counted with awk on the files: CoLA train has 6023 acceptable (1) sentences, RTE train 1249
  // entailment (label 0), WNLI train 312 label-1 pairs.
  const auto count = [](const std::vector<GlueExample>& examples, int32_t label) {
    size_t n = 0;
    for (const auto& ex : examples) n += ex.label == label;
    return n;
  };
  CHECK(count(read_glue_split(GlueTask::kCoLA, kGlue / "CoLA", "train"), 1) == 6023);
  CHECK(count(read_glue_split(GlueTask::kRTE, kGlue / "RTE", "train"), 0) == 1249);
  CHECK(count(read_glue_split(GlueTask::kWNLI, kGlue / "WNLI", "train"), 1) == 312);
  const auto mrpc = read_glue_split(GlueTask::kMRPC, kGlue / "MRPC", "dev");
  CHECK(mrpc[0].text_a ==
        "He said the foodservice pie business doesn 't fit the company 's long-term growth "
        "strategy .");
}

}  // namespace
}  // namespace electra
