// Fuzz harness: the GLUE TSV reader (data/glue.h). The first input byte picks the task and
// whether the file is labelled (train/dev) or not (test); the rest is the file.
#include "data/glue.h"
#include "engine/error.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& tasks = electra::all_glue_tasks();
  const electra::GlueTask task = tasks[data[0] % tasks.size()];
  const bool labelled = (data[0] / tasks.size()) % 2 == 0;
  const std::string path = electra::fuzz::write_input(data + 1, size - 1, ".tsv");
  try {
    electra::read_glue_file(task, path, labelled);
  } catch (const electra::UserError&) {
  }
  return 0;
}
