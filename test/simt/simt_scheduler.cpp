// The SIMT emulator's scheduler (docs/ARCHITECTURE.md, "The SIMT emulator"): a launch runs its
// blocks one after another on the launching host thread, each block's threads as fibers (their
// own stacks, switched without a system call). A fiber runs until it reaches __syncthreads, a warp
// collective (shuffle, ballot, __syncwarp, mma.sync, ldmatrix) or its end; a barrier or
// collective completes when every live thread it names has arrived. Blocks and fibers run in
// index order, or in reverse order with SIMT_ORDER=reverse: a kernel that reads shared memory
// another thread writes without a barrier between them reads the old value in one of the two.
//
// What it checks beyond the results: a deadlock (a barrier or collective that can never
// complete), a shuffle from a lane that is not taking part, an ldmatrix or cp.async address not
// 16-byte aligned or past the launch's dynamic shared memory, a launch configuration a GPU
// refuses (more than 1024 threads, dynamic shared memory above the kernel's limit), and reads of
// dynamic shared memory before it is written (it starts as 0xff bytes, NaN in f32 and bf16).
// cp.async copies land at the cp.async.wait_group that waits for them, not at the issue.
//
// Under ThreadSanitizer (the simt-tsan preset, which builds this file uninstrumented with
// SIMT_TSAN) every fiber is one of its fibers, switched without synchronising, and the only
// happens-before edges are a block's synchronisation: __syncthreads among the block's threads, a
// warp collective (__syncwarp, a shuffle, a ballot, mma.sync, ldmatrix) among the lanes it names,
// as warp-synchronous code assumes (a lane's read before a shuffle and another lane's write after
// it are ordered by the values the shuffle carries), and a block's start after the host's work
// before the launch (the blocks one after another, as they run here). So two threads of a block
// that touch the same shared (or global) memory, one writing, with neither between them are
// reported as a data race, whichever order the fibers run in: what compute-sanitizer's racecheck
// reports on a GPU. The PTX done here on the kernels' behalf counts as the lane's own access:
// each lane's ldmatrix row read, at the collective (so a row another lane wrote just before it,
// with no __syncwarp, is a race), a cp.async's source read at its issue and its shared write where
// it lands.
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(SIMT_TSAN)
#include <sanitizer/tsan_interface.h>
// The instrumentation's own entry points: an access of 16 bytes by the running fiber, made by
// the instruction before `pc`.
extern "C" void __tsan_read16_pc(void* address, void* pc);
extern "C" void __tsan_write16_pc(void* address, void* pc);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/bf16.h"
#include "test/simt/simt_device.h"

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace simt {
namespace {

constexpr size_t kStackBytes = size_t{512} << 10;
constexpr size_t kGuardBytes = 4096;  // the stack's lowest page, unmapped
constexpr size_t kDefaultDynamicShared = size_t{48} << 10;
constexpr size_t kMaxDynamicShared = size_t{227} << 10;  // H100's opt-in maximum per block
constexpr int kWarp = 32;

}  // namespace
}  // namespace simt

// simt_switch_stack(&save, to): saves the callee-saved registers, MXCSR and the x87 control word on
// the current stack, stores the stack pointer in save, and resumes the stack `to` as saved by an
// earlier switch (or as initial_sp prepares it). No system call, unlike swapcontext.
extern "C" void simt_switch_stack(void** save, void* to);
asm(R"(
  .text
  .globl simt_switch_stack
  .type simt_switch_stack, @function
simt_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size simt_switch_stack, .-simt_switch_stack
  .section .note.GNU-stack,"",@progbits
  .text
)");

