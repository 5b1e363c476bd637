// Robustness below the command line: the run-directory lock, metrics.jsonl truncation on
// resume, the shard set a resume must match and the trainer state's counters. The commands
// themselves are exercised by test/bad_input.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "apps/run_lock.h"
#include "engine/error.h"
#include "train/train_progress.h"
#include "train/trainer_checkpoint.h"

using namespace electra;
using namespace electra::apps;
namespace fs = std::filesystem;

namespace {

struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("a run directory is locked by one run at a time", "[robustness][lock]") {
  ScratchDir dir("electra_lock");
  const std::string run = (dir.path / "run").string();
  {
    const RunDirLock first(run);
    // flock() locks an open file description: a second open in this process conflicts as a
    // second process would.
    CHECK_THROWS_WITH(RunDirLock(run), Catch::StartsWith(run + ": in use by another run (PID " +
                                                         std::to_string(::getpid()) + ","));
  }
  CHECK_NOTHROW(RunDirLock(run));  // released with its holder
}

TEST_CASE("taking the lock removes what a dead run left half-written", "[robustness][lock]") {
  ScratchDir dir("electra_stale");
  fs::create_directories(dir.path / ".checkpoint-00000040.tmp" / "discriminator");
  write_text(dir.path / "metrics.jsonl.tmp.12345", "x");
  fs::create_directories(dir.path / "checkpoint-00000020");
  write_text(dir.path / "metrics.jsonl", "{}\n");
  const RunDirLock lock(dir.path.string());
  CHECK_FALSE(fs::exists(dir.path / ".checkpoint-00000040.tmp"));
  CHECK_FALSE(fs::exists(dir.path / "metrics.jsonl.tmp.12345"));
  CHECK(fs::exists(dir.path / "checkpoint-00000020"));
  CHECK(read_text(dir.path / "metrics.jsonl") == "{}\n");
}

TEST_CASE("a resume truncates metrics.jsonl to its step", "[robustness][metrics]") {
  ScratchDir dir("electra_metrics");
  const fs::path path = dir.path / "metrics.jsonl";
  write_text(path,
             "{\"step\": 10, \"gen_loss\": 1}\n{\"step\": 20, \"gen_loss\": 2}\n"
             "{\"step\": 30, \"gen_loss\": 3}\n{\"step\": 40, \"gen_loss\": 4}\n");
  truncate_metrics(path.string(), 20);
  CHECK(read_text(path) == "{\"step\": 10, \"gen_loss\": 1}\n{\"step\": 20, \"gen_loss\": 2}\n");
  CHECK(read_text(dir.path / "metrics.jsonl.discarded") ==
        "{\"step\": 30, \"gen_loss\": 3}\n{\"step\": 40, \"gen_loss\": 4}\n");
  truncate_metrics(path.string(), 20);  // nothing more to cut
  CHECK(read_text(dir.path / "metrics.jsonl.discarded").size() == 56);
  truncate_metrics((dir.path / "absent.jsonl").string(), 0);
  CHECK_FALSE(fs::exists(dir.path / "absent.jsonl"));
}

TEST_CASE("a resume on other data is refused, naming what changed", "[robustness][resume]") {
  TrainerState saved;
  saved.shards = {{"shard-00000.bin", 6464, 0xabc, 100}, {"shard-00001.bin", 3264, 0xdef, 50}};
  saved.cursor.position = 120;
  CHECK_NOTHROW(check_resume_data(saved, saved.shards, "run/checkpoint-00000010"));
  CHECK_NOTHROW(check_data_position(saved, 150, "run/checkpoint-00000010"));
  auto now = saved.shards;
  now.push_back({"shard-00002.bin", 64, 0x1, 1});
  CHECK_THROWS_WITH(check_resume_data(saved, now, "run/checkpoint-00000010"),
                    Catch::StartsWith("run/checkpoint-00000010/trainer_state.json: the run's data "
                                      "differs") &&
                        Catch::Contains("shard-00002.bin was added"));
  now = saved.shards;
  now[1].checksum = 0x123;
  CHECK_THROWS_WITH(check_resume_data(saved, now, "c"), Catch::Contains("shard-00001.bin changed"));
  now.pop_back();
  CHECK_THROWS_WITH(check_resume_data(saved, now, "c"),
                    Catch::Contains("shard-00001.bin was removed"));
  now = {saved.shards[1], saved.shards[0]};
  CHECK_THROWS_WITH(check_resume_data(saved, now, "c"), Catch::Contains("order changed"));
  CHECK_THROWS_WITH(check_data_position(saved, 100, "c"),
                    Catch::Contains("data_position 120 is beyond the data's 100 examples"));
}

TEST_CASE("trainer-state counters must be integers below 2^32", "[robustness][resume]") {
  ScratchDir dir("electra_state");
  const std::string good =
      R"({"step": 5, "data_epoch": 0, "data_position": 40, "seed": 1, "config_hash": "7",)"
      R"( "config": "x"})";
  write_text(dir.path / "trainer_state.json", good);
  CHECK(read_trainer_state(dir.path.string()).step == 5);
  for (const char* bad : {"1e15", "4294967296", "-1", "2.5"}) {
    std::string text = good;
    text.replace(text.find("5,"), 1, bad);
    write_text(dir.path / "trainer_state.json", text);
    CHECK_THROWS_WITH(read_trainer_state(dir.path.string()),
                      Catch::Contains("trainer_state.json: step must be an integer in [0, 2^32)"));
  }
}

TEST_CASE("a resume on other kernels is said: device, or model.attention or fused_layers on a GPU",
          "[robustness][resume]") {
  ScratchDir dir("electra_state");
  const std::string base =
      R"({"step": 5, "data_epoch": 0, "data_position": 40, "seed": 1, "config_hash": "7",)"
      R"( "config": "x")";
  write_text(dir.path / "trainer_state.json", base + "}");
  const TrainerState old = read_trainer_state(dir.path.string());  // before the fields existed
  CHECK(old.device.empty());
  CHECK(old.fused_layers);
  const std::string h100 = "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)";
  write_text(dir.path / "trainer_state.json",
             base + R"(, "device": ")" + h100 + R"(", "attention": "flash_ds"})");
  const TrainerState saved = read_trainer_state(dir.path.string());
  CHECK(saved.device == h100);
  CHECK(saved.attention == "flash_ds");

  TrainerState now = saved;
  CHECK(resume_bits_note(saved, now).empty());
  CHECK(resume_bits_note(old, now).empty());  // an older checkpoint does not say
  now.attention = "auto";
  CHECK(resume_bits_note(saved, now) ==
        "the checkpoint was computed on " + h100 + " with model.attention flash_ds, this run on " +
            h100 +
            " with model.attention auto: the updates from here on are not the bits an "
            "uninterrupted run would give");
  now.attention = "flash_ds";
  now.fused_layers = false;
  CHECK(resume_bits_note(saved, now) ==
        "the checkpoint was computed on " + h100 + " with model.attention flash_ds, this run on " +
            h100 +
            " with model.attention flash_ds and model.fused_layers false: the updates from here on "
            "are not the bits an uninterrupted run would give");
  write_text(
      dir.path / "trainer_state.json",
      base + R"(, "device": ")" + h100 + R"(", "attention": "auto", "fused_layers": false})");
  CHECK_FALSE(read_trainer_state(dir.path.string()).fused_layers);
  now.fused_layers = true;
  now.device = "NVIDIA A100-SXM4-80GB (sm_80, 79 GiB)";  // another kind of GPU
  CHECK_THAT(resume_bits_note(saved, now), Catch::Contains("this run on NVIDIA A100"));
  now.device = "cpu";
  CHECK_THAT(resume_bits_note(saved, now), Catch::Contains("this run on the CPU:"));
  TrainerState cpu = now;
  cpu.attention = "flash";  // the CPU ignores model.attention and model.fused_layers
  cpu.fused_layers = false;
  CHECK(resume_bits_note(now, cpu).empty());
}
