#include "models/unigram_stage.h"

#include "kernels/unigram_sample.h"
#include "models/host_transfer.h"

namespace electra {

UnigramStage::UnigramStage(ModelBuilder& b, const UpdateInputs& in)
    : in_(in),
      cdf_(b.activation(DType::F64, {in.vocab})),
      samples_(b.activation(DType::I32, {in.masked()})) {}

void UnigramStage::set_counts(Context& ctx, const std::vector<uint64_t>& counts) {
  ELECTRA_USER_CHECK(counts.size() == static_cast<size_t>(in_.vocab),
                     "unigram counts: ", counts.size(), " tokens for a vocabulary of ", in_.vocab);
  upload_to(ctx, cdf_, unigram_cdf(counts));
  counts_ = counts;
}

void UnigramStage::forward(Context& ctx, const Corruption& c, ForwardContext& saved) {
  ELECTRA_CHECK(!counts_.empty(), "pretrain: generator: unigram without counts");
  saved.samples = c.samples.data != nullptr ? c.samples : samples_;
  run_op(ctx,
         UnigramSample{
             .cdf = cdf_, .stream = in_.rng(ctx, RngPurpose::kSample), .samples = Out(samples_)});
}

}  // namespace electra