namespace simt {
namespace {

enum class Wait { kNone, kBarrier, kWarp };

struct CpAsync {
  unsigned char* dst;
  unsigned char data[16];
  void* pc;  // the kernel's code that issued it
};

// ThreadSanitizer's fibers and happens-before edges (nothing without SIMT_TSAN).
namespace tsan {
#if defined(SIMT_TSAN)
void* current() {
  return __tsan_get_current_fiber();
}
void* create() {
  return __tsan_create_fiber(0);
}
void switch_to(void* fiber) {
  __tsan_switch_to_fiber(fiber, __tsan_switch_to_fiber_no_sync);
}
void release(void* token) {
  __tsan_release(token);
}
void acquire(const void* token) {
  __tsan_acquire(const_cast<void*>(token));
}
void read16(const void* address, void* pc) {
  __tsan_read16_pc(const_cast<void*>(address), pc);
}
void write16(void* address, void* pc) {
  __tsan_write16_pc(address, pc);
}
// Around the emulator's own copies (a collective's results into its lanes' registers), which
// the libc functions' interceptors would see as the running fiber's accesses.
void ignore_begin() {
  __tsan_ignore_thread_begin();
}
void ignore_end() {
  __tsan_ignore_thread_end();
}
#else
void* current() {
  return nullptr;
}
void* create() {
  return nullptr;
}
void switch_to(void*) {}
void release(void*) {}
void acquire(const void*) {}
void read16(const void*, void*) {}
void write16(void*, void*) {}
void ignore_begin() {}
void ignore_end() {}
#endif
}  // namespace tsan

struct Fiber {
  void* sp = nullptr;          // the saved stack pointer while suspended
  void* fake_stack = nullptr;  // AddressSanitizer's, while suspended
  void* tsan = nullptr;        // ThreadSanitizer's fiber
  void* stack = nullptr;       // kStackBytes, mapped once
  uint3 index{};
  bool done = false;
  bool runnable = true;
  Wait wait = Wait::kNone;
  void* request = nullptr;
  Resolve resolve = nullptr;
  uint32_t mask = 0;
  std::vector<CpAsync> open;                   // cp.async not yet committed
  std::deque<std::vector<CpAsync>> committed;  // cp.async.commit_group's groups, oldest first
};

struct Block {
  std::vector<Fiber> fibers;        // 1024, made once: a suspended fiber's state must not move
  int count = 0;                    // the fibers of this block: the first `count`
  uint32_t live_lanes[32] = {};     // per warp, its lanes that have not ended
  uint32_t waiting_lanes[32] = {};  // per warp, its lanes waiting at a collective
  int live = 0;
  int current = 0;
  void* scheduler_sp = nullptr;
  const void* scheduler_bottom = nullptr;  // the scheduler's stack, for AddressSanitizer
  size_t scheduler_size = 0;
  int barrier_arrived = 0, barrier_sum = 0, barrier_result = 0;
  // Under ThreadSanitizer: __syncthreads number n releases and acquires token n % 2 (no thread
  // is two barriers ahead of one that has not resumed); a warp collective, the token of its
  // group's lowest lane and the parity of that lane's completed groups (the same argument); the
  // block's start and end.
  uint32_t barriers = 0;
  char barrier_tokens[2] = {};
  uint32_t collectives[32][32] = {};  // per warp, per lowest lane
  char collective_tokens[32][32][2] = {};
  char start_token = 0, end_token = 0;
  void* scheduler_tsan = nullptr;
  size_t shared_bytes = 0;  // of dynamic shared memory
  const std::function<void()>* body = nullptr;
  const LaunchConfig* config = nullptr;
};

Block block;  // the running block (one grid at a time: grid_running)

// The dynamic shared memory of the running block, in the executable's .bss: a shared address is
// an offset from it, so that the static __shared__ arrays (also in .bss, within 2 GiB) have one
// too. One grid runs at a time in the process.
alignas(128) unsigned char shared_arena[kMaxDynamicShared];
std::atomic<bool> grid_running{false};

std::map<const void*, size_t>& dynamic_limits() {
  static std::map<const void*, size_t> limits;
  return limits;
}

bool& reverse() {
  static bool reverse = [] {
    const char* order = std::getenv("SIMT_ORDER");
    return order != nullptr && std::string(order) == "reverse";
  }();
  return reverse;
}

[[noreturn]] void fail(const std::string& what) {
  const std::source_location& w = block.config->where;
  const Fiber& f = block.fibers[block.current];
  std::fprintf(stderr,
               "simt: %s\n  in the kernel launched at %s:%u, block (%u, %u, %u), thread (%u, %u, "
               "%u)\n",
               what.c_str(), w.file_name(), static_cast<unsigned>(w.line()), blockIdx.x, blockIdx.y,
               blockIdx.z, f.index.x, f.index.y, f.index.z);
  std::fflush(stderr);
  std::abort();
}

Fiber& self() {
  return block.fibers[block.current];
}

int warp_of(int t) {
  return t / kWarp;
}

// AddressSanitizer's fiber annotations (it must know which stack runs, or it reports the fibers'
// frames as overflows); nothing in a build without it.
void start_switch(void** fake_stack, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
  static_cast<void>(fake_stack), static_cast<void>(bottom), static_cast<void>(size);
#endif
}
void finish_switch(void* fake_stack, const void** from_bottom, size_t* from_size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_size);
#else
  static_cast<void>(fake_stack), static_cast<void>(from_bottom), static_cast<void>(from_size);
#endif
}

void yield() {
  Fiber& f = self();
  tsan::switch_to(block.scheduler_tsan);
  start_switch(f.done ? nullptr : &f.fake_stack, block.scheduler_bottom, block.scheduler_size);
  simt_switch_stack(&f.sp, block.scheduler_sp);
  finish_switch(f.fake_stack, &block.scheduler_bottom, &block.scheduler_size);
}

void release_barrier() {
  if (block.live == 0 || block.barrier_arrived < block.live) return;
  block.barrier_result = block.barrier_sum;
  block.barrier_arrived = block.barrier_sum = 0;
  ++block.barriers;
  for (int t = 0; t < block.count; ++t) {
    Fiber& f = block.fibers[t];
    if (f.wait == Wait::kBarrier) {
      f.wait = Wait::kNone;
      f.runnable = true;
    }
  }
}

// Completes every group of warp w whose named live lanes have all arrived.
void release_warp(int w) {
  const uint32_t live = block.live_lanes[w];
  for (uint32_t pending = block.waiting_lanes[w]; pending != 0; pending &= pending - 1) {
    const int l = __builtin_ctz(pending);
    const Fiber& lead = block.fibers[w * kWarp + l];
    const uint32_t group = lead.mask & live;
    if ((group >> l & 1u) == 0) fail("a warp collective whose mask leaves out the calling lane");
    if ((group & ((1u << l) - 1)) != 0) continue;             // led by a lower lane
    if ((block.waiting_lanes[w] & group) != group) continue;  // not all there yet
    void* requests[kWarp] = {};
    for (uint32_t m = group; m != 0; m &= m - 1) {
      const Fiber& f = block.fibers[w * kWarp + __builtin_ctz(m)];
      if (f.resolve != lead.resolve || (f.mask & live) != group) {
        fail("lanes of one warp mask wait at different collectives");
      }
      requests[__builtin_ctz(m)] = f.request;
    }
    tsan::ignore_begin();
    lead.resolve(requests, group);
    tsan::ignore_end();
    ++block.collectives[w][l];
    block.waiting_lanes[w] &= ~group;
    for (uint32_t m = group; m != 0; m &= m - 1) {
      Fiber& f = block.fibers[w * kWarp + __builtin_ctz(m)];
      f.wait = Wait::kNone;
      f.runnable = true;
    }
  }
}

// Lands a cp.async group: the issuing fiber's shared writes.
void apply(const std::vector<CpAsync>& group) {
  for (const CpAsync& c : group) {
    tsan::write16(c.dst, c.pc);
    std::memcpy(c.dst, c.data, sizeof(c.data));
  }
}

void fiber_main() {
  finish_switch(nullptr, &block.scheduler_bottom, &block.scheduler_size);
  tsan::acquire(&block.start_token);
  (*block.body)();
  Fiber& f = self();
  if (!f.open.empty()) f.committed.push_back(std::move(f.open));
  for (const auto& group : f.committed) apply(group);  // the copies land even after exit
  f.committed.clear();
  f.open.clear();
  tsan::release(&block.end_token);
  f.done = true;
  f.runnable = false;
  --block.live;
  block.live_lanes[warp_of(block.current)] &= ~(1u << block.current % kWarp);
  release_barrier();
  release_warp(warp_of(block.current));
  yield();  // never resumed
}

void* new_stack() {
  void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "simt: cannot map a fiber stack\n");
    std::abort();
  }
  mprotect(p, kGuardBytes, PROT_NONE);  // a stack overflow faults instead of corrupting a neighbour
  return p;
}

