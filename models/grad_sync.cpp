#include "models/grad_sync.h"

#include <algorithm>

namespace electra {

GradSync::GradSync(Communicator& comm, const ParameterStore& store, size_t bucket_bytes)
    : comm_(comm), store_(store), grads_(store.flat_grads()) {
  ELECTRA_CHECK(store.allocated(), "GradSync: the parameter store is not allocated");
  ELECTRA_CHECK(bucket_bytes > 0, "GradSync: bucket size 0");
  const int64_t align = ParameterStore::kAlignElements;
  const int64_t elements = static_cast<int64_t>(bucket_bytes / dtype_size(grads_.dtype));
  const int64_t per_bucket = std::max(align, elements / align * align);
  const int64_t total = grads_.numel();
  for (int64_t end = total; end > 0; end -= per_bucket) {
    buckets_.push_back(Bucket{std::max<int64_t>(0, end - per_bucket), end});
  }
}

void GradSync::begin_micro_batch(bool last) {
  ELECTRA_CHECK(!armed_, "GradSync: a new micro-batch before finish() of the last one");
  armed_ = last;
  started_ = 0;
  frontier_ = grads_.numel();
}

void GradSync::gradients_ready(Context& ctx, ParamSpan span) {
  if (!armed_ || span.empty()) return;
  const std::vector<ParamInfo>& params = store_.params();
  auto offset = [&](size_t index) {
    return index < params.size() ? params[index].offset : grads_.numel();
  };
  ELECTRA_CHECK(span.end <= params.size() && offset(span.end) == frontier_,
                "GradSync: parameters [", span.first, ", ", span.end,
                ") reported ready do not end where the final gradients begin (element ", frontier_,
                ")");
  gradients_final_from(ctx, offset(span.first));
}

void GradSync::gradients_final_from(Context& ctx, int64_t offset) {
  if (!armed_) return;
  ELECTRA_CHECK(offset >= 0 && offset <= frontier_, "GradSync: final gradients from ", offset,
                " after ", frontier_, " (the backward must report decreasing offsets)");
  frontier_ = offset;
  const size_t element = dtype_size(grads_.dtype);
  for (; started_ < buckets_.size() && buckets_[started_].begin >= offset; ++started_) {
    const Bucket& b = buckets_[started_];
    const Tensor slice =
        Tensor::view_of(static_cast<char*>(grads_.data) + static_cast<size_t>(b.begin) * element,
                        grads_.dtype, grads_.device, {b.end - b.begin});
    comm_.start_all_reduce(slice, ReduceOp::kSum, ctx.stream());
  }
}

void GradSync::finish(Context& ctx) {
  ELECTRA_CHECK(armed_ && started_ == buckets_.size(), "GradSync: finish() after ", started_,
                " of ", buckets_.size(), " buckets (the backward did not report offset 0)");
  comm_.wait(ctx.stream());
  armed_ = false;
}

}  // namespace electra
