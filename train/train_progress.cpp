#include "train/train_progress.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "engine/safetensors.h"

namespace electra {

void UpdateMetrics::add(const StepMetrics& m) {
  mean.gen_loss += m.gen_loss;
  mean.gen_accuracy += m.gen_accuracy;
  mean.disc_loss += m.disc_loss;
  mean.disc_accuracy += m.disc_accuracy;
  mean.disc_precision += m.disc_precision;
  mean.disc_recall += m.disc_recall;
  mean.replaced_fraction += m.replaced_fraction;
  mean.total_loss += m.total_loss;
  mean.masked += m.masked;
  mean.tokens += m.tokens;
  ++micro_batches;
}

StepMetrics UpdateMetrics::average() const {
  StepMetrics a = mean;
  if (micro_batches == 0) return a;
  const double n = micro_batches;
  a.gen_loss /= n;
  a.gen_accuracy /= n;
  a.disc_loss /= n;
  a.disc_accuracy /= n;
  a.disc_precision /= n;
  a.disc_recall /= n;
  a.replaced_fraction /= n;
  a.total_loss /= n;
  return a;  // masked and tokens stay totals over the update
}

namespace {

// The update a metrics.jsonl line records ({"step": N, ...}); -1 when the line has none.
int64_t line_step(const std::string& line) {
  const std::string key = "{\"step\": ";
  if (line.rfind(key, 0) != 0) return -1;
  char* end = nullptr;
  const long long step = std::strtoll(line.c_str() + key.size(), &end, 10);
  return end == line.c_str() + key.size() ? -1 : step;
}

}  // namespace

void truncate_metrics(const std::string& metrics_path, int64_t start_step) {
  std::ifstream in(metrics_path);
  if (!in) return;  // a new run: nothing to cut
  std::string kept, discarded, line;
  while (std::getline(in, line)) {
    (line_step(line) <= start_step ? kept : discarded) += line + "\n";
  }
  in.close();
  if (discarded.empty()) return;
  const std::string discarded_path = metrics_path + ".discarded";
  std::FILE* out = std::fopen(discarded_path.c_str(), "a");
  const bool saved = out != nullptr && std::fputs(discarded.c_str(), out) >= 0;
  ELECTRA_USER_CHECK(out != nullptr && std::fclose(out) == 0 && saved, discarded_path,
                     ": cannot write the metrics of the updates after step ", start_step);
  write_file_atomic(metrics_path, kept);
}

ProgressReporter::ProgressReporter(const ProgressConfig& config, const std::string& metrics_path,
                                   int64_t start_step)
    : config_(config), metrics_path_(metrics_path) {
  ELECTRA_USER_CHECK(!std::filesystem::is_directory(metrics_path), metrics_path,
                     ": is a directory, expected the metrics file");
  truncate_metrics(metrics_path, start_step);
  metrics_ = std::fopen(metrics_path.c_str(), "a");
  ELECTRA_USER_CHECK(metrics_ != nullptr, metrics_path, ": cannot open for writing");
}

ProgressReporter::~ProgressReporter() {
  if (metrics_ != nullptr) std::fclose(metrics_);
}

std::string ProgressReporter::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  }
  return buf;
}

void ProgressReporter::record(int64_t step, const StepMetrics& m, double lr, double grad_norm,
                              double seconds) {
  const bool two_stage = config_.generator_steps > 0;
  const int stage = two_stage && step > config_.generator_steps ? 2 : 1;
  window_seconds_ += seconds;
  window_flops_ += stage == 2 ? config_.stage2_flops_per_step : config_.flops_per_step;
  total_seconds_ += seconds;
  ++window_steps_;
  if (step % config_.every != 0 && step != config_.total_steps) return;
  const double per_step = window_seconds_ / static_cast<double>(window_steps_);
  const double seq_per_s = config_.sequences_per_step / per_step;
  const double tok_per_s = config_.tokens_per_step / per_step;
  const double flops_per_s = window_flops_ / window_seconds_;
  const double eta = per_step * static_cast<double>(config_.total_steps - step);
  char mfu[32] = "";
  if (config_.peak_flops > 0) {
    std::snprintf(mfu, sizeof mfu, " (MFU %.1f%%)", 100.0 * flops_per_s / config_.peak_flops);
  }
  char mlm[64] = "";
  if (config_.mlm) {
    std::snprintf(mlm, sizeof mlm, " | mlm loss %.4f acc %.3f", m.mlm_loss, m.mlm_accuracy);
  }
  // generator_training: adversarial: the mean reward of the samples and the baseline's loss.
  char reward[64] = "", reward_json[80] = "";
  if (config_.adversarial) {
    std::snprintf(reward, sizeof reward, " | reward %.4f baseline loss %.4f", m.reward,
                  m.baseline_loss);
    std::snprintf(reward_json, sizeof reward_json, "\"reward\": %.6g, \"baseline_loss\": %.6g, ",
                  m.reward, m.baseline_loss);
  }
  char stage_text[48] = "";
  char stage_json[24] = "";  // after "step", which truncate_metrics reads first
  if (two_stage) {
    std::snprintf(stage_text, sizeof stage_text, "stage %d (%s) | ", stage,
                  stage == 1 ? "generator" : "discriminator");
    std::snprintf(stage_json, sizeof stage_json, "\"stage\": %d, ", stage);
  }
  std::fprintf(stderr,
               "%sstep %lld/%lld | gen loss %.4f acc %.3f%s | disc loss %.4f acc %.3f%s | replaced "
               "%.3f | lr %.3e | grad norm %.3f | %.1f seq/s %.0f tok/s | %.2f TFLOP/s%s | "
               "ETA %s\n",
               stage_text, static_cast<long long>(step),
               static_cast<long long>(config_.total_steps), m.gen_loss, m.gen_accuracy, reward,
               m.disc_loss, m.disc_accuracy, mlm, m.replaced_fraction, lr, grad_norm, seq_per_s,
               tok_per_s, flops_per_s / 1e12, mfu, format_duration(eta).c_str());
  std::fprintf(metrics_,
               "{\"step\": %lld, %s\"gen_loss\": %.6g, \"gen_acc\": %.6g, \"disc_loss\": %.6g, "
               "\"disc_acc\": %.6g, \"disc_precision\": %.6g, \"disc_recall\": %.6g, "
               "\"replaced_frac\": %.6g, \"mlm_loss\": %.6g, \"mlm_acc\": %.6g, "
               "%s\"total_loss\": %.6g, \"lr\": %.6g, \"grad_norm\": "
               "%.6g, \"seq_per_s\": %.6g, \"tokens_per_s\": %.6g, \"tflops\": %.6g, "
               "\"step_seconds\": %.6g}\n",
               static_cast<long long>(step), stage_json, m.gen_loss, m.gen_accuracy, m.disc_loss,
               m.disc_accuracy, m.disc_precision, m.disc_recall, m.replaced_fraction, m.mlm_loss,
               m.mlm_accuracy, reward_json, m.total_loss, lr, grad_norm, seq_per_s, tok_per_s,
               flops_per_s / 1e12, per_step);
  ELECTRA_USER_CHECK(std::fflush(metrics_) == 0, metrics_path_, ": write failed (disk full?)");
  window_seconds_ = 0;
  window_flops_ = 0;
  window_steps_ = 0;
}

}  // namespace electra