// A stack whose first switch "returns" into fiber_main: below the 16-byte aligned top, a null
// return address for fiber_main (so that it starts with the stack aligned as after a call),
// fiber_main's address, six zero registers and the default MXCSR and x87 control word.
void* initial_sp(void* stack) {
#if defined(__SANITIZE_ADDRESS__)
  // A reused stack still carries the shadow of the last block's frames.
  __asan_unpoison_memory_region(static_cast<unsigned char*>(stack) + kGuardBytes,
                                kStackBytes - kGuardBytes);
#endif
  auto* top = reinterpret_cast<uint64_t*>(static_cast<unsigned char*>(stack) + kStackBytes);
  uint64_t* sp = top - 9;
  sp[0] = uint64_t{0x037f} << 32 | 0x1f80;  // MXCSR, then the x87 control word
  for (int r = 1; r <= 6; ++r) sp[r] = 0;   // r15, r14, r13, r12, rbx, rbp
  sp[7] = reinterpret_cast<uint64_t>(&fiber_main);
  sp[8] = 0;
  return sp;
}

[[noreturn]] void deadlock() {
  int barrier = 0, warp = 0;
  for (int t = 0; t < block.count; ++t) {
    const Fiber& f = block.fibers[t];
    if (f.done) continue;
    barrier += f.wait == Wait::kBarrier;
    warp += f.wait == Wait::kWarp;
  }
  fail("deadlock: " + std::to_string(barrier) + " threads wait at __syncthreads, " +
       std::to_string(warp) + " at a warp collective, none can go on");
}

