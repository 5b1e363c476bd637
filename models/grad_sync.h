// GradSync: the data-parallel gradient all-reduce (docs/DISTRIBUTED.md), in buckets that start
// as soon as the backward has finished writing them.
//
// Buckets: the flat gradient buffer of a ParameterStore is cut into ranges of bucket_bytes
// (rounded to ParameterStore::kAlignElements elements), starting from its END: the backward runs
// through the layers in reverse declaration order, so the last parameters are final first.
// Bucket 0 is [total - B, total), bucket 1 the B elements before it, ..., the last one starts at 0.
//
// Protocol, per optimizer update of `a` micro-batches:
//   begin_micro_batch(last = (micro == a - 1))   before each micro-batch's backward;
//   gradients_ready(ctx, span)                   from the backward (the models' GradientsReady
//                                                reports, models/model_builder.h): the span's
//                                                gradients are final for this update. Spans come
//                                                from the end of the declaration order backwards,
//                                                each ending where the previous one began; the
//                                                last one begins at parameter 0. It calls
//   gradients_final_from(ctx, offset)            every gradient at element offset >= offset is
//                                                final. Offsets never grow within a backward; the
//                                                last call reports 0. Each bucket that is now
//                                                entirely final starts its all-reduce (after the
//                                                work queued so far on ctx's stream:
//                                                communicator.h);
//   finish(ctx)                                  after the last micro-batch: ctx's stream waits
//                                                for every bucket (the optimizer runs after).
// On micro-batches other than the last, gradients_final_from does nothing: gradient accumulation
// reduces only once per update.
//
// The reduction is a SUM: every rank scales its loss by 1 / (global accumulation = ranks x local
// micro-batches), so the sum over ranks is the mean gradient of the global batch, the same terms
// a single process accumulates (only their summation order differs).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/communicator.h"
#include "engine/context.h"
#include "engine/parameter_store.h"
#include "models/model_builder.h"

namespace electra {

class GradSync {
 public:
  static constexpr double kDefaultBucketMb = 25.0;

  struct Bucket {
    int64_t begin = 0, end = 0;  // elements of the flat gradient buffer
  };

  // `store` must be allocated and outlive this object; bucket_bytes > 0.
  GradSync(Communicator& comm, const ParameterStore& store, size_t bucket_bytes);

  const std::vector<Bucket>& buckets() const { return buckets_; }

  void begin_micro_batch(bool last);
  void gradients_ready(Context& ctx, ParamSpan span);
  void gradients_final_from(Context& ctx, int64_t offset);
  void finish(Context& ctx);

 private:
  Communicator& comm_;
  const ParameterStore& store_;
  Tensor grads_;
  std::vector<Bucket> buckets_;
  size_t started_ = 0;  // buckets whose all-reduce has started in this update
  int64_t frontier_ = 0;
  bool armed_ = false;
};

}  // namespace electra
