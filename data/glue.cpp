#include "data/glue.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "data/glue_tsv.h"
#include "engine/error.h"

namespace electra {
namespace {

constexpr int kLast = -1;  // column index meaning "the row's final field"
constexpr int kNone = -2;  // the layout has no such column

// Where a file's fields are; see the table in glue.h.
struct TsvLayout {
  bool header;
  size_t min_columns, max_columns;
  int id, text_a, text_b, label;
};

TsvLayout layout_of(GlueTask task, bool labelled) {
  switch (task) {
    case GlueTask::kCoLA:
      return labelled ? TsvLayout{false, 4, 4, kNone, 3, kNone, 1}
                      : TsvLayout{true, 2, 2, 0, 1, kNone, kNone};
    case GlueTask::kSST2:
      return labelled ? TsvLayout{true, 2, 2, kNone, 0, kNone, 1}
                      : TsvLayout{true, 2, 2, 0, 1, kNone, kNone};
    case GlueTask::kMRPC:
      return labelled ? TsvLayout{true, 5, 5, kNone, 3, 4, 0}
                      : TsvLayout{true, 5, 5, 0, 3, 4, kNone};
    case GlueTask::kSTSB:
      return labelled ? TsvLayout{true, 10, 10, 0, 7, 8, 9} : TsvLayout{true, 9, 9, 0, 7, 8, kNone};
    case GlueTask::kQQP:
      return labelled ? TsvLayout{true, 6, 6, 0, 3, 4, 5} : TsvLayout{true, 3, 3, 0, 1, 2, kNone};
    case GlueTask::kMNLI:
      // train: ... sentence1, sentence2, label1, gold_label; dev adds label2..label5.
      return labelled ? TsvLayout{true, 12, 16, 0, 8, 9, kLast}
                      : TsvLayout{true, 10, 10, 0, 8, 9, kNone};
    case GlueTask::kQNLI:
    case GlueTask::kRTE:
    case GlueTask::kWNLI:
      return labelled ? TsvLayout{true, 4, 4, 0, 1, 2, 3} : TsvLayout{true, 3, 3, 0, 1, 2, kNone};
  }
  ELECTRA_CHECK(false, "unknown GlueTask ", static_cast<int>(task));
}

// The names a header line must give the columns read (text_a, text_b, label; "" where the layout
// has no such column or no header), so that one task's files are not read as another's.
struct HeaderNames {
  const char* text_a;
  const char* text_b;
  const char* label;
};

HeaderNames header_names(GlueTask task, bool labelled) {
  switch (task) {
    case GlueTask::kCoLA:
      return {labelled ? "" : "sentence", "", ""};
    case GlueTask::kSST2:
      return {"sentence", "", labelled ? "label" : ""};
    case GlueTask::kMRPC:
      return {"#1 String", "#2 String", labelled ? "Quality" : ""};
    case GlueTask::kSTSB:
      return {"sentence1", "sentence2", labelled ? "score" : ""};
    case GlueTask::kQQP:
      return {"question1", "question2", labelled ? "is_duplicate" : ""};
    case GlueTask::kMNLI:
      return {"sentence1", "sentence2", labelled ? "gold_label" : ""};
    case GlueTask::kQNLI:
      return {"question", "sentence", labelled ? "label" : ""};
    case GlueTask::kRTE:
    case GlueTask::kWNLI:
      return {"sentence1", "sentence2", labelled ? "label" : ""};
  }
  ELECTRA_CHECK(false, "unknown GlueTask ", static_cast<int>(task));
}

std::vector<GlueTaskInfo> make_task_infos() {
  using M = GlueMetric;
  const std::vector<std::string> binary = {"0", "1"};
  const std::vector<std::string> entail = {"entailment", "not_entailment"};
  const std::vector<std::string> dev = {"dev"};
  const std::vector<std::string> test = {"test"};
  return {
      {GlueTask::kCoLA, "CoLA", binary, 2, {M::kMatthews}, dev, test},
      {GlueTask::kSST2, "SST-2", binary, 2, {M::kAccuracy}, dev, test},
      {GlueTask::kMRPC, "MRPC", binary, 2, {M::kF1, M::kAccuracy}, dev, test},
      {GlueTask::kSTSB, "STS-B", {}, 1, {M::kPearson, M::kSpearman}, dev, test},
      {GlueTask::kQQP, "QQP", binary, 2, {M::kAccuracy, M::kF1}, dev, test},
      {GlueTask::kMNLI,
       "MNLI",
       {"contradiction", "entailment", "neutral"},
       3,
       {M::kAccuracy},
       {"dev_matched", "dev_mismatched"},
       {"test_matched", "test_mismatched"}},
      {GlueTask::kQNLI, "QNLI", entail, 2, {M::kAccuracy}, dev, test},
      {GlueTask::kRTE, "RTE", entail, 2, {M::kAccuracy}, dev, test},
      {GlueTask::kWNLI, "WNLI", binary, 2, {M::kAccuracy}, dev, test},
  };
}

std::string lower_alnum(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

const std::string& field(const TsvRow& row, int column) {
  return row.fields[column == kLast ? row.fields.size() - 1 : static_cast<size_t>(column)];
}

float parse_score(const std::string& text, const std::filesystem::path& path, size_t line) {
  float value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  ELECTRA_USER_CHECK(ec == std::errc() && ptr == end && std::isfinite(value), path.string(), ":",
                     line, ": score '", text, "' is not a number");
  return value;
}

void check_header(const TsvRow& row, const TsvLayout& layout, const HeaderNames& names,
                  const std::string& task, const std::filesystem::path& path) {
  const auto check = [&](int column, const char* name) {
    if (column == kNone || *name == '\0') return;
    const std::string& got = field(row, column);
    ELECTRA_USER_CHECK(got == name, path.string(), ":", row.line, ": the header names column ",
                       column == kLast ? row.fields.size() : static_cast<size_t>(column) + 1, " '",
                       got, "' where a ", task, " file has '", name, "': not a ", task,
                       " file (is --task right?)");
  };
  check(layout.text_a, names.text_a);
  check(layout.text_b, names.text_b);
  check(layout.label, names.label);
}

}  // namespace

const std::vector<GlueTask>& all_glue_tasks() {
  static const std::vector<GlueTask> tasks = {GlueTask::kCoLA, GlueTask::kSST2, GlueTask::kMRPC,
                                              GlueTask::kSTSB, GlueTask::kQQP,  GlueTask::kMNLI,
                                              GlueTask::kQNLI, GlueTask::kRTE,  GlueTask::kWNLI};
  return tasks;
}

const GlueTaskInfo& glue_task_info(GlueTask task) {
  static const std::vector<GlueTaskInfo> infos = make_task_infos();
  return infos.at(static_cast<size_t>(task));
}

std::string_view glue_metric_name(GlueMetric metric) {
  switch (metric) {
    case GlueMetric::kAccuracy:
      return "accuracy";
    case GlueMetric::kF1:
      return "f1";
    case GlueMetric::kMatthews:
      return "mcc";
    case GlueMetric::kPearson:
      return "pearson";
    case GlueMetric::kSpearman:
      return "spearman";
  }
  ELECTRA_CHECK(false, "unknown GlueMetric ", static_cast<int>(metric));
}

GlueTask parse_glue_task(std::string_view name) {
  std::vector<std::string> known;
  for (GlueTask task : all_glue_tasks()) {
    const std::string& official = glue_task_info(task).name;
    if (lower_alnum(name) == lower_alnum(official)) return task;
    known.push_back(official);
  }
  throw UserError(str_cat("unknown GLUE task '", name, "' (known: ", join(known), ")"));
}

std::vector<GlueExample> read_glue_file(GlueTask task, const std::filesystem::path& path,
                                        bool labelled) {
  const GlueTaskInfo& info = glue_task_info(task);
  const TsvLayout layout = layout_of(task, labelled);
  const std::vector<TsvRow> rows = read_tsv(path);
  ELECTRA_USER_CHECK(!layout.header || !rows.empty(), path.string(), ": empty file, expected a ",
                     info.name, " header line");
  std::vector<GlueExample> examples;
  examples.reserve(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const TsvRow& row = rows[r];
    const size_t n = row.fields.size();
    ELECTRA_USER_CHECK(n >= layout.min_columns && n <= layout.max_columns, path.string(), ":",
                       row.line, ": ", info.name, " row has ", n, " columns, expected ",
                       layout.min_columns,
                       layout.max_columns > layout.min_columns ? str_cat(" to ", layout.max_columns)
                                                               : std::string());
    if (layout.header && r == 0) {
      check_header(row, layout, header_names(task, labelled), info.name, path);
      continue;
    }
    GlueExample ex;
    ex.id = layout.id == kNone ? std::to_string(examples.size()) : field(row, layout.id);
    ex.text_a = field(row, layout.text_a);
    if (layout.text_b != kNone) ex.text_b = field(row, layout.text_b);
    if (layout.label != kNone) {
      const std::string& label = field(row, layout.label);
      ex.has_label = true;
      if (info.is_regression()) {
        ex.score = parse_score(label, path, row.line);
        ELECTRA_USER_CHECK(ex.score >= 0 && ex.score <= 5, path.string(), ":", row.line, ": score ",
                           label, " is outside [0, 5] (STS-B similarity scores)");
      } else {
        const auto& names = info.label_names;
        ex.label = -1;
        for (size_t i = 0; i < names.size(); ++i) {
          if (names[i] == label) ex.label = static_cast<int32_t>(i);
        }
        ELECTRA_USER_CHECK(ex.label >= 0, path.string(), ":", row.line, ": unknown ", info.name,
                           " label '", label, "' (expected one of: ", join(names), ")");
      }
    }
    examples.push_back(std::move(ex));
  }
  return examples;
}

std::vector<GlueExample> read_glue_split(GlueTask task, const std::filesystem::path& task_dir,
                                         std::string_view split) {
  const bool labelled = split.substr(0, 4) != "test";
  return read_glue_file(task, task_dir / (std::string(split) + ".tsv"), labelled);
}

}  // namespace electra