void run_block(size_t threads) {
  if (block.fibers.empty()) block.fibers.resize(1024);
  block.count = static_cast<int>(threads);
  for (size_t t = 0; t < threads; ++t) {
    Fiber& f = block.fibers[t];
    if (f.stack == nullptr) {
      f.stack = new_stack();
      f.tsan = tsan::create();
    }
    f.index = uint3{static_cast<unsigned>(t % blockDim.x),
                    static_cast<unsigned>(t / blockDim.x % blockDim.y),
                    static_cast<unsigned>(t / (blockDim.x * blockDim.y))};
    f.done = false;
    f.runnable = true;
    f.wait = Wait::kNone;
    f.sp = initial_sp(f.stack);
  }
  block.live = static_cast<int>(threads);
  for (size_t w = 0; w < 32; ++w) {
    const size_t lanes = threads > w * kWarp ? std::min<size_t>(threads - w * kWarp, kWarp) : 0;
    block.live_lanes[w] = lanes == kWarp ? ~0u : (1u << lanes) - 1;
    block.waiting_lanes[w] = 0;
  }
  block.barrier_arrived = block.barrier_sum = 0;
  std::memset(shared_arena, 0xff, block.shared_bytes);
  block.scheduler_tsan = tsan::current();
  tsan::release(&block.start_token);
  while (block.live > 0) {
    bool ran = false;
    for (size_t i = 0; i < threads; ++i) {
      const size_t t = reverse() ? threads - 1 - i : i;
      Fiber& f = block.fibers[t];
      if (f.done || !f.runnable) continue;
      block.current = static_cast<int>(t);
      threadIdx = f.index;
      void* fake_stack = nullptr;
      tsan::switch_to(f.tsan);
      start_switch(&fake_stack, f.stack, kStackBytes);
      simt_switch_stack(&block.scheduler_sp, f.sp);
      finish_switch(fake_stack, nullptr, nullptr);
      ran = true;
    }
    if (!ran) deadlock();
  }
  tsan::acquire(&block.end_token);
}

