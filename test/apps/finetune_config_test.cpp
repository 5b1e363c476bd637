// finetune.attention (apps/finetune_config.h): the GPU's attention kernels for fine-tuning, read
// as model.attention is (auto by default, in both shipped configs too), refused by name when
// unknown, carried by model_options into the fine-tuned encoder (ElectraFinetuner), and stated by
// the start-up line (attention_note).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "apps/finetune_common.h"
#include "apps/finetune_config.h"
#include "data/vocab.h"
#include "engine/error.h"
#include "test/common/test_util.h"

using namespace electra;
using namespace electra::apps;
namespace fs = std::filesystem;

namespace {

FinetuneSettings read(const std::string& path, const std::vector<std::string>& overrides = {}) {
  return read_finetune_config(path, overrides, {"rte", "sts-b"}).for_task("rte");
}

}  // namespace

TEST_CASE("finetune.attention picks the GPU's attention of the fine-tuned encoder", "[config]") {
  const std::string glue = std::string(ELECTRA_SOURCE_DIR) + "/configs/glue.yaml";
  const std::string squad = std::string(ELECTRA_SOURCE_DIR) + "/configs/squad.yaml";
  CHECK(read(glue).attention == AttentionImpl::kAuto);
  CHECK(read(squad).attention == AttentionImpl::kAuto);
  const data::Vocab vocab =
      data::Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, "test");
  // Every name model.attention takes (electra_config_test checks what each selects).
  for (const char* name : kAttentionNames) {
    // A task section (rte's) keeps the file's choice.
    const FinetuneSettings s = read(glue, {str_cat("finetune.attention=", name)});
    CHECK(s.attention == attention_impl_named(name, "test"));
    CHECK(model_options(s, vocab).attention == s.attention);
  }
  CHECK(read(glue, {"finetune.attention=unfused"}).attention == AttentionImpl::kUnfused);

  // The start-up line: the GPU's choice always, the CPU's only when it has no effect.
  CHECK(attention_note(read(glue), true) == "attention auto (finetune.attention)");
  CHECK(attention_note(read(glue), false).empty());
  CHECK(attention_note(read(glue, {"finetune.attention=flash"}), false) ==
        "finetune.attention flash has no effect on the CPU");
  CHECK_THROWS_WITH(read(glue, {"finetune.attention=fast"}),
                    Catch::Contains("finetune.attention") && Catch::Contains("'fast'"));
}
