// The bucketed gradient all-reduce without MPI (models/grad_sync.h, the pretrainer's gradient
// hook): a recording communicator sees which bucket starts when, and what it holds then.
//   - the buckets tile the flat gradient buffer from its end;
//   - every offset the backward reports is honest: the gradients from there on no longer change
//     during that step (checked against the final gradients, also when accumulating);
//   - each bucket starts once, on the last micro-batch only, holding its final values, and the
//     first ones start while the backward is still running; finish() waits once.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <vector>

#include "models/grad_sync.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

std::vector<float> grads_of(const ElectraPretrainer& model) {
  const Tensor& g = model.store().flat_grads();
  return std::vector<float>(g.ptr<float>(), g.ptr<float>() + g.numel());
}

// Records every collective: where it starts in the flat buffer, what it holds at that moment and
// how many backward reports had been made by then.
class RecordingCommunicator final : public Communicator {
 public:
  struct Start {
    int64_t begin = 0;
    std::vector<float> values;
    int reports = 0;
  };

  RecordingCommunicator(const Tensor& flat, const int& reports)
      : Communicator(0, 2, 0, 2), flat_(flat), reports_(reports) {}

  const char* backend() const override { return "recording"; }
  void start_all_reduce(const Tensor& data, ReduceOp op, cudaStream_t) override {
    CHECK(op == ReduceOp::kSum);
    const float* p = data.ptr<float>();
    starts.push_back(
        Start{p - flat_.ptr<float>(), std::vector<float>(p, p + data.numel()), reports_});
  }
  void wait(cudaStream_t) override { ++waits; }
  void broadcast(const Tensor&, int, cudaStream_t) override {}
  void all_reduce_host(std::span<double>, ReduceOp) override {}
  void broadcast_host(std::span<uint64_t>, int) override {}
  void barrier() override {}

  std::vector<Start> starts;
  int waits = 0;

 protected:
  void abort_job(int) override {}

 private:
  Tensor flat_;
  const int& reports_;
};

}  // namespace

TEST_CASE("buckets tile the flat gradient buffer from its end", "[grad_sync]") {
  Context ctx = Context::cpu(3);
  ElectraPretrainer model(ctx, test::tiny_electra_config(), test::tiny_options());
  const int64_t total = model.store().flat_grads().numel();
  int reports = 0;
  RecordingCommunicator comm(model.store().flat_grads(), reports);
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{5000}, size_t{1} << 30}) {
    INFO("bucket bytes " << bytes);
    const GradSync sync(comm, model.store(), bytes);
    const int64_t size = std::max<int64_t>(64, static_cast<int64_t>(bytes / 4) / 64 * 64);
    const auto& buckets = sync.buckets();
    REQUIRE(!buckets.empty());
    CHECK(buckets.front().end == total);
    CHECK(buckets.back().begin == 0);
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (i > 0) CHECK(buckets[i].end == buckets[i - 1].begin);
      if (i + 1 < buckets.size()) CHECK(buckets[i].end - buckets[i].begin == size);
      CHECK(buckets[i].end - buckets[i].begin <= size);
    }
    CHECK(static_cast<int64_t>(buckets.size()) == (total + size - 1) / size);
  }
}

TEST_CASE("the backward reports gradients final from the end of the buffer", "[grad_sync]") {
  Context ctx = Context::cpu(3);
  const ElectraConfig config = test::tiny_electra_config(0.1f);
  ElectraPretrainer model(ctx, config, test::tiny_options());
  model.init_weights(ctx, 5);
  const HostBatch batch = test::tiny_batch();
  const int64_t total = model.store().flat_grads().numel();
  model.zero_grads(ctx);
  model.step(ctx, batch, 7, 0.5f);  // the second step accumulates onto these

  // Each report: the span's element range and the gradients from its first element to the end.
  const std::vector<ParamInfo>& params = model.store().params();
  auto offset = [&](size_t index) { return index < params.size() ? params[index].offset : total; };
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<std::vector<float>> snapshots;
  const GradientsReady record = [&](Context&, ParamSpan span) {
    ranges.emplace_back(offset(span.first), offset(span.end));
    const std::vector<float> all = grads_of(model);
    snapshots.emplace_back(all.begin() + ranges.back().first, all.end());
  };
  model.step(ctx, batch, 8, 0.5f, record);
  const std::vector<float> final_grads = grads_of(model);

  // Discriminator head, layers 1, 0, its embeddings (with projection); generator head, layers
  // 1, 0, its embeddings (no projection: an empty span); then the shared tables.
  REQUIRE(ranges.size() == 9);
  CHECK(ranges.front().second == total);
  CHECK(ranges.back().first == 0);
  int64_t frontier = total;
  for (const auto& [begin, end] : ranges) {
    if (begin == end) continue;
    CHECK(end == frontier);  // each span ends where the previous one began
    CHECK(begin < end);
    frontier = begin;
  }
  CHECK(ranges[7].first == ranges[7].second);  // the generator has no projection
  // The shared tables come first in the buffer and are reported last.
  CHECK(ranges.back().second >
        model.store().info("discriminator/electra.embeddings.LayerNorm.bias").offset);
  for (size_t i = 0; i < ranges.size(); ++i) {
    INFO("report " << i << " from offset " << ranges[i].first);
    CHECK(std::equal(snapshots[i].begin(), snapshots[i].end(),
                     final_grads.begin() + ranges[i].first));
  }

  // Without a callback nothing is reported and the step is unchanged.
  model.zero_grads(ctx);
  model.step(ctx, batch, 7, 0.5f);
  model.step(ctx, batch, 8, 0.5f);
  CHECK(grads_of(model) == final_grads);
  CHECK(ranges.size() == 9);
}