void execute(const LaunchConfig& config, const std::function<void()>& body) {
  if (grid_running.exchange(true)) {
    std::fprintf(stderr, "simt: two host threads run kernels at once (one grid at a time)\n");
    std::abort();
  }
  block.config = &config;
  block.body = &body;
  block.shared_bytes = config.bytes;
  blockDim = config.block;
  gridDim = config.grid;
  const size_t threads = size_t{config.block.x} * config.block.y * config.block.z;
  const size_t blocks = size_t{config.grid.x} * config.grid.y * config.grid.z;
  for (size_t i = 0; i < blocks; ++i) {
    const size_t b = reverse() ? blocks - 1 - i : i;
    blockIdx = uint3{static_cast<unsigned>(b % config.grid.x),
                     static_cast<unsigned>(b / config.grid.x % config.grid.y),
                     static_cast<unsigned>(b / (size_t{config.grid.x} * config.grid.y))};
    run_block(threads);
  }
  block.config = nullptr;
  block.body = nullptr;
  grid_running = false;
}

uint32_t read32(const Operand& o) {
  return static_cast<uint32_t>(o.bits);
}

void write(Operand& o, const void* value) {
  std::memcpy(o.target, value, o.size);
}

// Half `half` (0: the low 16 bits, the first element) of a bf16 pair.
float bf16_at(uint32_t word, int half) {
  return electra::bf16_to_float(
      electra::bf16{static_cast<uint16_t>(half == 0 ? word : word >> 16)});
}

// ---- mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix fragments for mma.m16n8k16")
struct MmaRequest {
  Operand* operands;  // d0..d3 (read-write), a0..a3, b0, b1
};

void resolve_mma(void* const* requests, uint32_t mask) {
  if (mask != 0xffffffffu) fail("mma.sync with a lane missing (.aligned needs the whole warp)");
  float a[16][16], b[16][8];
  for (int l = 0; l < kWarp; ++l) {
    const Operand* o = static_cast<MmaRequest*>(requests[l])->operands;
    const int g = l >> 2, t = l & 3;
    for (int h = 0; h < 2; ++h) {
      a[g][2 * t + h] = bf16_at(read32(o[4]), h);
      a[g + 8][2 * t + h] = bf16_at(read32(o[5]), h);
      a[g][2 * t + 8 + h] = bf16_at(read32(o[6]), h);
      a[g + 8][2 * t + 8 + h] = bf16_at(read32(o[7]), h);
      b[2 * t + h][g] = bf16_at(read32(o[8]), h);
      b[2 * t + 8 + h][g] = bf16_at(read32(o[9]), h);
    }
  }
  for (int l = 0; l < kWarp; ++l) {
    Operand* o = static_cast<MmaRequest*>(requests[l])->operands;
    const int g = l >> 2, t = l & 3;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int e = 0; e < 4; ++e) {
      double sum = 0;
      for (int k = 0; k < 16; ++k) sum += double{a[rows[e]][k]} * b[k][cols[e]];
      float d;
      std::memcpy(&d, &o[e].bits, sizeof(d));
      d = static_cast<float>(double{d} + sum);
      write(o[e], &d);
    }
  }
}

// ---- ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 ----------------------------------------
struct LdmatrixRequest {
  Operand* operands;  // r0..r3, the row address
  bool trans;
};

void resolve_ldmatrix(void* const* requests, uint32_t mask) {
  if (mask != 0xffffffffu) fail("ldmatrix with a lane missing (.aligned needs the whole warp)");
  uint16_t m[4][8][8];  // [matrix][row][column]
  for (int l = 0; l < kWarp; ++l) {
    const uint32_t address = read32(static_cast<LdmatrixRequest*>(requests[l])->operands[4]);
    if (address % 16 != 0) fail("ldmatrix row address not 16-byte aligned");
    std::memcpy(m[l / 8][l % 8], shared_pointer(address), 16);
  }
  for (int l = 0; l < kWarp; ++l) {
    auto* r = static_cast<LdmatrixRequest*>(requests[l]);
    const int g = l >> 2, t = l & 3;
    for (int q = 0; q < 4; ++q) {
      const uint16_t lo = r->trans ? m[q][2 * t][g] : m[q][g][2 * t];
      const uint16_t hi = r->trans ? m[q][2 * t + 1][g] : m[q][g][2 * t + 1];
      const uint32_t word = uint32_t{lo} | uint32_t{hi} << 16;
      write(r->operands[q], &word);
    }
  }
}

