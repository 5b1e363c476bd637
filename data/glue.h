// GLUE task readers. Each task is read from its standard TSV files (train.tsv, dev.tsv or, for
// MNLI, dev_matched.tsv / dev_mismatched.tsv, and test*.tsv without labels) into examples
// {id, text_a, text_b, label}, with per-task metadata: label names in the official order, the
// number of classes (1 for the STS-B regression) and the task's metrics.
//
// Column layouts (0-based; "last" = the row's final field):
//   task   labelled (train/dev)                         unlabelled (test)
//   CoLA   no header, 4 cols: a=3 label=1               header, 2 cols: id=0 a=1
//   SST-2  header, 2 cols: a=0 label=1                  header, 2 cols: id=0 a=1
//   MRPC   header (with BOM), 5 cols: label=0 a=3 b=4   header, 5 cols: id=0 a=3 b=4
//   STS-B  header, 10 cols: id=0 a=7 b=8 score=9        header, 9 cols: id=0 a=7 b=8
//   QQP    header, 6 cols: id=0 a=3 b=4 label=5         header, 3 cols: id=0 a=1 b=2
//   MNLI   header, 12 (train) to 16 (dev) cols:         header, 10 cols: id=0 a=8 b=9
//          id=0 a=8 b=9 label=last (gold_label)
//   QNLI, RTE, WNLI  header, 4 cols: id=0 a=1 b=2 label=3   header, 3 cols: id=0 a=1 b=2
// A file without an id column numbers its examples 0, 1, ... instead.
// Any malformed row (wrong column count, unknown label, unparsable score or one outside [0, 5]) and
// a header whose read columns are not named as in the task's files (QNLI's "question" read as RTE's
// "sentence1") is a UserError naming the file and the line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace electra {

enum class GlueTask { kCoLA, kSST2, kMRPC, kSTSB, kQQP, kMNLI, kQNLI, kRTE, kWNLI };

enum class GlueMetric { kAccuracy, kF1, kMatthews, kPearson, kSpearman };

struct GlueTaskInfo {
  GlueTask task;
  std::string name;  // the directory name in the GLUE release: "CoLA", "SST-2"...
  std::vector<std::string> label_names;  // official order: label index i is label_names[i]
  int num_classes;                       // 1 for regression (STS-B)
  std::vector<GlueMetric> metrics;       // the first is the one GLUE ranks by
  std::vector<std::string> dev_splits;   // {"dev"}, or {"dev_matched", "dev_mismatched"} for MNLI
  std::vector<std::string> test_splits;  // likewise for test

  bool is_regression() const { return num_classes == 1; }
};

struct GlueExample {
  std::string id;  // the row's id column, or its 0-based number without one
  std::string text_a;
  std::optional<std::string> text_b;  // absent for single-sentence tasks (CoLA, SST-2)
  int32_t label = -1;                 // class index into label_names; -1 for regression or test
  float score = 0;                    // regression target (STS-B, in [0, 5]); 0 otherwise
  bool has_label = false;             // false for test files
};

const std::vector<GlueTask>& all_glue_tasks();
const GlueTaskInfo& glue_task_info(GlueTask task);
std::string_view glue_metric_name(GlueMetric metric);  // "accuracy", "f1", "mcc", ...

// Case-insensitive, with or without the dash: "CoLA", "sst-2", "sst2", "STS-B", "mnli"...
// Throws UserError listing the known names otherwise.
GlueTask parse_glue_task(std::string_view name);

// Reads one TSV file of `task` in its labelled (train/dev) or unlabelled (test) layout.
std::vector<GlueExample> read_glue_file(GlueTask task, const std::filesystem::path& path,
                                        bool labelled);

// Reads `<task_dir>/<split>.tsv` ("train", "dev", "dev_matched", "test", ...); splits whose name
// starts with "test" are unlabelled.
std::vector<GlueExample> read_glue_split(GlueTask task, const std::filesystem::path& task_dir,
                                         std::string_view split);

}  // namespace electra