// Every generator variant reports its spans in order too: contiguous from the end of the buffer
// to 0, each final when reported (generator_training: adversarial: the baseline between the two
// models).
TEST_CASE("the generator variants report gradients final from the end of the buffer",
          "[grad_sync]") {
  Context ctx = Context::cpu(3);
  struct Variant {
    GeneratorKind generator;
    Sharing sharing;
    GeneratorTraining training;
  };
  for (const auto& [generator, sharing, training] :
       {Variant{GeneratorKind::kUnigram, Sharing::kEmbeddings, GeneratorTraining::kMle},
        Variant{GeneratorKind::kMlm, Sharing::kNone, GeneratorTraining::kMle},
        Variant{GeneratorKind::kMlm, Sharing::kAll, GeneratorTraining::kMle},
        Variant{GeneratorKind::kMlm, Sharing::kGdes, GeneratorTraining::kMle},
        Variant{GeneratorKind::kMlm, Sharing::kEmbeddings, GeneratorTraining::kAdversarial},
        Variant{GeneratorKind::kMlm, Sharing::kAll, GeneratorTraining::kAdversarial},
        Variant{GeneratorKind::kMlm, Sharing::kGdes, GeneratorTraining::kAdversarial}}) {
    INFO(generator_kind_name(generator)
         << ", sharing " << sharing_name(sharing) << ", " << generator_training_name(training));
    PretrainOptions o = test::tiny_options();
    o.generator = generator;
    o.sharing = sharing;
    o.generator_training = training;
    // sharing: all: a tied encoder's spans are reported once, after both backwards added into
    // them (each report is checked final below).
    ElectraPretrainer model(
        ctx,
        sharing == Sharing::kAll ? test::tiny_tied_config(0.1f) : test::tiny_electra_config(0.1f),
        o);
    model.init_weights(ctx, 5);
    if (generator == GeneratorKind::kUnigram)
      model.set_unigram_counts(ctx, std::vector<uint64_t>(97, 1));
    const HostBatch batch = test::tiny_batch();
    const int64_t total = model.store().flat_grads().numel();
    const std::vector<ParamInfo>& params = model.store().params();
    auto offset = [&](size_t i) { return i < params.size() ? params[i].offset : total; };
    std::vector<std::pair<int64_t, int64_t>> ranges;
    std::vector<std::vector<float>> snapshots;
    const GradientsReady record = [&](Context&, ParamSpan span) {
      ranges.emplace_back(offset(span.first), offset(span.end));
      const std::vector<float> all = grads_of(model);
      snapshots.emplace_back(all.begin() + ranges.back().first, all.end());
    };
    model.zero_grads(ctx);
    model.step(ctx, batch, 8, 1.0f, record);
    const std::vector<float> final_grads = grads_of(model);
    REQUIRE(!ranges.empty());
    CHECK(ranges.front().second == total);
    CHECK(ranges.back().first == 0);
    int64_t frontier = total;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const auto [begin, end] = ranges[i];
      if (begin == end) continue;
      INFO("report " << i << " [" << begin << ", " << end << ")");
      CHECK(end == frontier);
      frontier = begin;
      CHECK(std::equal(snapshots[i].begin(), snapshots[i].end(), final_grads.begin() + begin));
    }
    CHECK(frontier == 0);
  }
}

TEST_CASE("each bucket is reduced once, final, on the last micro-batch, during the backward",
          "[grad_sync]") {
  Context ctx = Context::cpu(3);
  ElectraPretrainer model(ctx, test::tiny_electra_config(0.1f), test::tiny_options());
  model.init_weights(ctx, 5);
  const HostBatch batch = test::tiny_batch();
  int reports = 0;
  RecordingCommunicator comm(model.store().flat_grads(), reports);
  GradSync sync(comm, model.store(), 8192);
  REQUIRE(sync.buckets().size() > 4);
  const GradientsReady ready = [&](Context& c, ParamSpan span) {
    ++reports;
    sync.gradients_ready(c, span);
  };

  model.zero_grads(ctx);
  sync.begin_micro_batch(false);
  model.step(ctx, batch, 0, 0.5f, ready);
  CHECK(comm.starts.empty());  // accumulation: no reduction before the last micro-batch
  sync.begin_micro_batch(true);
  reports = 0;
  model.step(ctx, batch, 1, 0.5f, ready);
  CHECK(comm.waits == 0);
  sync.finish(ctx);
  CHECK(comm.waits == 1);

  const std::vector<float> final_grads = grads_of(model);
  REQUIRE(comm.starts.size() == sync.buckets().size());
  for (size_t i = 0; i < comm.starts.size(); ++i) {
    INFO("bucket " << i);
    const GradSync::Bucket& b = sync.buckets()[i];
    CHECK(comm.starts[i].begin == b.begin);
    REQUIRE(static_cast<int64_t>(comm.starts[i].values.size()) == b.end - b.begin);
    CHECK(std::equal(comm.starts[i].values.begin(), comm.starts[i].values.end(),
                     final_grads.begin() + b.begin));
  }
  // The discriminator's head and last layer start the first bucket (the head alone is smaller
  // than a bucket); the tables' bucket waits for the final report.
  CHECK(comm.starts.front().reports <= 2);
  CHECK(comm.starts.back().reports == reports);

  // Misuse is an Error: an offset that grows, a finish before the backward reported 0.
  sync.begin_micro_batch(true);
  sync.gradients_final_from(ctx, 1000);
  CHECK_THROWS_AS(sync.gradients_final_from(ctx, 2000), Error);
  CHECK_THROWS_AS(sync.finish(ctx), Error);
}