// ---- The PTX instructions the kernels write as inline asm -------------------------------------
enum class Ptx {
  kMma,
  kLdmatrix,
  kLdmatrixTrans,
  kCpAsync,
  kCommit,
  kWait,
  kLaneId,
  kShflIdx,
  kEx2,
  kMadWide
};

struct Parsed {
  Ptx op;
  uint32_t immediate = 0;  // shfl's member mask, mad.wide's multiplier
};

bool starts(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

Parsed parse(const char* text) {
  std::string s(text);
  s.erase(0, s.find_first_not_of(" \t\n"));
  if (starts(s,
             "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
             "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};")) {
    return {Ptx::kMma};
  }
  if (starts(s, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 ")) return {Ptx::kLdmatrix};
  if (starts(s, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 ")) return {Ptx::kLdmatrixTrans};
  if (starts(s, "cp.async.cg.shared.global [%0], [%1], 16, %2;")) return {Ptx::kCpAsync};
  if (starts(s, "cp.async.commit_group;")) return {Ptx::kCommit};
  if (starts(s, "cp.async.wait_group %0;")) return {Ptx::kWait};
  if (starts(s, "mov.u32 %0, %%laneid;")) return {Ptx::kLaneId};
  if (starts(s, "shfl.sync.idx.b32 %0, %1, %2, %3, ")) {
    return {Ptx::kShflIdx,
            static_cast<uint32_t>(std::stoul(s.substr(s.rfind(", ") + 2), nullptr, 0))};
  }
  if (starts(s, "ex2.approx.ftz.f32 %0, %1;")) return {Ptx::kEx2};
  if (starts(s, "mad.wide.s32 %0, %1, ")) {
    const size_t at = std::string("mad.wide.s32 %0, %1, ").size();
    return {Ptx::kMadWide, static_cast<uint32_t>(std::stoul(s.substr(at)))};
  }
  std::fprintf(stderr, "simt: PTX not emulated: %s\n", text);
  std::abort();
}

float flush_subnormal(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

}  // namespace

void syncthreads() {
  syncthreads_count(0);
}

int syncthreads_count(int predicate) {
  Fiber& f = self();
  f.wait = Wait::kBarrier;
  f.runnable = false;
  char* token = &block.barrier_tokens[block.barriers % 2];
  tsan::release(token);
  ++block.barrier_arrived;
  block.barrier_sum += predicate != 0;
  release_barrier();
  yield();
  tsan::acquire(token);
  return block.barrier_result;
}

void warp_collective(uint32_t mask, void* request, Resolve resolve) {
  Fiber& f = self();
  f.wait = Wait::kWarp;
  f.runnable = false;
  f.request = request;
  f.resolve = resolve;
  f.mask = mask;
  const int w = warp_of(block.current), lane = block.current % kWarp;
  const uint32_t group = mask & block.live_lanes[w];
  const int lowest = group != 0 ? __builtin_ctz(group) : lane;
  char* token = &block.collective_tokens[w][lowest][block.collectives[w][lowest] % 2];
  tsan::release(token);
  block.waiting_lanes[w] |= 1u << lane;
  release_warp(w);
  yield();
  tsan::acquire(token);
}

unsigned char* dynamic_shared_base() {
  return shared_arena;
}

uint32_t shared_address(const void* p) {
  const ptrdiff_t offset = static_cast<const unsigned char*>(p) - shared_arena;
  if (offset < INT32_MIN || offset > INT32_MAX) fail("a shared address of non-shared memory");
  return static_cast<uint32_t>(static_cast<int32_t>(offset));
}

// The dynamic part is checked against the launch's size; a static __shared__ array's bounds are
// not known here.
void* shared_pointer(uint32_t address) {
  const int32_t offset = static_cast<int32_t>(address);
  if (offset >= 0 && static_cast<size_t>(offset) < sizeof(shared_arena) &&
      static_cast<size_t>(offset) + 16 > block.shared_bytes) {
    fail("shared address " + std::to_string(offset) + " past the launch's " +
         std::to_string(block.shared_bytes) + " bytes of dynamic shared memory");
  }
  return shared_arena + offset;
}

void resolve_shfl(void* const* requests, uint32_t mask) {
  for (int lane = 0; lane < kWarp; ++lane) {
    if ((mask >> lane & 1u) == 0) continue;
    auto* r = static_cast<ShflRequest*>(requests[lane]);
    const int b = static_cast<int>(r->b & 31), segmask = static_cast<int>(r->c >> 8 & 31);
    const int clamp = static_cast<int>(r->c & 31);
    const int max_lane = (lane & segmask) | (clamp & ~segmask), min_lane = lane & segmask;
    int j = lane;
    bool in_range = false;
    switch (r->mode) {
      case ShflMode::kUp:
        j = lane - b;
        in_range = j >= max_lane;
        break;
      case ShflMode::kDown:
        j = lane + b;
        in_range = j <= max_lane;
        break;
      case ShflMode::kBfly:
        j = lane ^ b;
        in_range = j <= max_lane;
        break;
      case ShflMode::kIdx:
        j = min_lane | (b & ~segmask);
        in_range = j <= max_lane;
        break;
    }
    if (!in_range) j = lane;
    if ((mask >> j & 1u) == 0)
      fail("a shuffle reads lane " + std::to_string(j) + ", which is not taking part");
    r->result = static_cast<ShflRequest*>(requests[j])->value;
  }
}

void resolve_ballot(void* const* requests, uint32_t mask) {
  uint32_t votes = 0;
  for (int l = 0; l < kWarp; ++l) {
    if ((mask >> l & 1u) != 0 && static_cast<BallotRequest*>(requests[l])->predicate) {
      votes |= 1u << l;
    }
  }
  for (int l = 0; l < kWarp; ++l) {
    if ((mask >> l & 1u) != 0) static_cast<BallotRequest*>(requests[l])->result = votes;
  }
}

void resolve_syncwarp(void* const*, uint32_t) {}

void ptx_exec(const char* text, Operand* o, int count) {
  void* const pc = __builtin_return_address(0);  // in the kernel: where its accesses are made
  static std::unordered_map<const char*, Parsed> cache;  // one grid at a time
  auto it = cache.find(text);
  if (it == cache.end()) it = cache.emplace(text, parse(text)).first;
  const Parsed& p = it->second;
  const int expected[] = {10, 5, 5, 3, 0, 1, 1, 4, 2, 3};
  if (count != expected[static_cast<int>(p.op)]) fail(std::string("operand count of ") + text);
  Fiber& f = self();
  switch (p.op) {
    case Ptx::kMma: {
      MmaRequest r{o};
      warp_collective(0xffffffffu, &r, resolve_mma);
      break;
    }
    case Ptx::kLdmatrix:
    case Ptx::kLdmatrixTrans: {
      tsan::read16(shared_arena + static_cast<int32_t>(read32(o[4])), pc);  // this lane's row
      LdmatrixRequest r{o, p.op == Ptx::kLdmatrixTrans};
      warp_collective(0xffffffffu, &r, resolve_ldmatrix);
      break;
    }
    case Ptx::kCpAsync: {
      const uint32_t bytes = read32(o[2]);
      const auto* src = reinterpret_cast<const unsigned char*>(o[1].bits);
      if (read32(o[0]) % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0) {
        fail("cp.async address not 16-byte aligned");
      }
      CpAsync c{static_cast<unsigned char*>(shared_pointer(read32(o[0]))), {}, pc};
      if (bytes != 0 && bytes != 16) fail("cp.async source size other than 0 or 16");
      if (bytes == 16) {
        tsan::read16(src, pc);
        std::memcpy(c.data, src, 16);
      }
      f.open.push_back(c);
      break;
    }
    case Ptx::kCommit:
      f.committed.push_back(std::move(f.open));
      f.open.clear();
      break;
    case Ptx::kWait:
      while (f.committed.size() > o[0].bits) {
        apply(f.committed.front());
        f.committed.pop_front();
      }
      break;
    case Ptx::kLaneId: {
      const uint32_t lane = static_cast<uint32_t>(block.current % kWarp);
      write(o[0], &lane);
      break;
    }
    case Ptx::kShflIdx: {
      const uint32_t v = static_cast<uint32_t>(
          shfl(p.immediate, read32(o[1]), ShflMode::kIdx, read32(o[2]), read32(o[3])));
      write(o[0], &v);
      break;
    }
    case Ptx::kEx2: {
      float x;
      std::memcpy(&x, &o[1].bits, sizeof(x));
      const float y = flush_subnormal(std::exp2(flush_subnormal(x)));
      write(o[0], &y);
      break;
    }
    case Ptx::kMadWide: {
      const int64_t v = int64_t{static_cast<int32_t>(read32(o[1]))} * p.immediate +
                        static_cast<int64_t>(o[2].bits);
      write(o[0], &v);
      break;
    }
  }
}

void set_reverse_order(bool on) {
  reverse() = on;
}

void set_max_dynamic_shared(const void* kernel, size_t bytes) {
  dynamic_limits()[kernel] = bytes;
}

size_t max_dynamic_shared(const void* kernel) {
  const auto it = dynamic_limits().find(kernel);
  return it == dynamic_limits().end() ? kDefaultDynamicShared : it->second;
}

namespace {

// `name` qualified by the namespace (or class) of the function that launched it, read off that
// function's signature: "void electra::{anonymous}::f(int)" launching "k<2>" names it
// "electra::{anonymous}::k<2>", which is where an unqualified name's lookup starts.
std::string qualified_name(const std::source_location& where, const char* name) {
  if (name == nullptr) return "";
  if (std::strncmp(name, "::", 2) == 0) return name + 2;
  const std::string_view f = where.function_name();
  // The function's qualified name ends at the first '(' outside template arguments (its return
  // type's may hold some) and starts after the last space before it outside them.
  size_t start = 0, open = std::string_view::npos;
  for (size_t i = 0, depth = 0; i < f.size() && open == std::string_view::npos; ++i) {
    if (f[i] == '<') ++depth;
    if (f[i] == '>' && depth > 0) --depth;
    if (depth == 0 && f[i] == ' ') start = i + 1;
    if (depth == 0 && f[i] == '(') open = i;
  }
  if (open == std::string_view::npos) return name;
  const std::string_view function = f.substr(start, open - start);
  size_t scope_end = std::string_view::npos;
  for (size_t i = 0, depth = 0; i + 1 < function.size(); ++i) {
    if (function[i] == '<') ++depth;
    if (function[i] == '>' && depth > 0) --depth;
    if (depth == 0 && function[i] == ':' && function[i + 1] == ':') scope_end = i;
  }
  if (scope_end == std::string_view::npos) return name;
  return std::string(function.substr(0, scope_end)) + "::" + name;
}

}  // namespace

void launch_grid(const LaunchConfig& config, const void* kernel, const char* name,
                 std::function<void()> body) {
  const size_t threads = size_t{config.block.x} * config.block.y * config.block.z;
  const size_t blocks = size_t{config.grid.x} * config.grid.y * config.grid.z;
  if (threads == 0 || threads > 1024 || blocks == 0 || config.grid.y > 65535 ||
      config.grid.z > 65535 || config.block.z > 64) {
    set_last_error(cudaErrorInvalidConfiguration);
    return;
  }
  if (config.bytes > max_dynamic_shared(kernel) || config.bytes > kMaxDynamicShared) {
    set_last_error(cudaErrorInvalidValue);
    return;
  }
  submit(
      config.stream, [config, body = std::move(body)] { execute(config, body); },
      cudaGraphNodeTypeKernel, qualified_name(config.where, name));
}

}  // namespace simt
