// Ticket counters for one-launch reductions on a CUDA context. The blocks of such a kernel each
// write a partial result, then take a ticket (an atomicAdd on a counter); the block that takes
// the last ticket adds the partials (kernels/column_sum.cuh). A CUDA context owns kTicketCounters
// uint32 counters, zeroed once when it is created: they follow the kCublasLtWorkspaceBytes of
// its cuBLASLt workspace in the same allocation (engine/context.cpp), where cuBLASLt, given
// exactly kCublasLtWorkspaceBytes, never writes. Every user leaves the counters it took at zero
// (the last arrival re-zeroes each), so the next op and every CUDA-graph replay find zeros; the
// ops of one context run one at a time on its one stream, so they all share the same counters.
#pragma once

#include <cstdint>

#include "engine/context.h"

namespace electra {

constexpr int64_t kTicketCounters = int64_t{1} << 16;
constexpr size_t kTicketCounterBytes = kTicketCounters * sizeof(uint32_t);

// The context's counters (device memory; CUDA contexts only).
inline uint32_t* ticket_counters(const Context& ctx) {
  return reinterpret_cast<uint32_t*>(static_cast<char*>(ctx.cublaslt_workspace()) +
                                     ctx.cublaslt_workspace_bytes());
}

}  // namespace electra
