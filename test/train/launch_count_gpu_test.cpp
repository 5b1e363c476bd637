// launch_count_gpu_test (label gpu): every op call of an ELECTRA-Small update (seq 128, batch
// 128, bf16) launches on the GPU what it declares (kernels/op_call.h), so the CPU's count
// (launch_count_test) is the GPU's. Each op call is recorded into a CUDA graph of its own (a stream
// capture around the call), then that graph is launched, so the update computes what it computes
// eagerly. Of the graph's nodes, the kernels of this project (mangled names in namespace electra)
// must number the declared kernels exactly; the other nodes (cuBLASLt's kernels, any memset of
// its own) must be at least the declared library calls, and none where none is declared. The test
// prints how many kernels the library calls really ran. Last, the declared launches of the GPU
// update, per part, equal a dry run's on a CPU context of the same precision. With the default
// attention, with model.attention: flash_ds and with flash_short, and with model.fused_layers:
// false. On the SIMT emulator (scripts/simt_check.sh), whose cuBLASLt is a loop in double, the
// update is ELECTRA-Small's with 2 layers and 8 sequences: the same ops at the same widths and
// sequence length, about a hundredth of the work.
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
#include "test/common/kernel_node_name.h"
#include "test/train/small_run.h"
#include "train/trainer.h"

using namespace electra;

namespace {

// Whether a kernel is this project's: in namespace electra. The driver names a kernel by its
// mangled name (namespace electra is "7electra" in it), the SIMT emulator by the source's, with
// the launching function's namespace ("electra::{anonymous}::k<2>").
bool ours(const std::string& name) {
  return name.find("7electra") != std::string::npos || name.starts_with("electra::");
}

bool on_simt_emulator() {
  cudaDeviceProp prop{};
  ELECTRA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) == "SIMT emulator";
}

struct NodeCounts {
  int64_t ours = 0;     // kernels in namespace electra
  int64_t library = 0;  // other nodes: the libraries' kernels, memsets and copies
  int64_t unnamed = 0;  // kernels whose name the driver did not give
};

NodeCounts count_nodes(cudaGraph_t graph) {
  size_t n = 0;
  ELECTRA_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  ELECTRA_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  NodeCounts c;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    ELECTRA_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) {
      ++c.library;  // no op of ours enqueues a memset or a copy
      continue;
    }
    const std::string name = test::kernel_node_name(node);
    if (name.empty()) {
      ++c.unnamed;
    } else if (ours(name)) {
      ++c.ours;
    } else {
      ++c.library;
    }
  }
  return c;
}

// Records each op call into its own graph, checks its nodes against the declaration, launches it.
class CaptureChecker final : public OpObserver {
 public:
  LaunchCounter declared{/*dry_run=*/false};
  std::vector<std::string> mismatches;
  int64_t library_calls = 0, library_nodes = 0;

  bool before(Context& ctx, const OpCall& call) override {
    declared.before(ctx, call);
    ELECTRA_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal));
    return true;
  }
  void after(Context& ctx, const OpCall& call) override {
    cudaGraph_t graph = nullptr;
    ELECTRA_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph));
    const NodeCounts nodes = count_nodes(graph);
    const Launches& l = call.launches;
    const bool ok = nodes.unnamed == 0 && nodes.ours == l.kernels &&
                    nodes.library >= l.library_calls &&
                    (nodes.library == 0) == (l.library_calls == 0);
    if (!ok) {
      mismatches.push_back(str_cat(
          call.part, " ", call.name, " ", call.label, ": declares ", l.kernels, " kernels and ",
          l.library_calls, " library calls; the graph has ", nodes.ours, " of ours, ",
          nodes.library, " other nodes, ", nodes.unnamed, " unnamed kernels"));
    }
    library_calls += l.library_calls;
    library_nodes += nodes.library;
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    cudaGraphDestroy(graph);
    ELECTRA_CUDA_CHECK(status);
    ELECTRA_CUDA_CHECK(cudaGraphLaunch(exec, ctx.stream()));
    ELECTRA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
    cudaGraphExecDestroy(exec);
  }
  void memset(size_t bytes) override { declared.memset(bytes); }
};

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
  CaptureChecker checker;
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
