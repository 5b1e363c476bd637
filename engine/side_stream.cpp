#include "engine/side_stream.h"

#include "engine/error.h"

#if ELECTRA_WITH_CUDA
#include "engine/cuda_check.h"
#endif

namespace electra {

SideStream::SideStream(const Context& main) {
  if (!main.is_cuda()) return;
#if ELECTRA_WITH_CUDA
  side_.emplace(Context::cuda(main.device_index(), main.seed(), main.precision()));
  side_->set_rank(main.rank());
  ELECTRA_CUDA_CHECK(cudaEventCreateWithFlags(&forked_, cudaEventDisableTiming));
  ELECTRA_CUDA_CHECK(cudaEventCreateWithFlags(&joined_, cudaEventDisableTiming));
#endif
}

SideStream::~SideStream() {
#if ELECTRA_WITH_CUDA
  if (forked_ != nullptr) cudaEventDestroy(forked_);
  if (joined_ != nullptr) cudaEventDestroy(joined_);
#endif
}

Context& SideStream::ctx(Context& main) {
  if (!side_) return main;
  ELECTRA_CHECK(main.is_cuda() && main.device_index() == side_->device_index(),
                "SideStream: made for CUDA device ", side_->device_index(), ", used with ",
                device_name(main.device()), " device ", main.device_index());
  side_->set_seed(main.seed());
  side_->set_rank(main.rank());
  side_->set_precision(main.precision());
  return *side_;
}

void SideStream::fork(Context& main) {
  if (!side_) return;
#if ELECTRA_WITH_CUDA
  ELECTRA_CUDA_CHECK(cudaEventRecord(forked_, main.stream()));
  ELECTRA_CUDA_CHECK(cudaStreamWaitEvent(side_->stream(), forked_, 0));
#endif
}

void SideStream::join(Context& main) {
  if (!side_) return;
#if ELECTRA_WITH_CUDA
  ELECTRA_CUDA_CHECK(cudaEventRecord(joined_, side_->stream()));
  ELECTRA_CUDA_CHECK(cudaStreamWaitEvent(main.stream(), joined_, 0));
#endif
}

}  // namespace electra
