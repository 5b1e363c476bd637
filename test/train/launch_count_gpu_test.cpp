// launch_count_gpu_test (label gpu): every op call of an ELECTRA-Small update (seq 128, batch
// 128, bf16) launches on the GPU what it declares (kernels/op_call.h), so the CPU's count
// (launch_count_test) is the GPU's. Each op call is recorded into a CUDA graph of its own and its
// nodes checked against the declaration (test/common/launch_capture.h; the op harness checks every
// op case so too), then that graph is launched, so the update computes what it computes eagerly.
// The test prints how many kernels the library calls really ran. Last, the declared launches of
// the GPU update, per part, equal a dry run's on a CPU context of the same precision. With the
// default attention, with model.attention: flash_ds and with flash_short, and with
// model.fused_layers: false. On the SIMT emulator (scripts/simt_check.sh), whose cuBLASLt is a
// loop in double, the update is ELECTRA-Small's with 2 layers and 8 sequences: the same ops at the
// same widths and sequence length, about a hundredth of the work.
#include <catch2/catch.hpp>

#if ELECTRA_WITH_CUDA

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/communicator.h"
#include "engine/cuda_check.h"
#include "engine/launch_counter.h"
#include "test/common/launch_capture.h"
#include "test/train/small_run.h"
#include "train/trainer.h"

using namespace electra;

namespace {

bool on_simt_emulator() {
  cudaDeviceProp prop{};
  ELECTRA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) == "SIMT emulator";
}

}  // namespace

TEST_CASE("every op of an ELECTRA-Small update launches what it declares", "[launches]") {
  // The default attention, the flash backward with dQ by GEMMs (model.attention: flash_ds), whose
  // declared library calls only a GPU run can check, and kFlashShort's kernels (flash_short: its
  // forward and one-pass backward counted as the one flash kernel each replaces); and the default
  // attention with the generator's blocks as separate ops (model.fused_layers: false).
  const auto [attention, fused_layers] =
      GENERATE(std::pair{AttentionImpl::kAuto, true}, std::pair{AttentionImpl::kFlashDsGemm, true},
               std::pair{AttentionImpl::kFlashShort, true}, std::pair{AttentionImpl::kAuto, false});
  INFO("attention " << static_cast<int>(attention) << ", fused_layers " << fused_layers);
  const test::SmallRun run("launch_count_gpu",
                           on_simt_emulator()
                               ? std::vector<std::string>{"model.layers=2", "train.batch_size=8"}
                               : std::vector<std::string>{});
  PretrainConfig config = run.config;
  config.train.cuda_graph = false;  // every op call observed, eagerly
  config.model.discriminator.attention = attention;
  config.model.discriminator.fused_layers = fused_layers;
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, test::SmallRun::kVocabHash,
                              static_cast<uint32_t>(config.train.seq_len));
  Context ctx = Context::cuda(0, 1, Precision::BF16);
  Trainer trainer(ctx, *comm, config, SpecialTokens{}, shards);
  trainer.init_weights();
  trainer.update();  // plans, kernel attributes and other lazily built state exist before capture
  test::LaunchCapture checker;
  {
    const ObserveOps observe(&checker);
    trainer.update();
  }
  ctx.synchronize();
  for (const std::string& m : checker.mismatches) std::printf("MISMATCH %s\n", m.c_str());
  CHECK(checker.mismatches.empty());
  std::printf("GPU update: %lld cuBLASLt calls ran %lld nodes\n%s",
              static_cast<long long>(checker.library_calls),
              static_cast<long long>(checker.library_nodes), checker.declared.table().c_str());
  const UpdateReport report = trainer.metrics();
  CHECK(std::isfinite(report.metrics.total_loss));

  // The same update counted dry on the CPU (launch_count_test's pinned count).
  Context cpu = Context::cpu(1, Precision::BF16);
  Trainer cpu_trainer(cpu, *comm, config, SpecialTokens{}, shards);
  LaunchCounter dry(/*dry_run=*/true);
  {
    const ObserveOps observe(&dry);
    cpu_trainer.update();
  }
  CHECK(dry.table() == checker.declared.table());
}

#endif
