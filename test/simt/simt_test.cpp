// The SIMT emulator against what the PTX ISA and the CUDA programming guide say: shuffles in
// every mode and width, ballots, __syncthreads_count, mma.sync's and ldmatrix's fragment layouts
// against plain loops, cp.async landing at its wait, a missing barrier caught by the two orders, a
// deadlock and a bad shuffle stopping the process with a message, the launch limits a GPU
// enforces, graph capture and replay with the nodes named as the driver API names them, the
// calls a capturing thread may not make, and the host cuBLASLt's split-K rounding where a
// preference allows it. The
// kernels here are plain C++ launched through simt::launch (what test/simt/rewrite.py makes of
// <<<>>>).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cublasLt.h>

#include "engine/bf16.h"
#include "test/common/kernel_node_name.h"
#include "test/simt/simt_device.h"

namespace {

constexpr int kWarp = 32;

// One warp: out[lane] for each shuffle of the lane's own index (as float).
__global__ void shuffles(int mode, int arg, int width, float* out) {
  const float v = static_cast<float>(threadIdx.x);
  float r = 0;
  switch (mode) {
    case 0:
      r = __shfl_sync(0xffffffffu, v, arg, width);
      break;
    case 1:
      r = __shfl_xor_sync(0xffffffffu, v, arg, width);
      break;
    case 2:
      r = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
      break;
    default:
      r = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
      break;
  }
  out[threadIdx.x] = r;
}

// CUDA's documented results: a source outside the lane's segment of `width` lanes gives the
// lane's own value (up, down), and idx and xor stay within the segment.
float expected_shuffle(int mode, int arg, int width, int lane) {
  const int base = lane / width * width;
  switch (mode) {
    case 0:
      return static_cast<float>(base + arg % width);
    case 1: {
      const int j = lane ^ arg;
      return static_cast<float>(j / width * width > base ? lane : j);
    }
    case 2:
      return static_cast<float>(lane - base >= arg ? lane - arg : lane);
    default:
      return static_cast<float>(lane - base + arg < width ? lane + arg : lane);
  }
}

TEST_CASE("shuffles in every mode and width give CUDA's documented lanes") {
  std::vector<float> out(kWarp);
  for (int mode = 0; mode < 4; ++mode) {
    for (int width : {32, 16, 8, 4}) {
      for (int arg : {0, 1, 3, 7, 21}) {
        simt::launch(1, kWarp).run(shuffles)(mode, arg, width, out.data());
        for (int lane = 0; lane < kWarp; ++lane) {
          INFO("mode " << mode << " width " << width << " arg " << arg << " lane " << lane);
          REQUIRE(out[lane] == expected_shuffle(mode, arg, width, lane));
        }
      }
    }
  }
}

__global__ void votes(const int* predicate, unsigned* ballot, int* count) {
  const int p = predicate[threadIdx.x];
  ballot[threadIdx.x] = __ballot_sync(0xffffffffu, p);
  const int c = __syncthreads_count(p);
  if (threadIdx.x == 0) *count = c;
}

TEST_CASE("ballot per warp and __syncthreads_count over the block") {
  constexpr int kThreads = 96;
  std::vector<int> predicate(kThreads);
  int set = 0;
  for (int t = 0; t < kThreads; ++t) set += predicate[t] = (t * 7 % 5 == 0);
  std::vector<unsigned> ballot(kThreads);
  int count = -1;
  simt::launch(1, kThreads).run(votes)(predicate.data(), ballot.data(), &count);
  CHECK(count == set);
  for (int t = 0; t < kThreads; ++t) {
    unsigned expected = 0;
    for (int l = 0; l < kWarp; ++l) expected |= unsigned(predicate[t / kWarp * kWarp + l]) << l;
    CHECK(ballot[t] == expected);
  }
}

uint32_t pack(float lo, float hi) {
  return uint32_t{electra::float_to_bf16(lo).bits} | uint32_t{electra::float_to_bf16(hi).bits}
                                                         << 16;
}

// D (16 x 8) = A (16 x 16) B (16 x 8) + C by one mma.sync, each lane's fragments built with the
// PTX ISA's layout from row-major A and B (exact small integers, so the product is exact).
__global__ void mma_tile(const float* a, const float* b, const float* c, float* d) {
  const int lane = static_cast<int>(threadIdx.x), g = lane >> 2, t = lane & 3;
  const uint32_t fa[4] = {pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]),
                          pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]),
                          pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]),
                          pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9])};
  const uint32_t b0 = pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  const uint32_t b1 = pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t],
                  c[(g + 8) * 8 + 2 * t + 1]};
  simt::ptx(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n",
      simt::out(acc[0]), simt::out(acc[1]), simt::out(acc[2]), simt::out(acc[3]), simt::in(fa[0]),
      simt::in(fa[1]), simt::in(fa[2]), simt::in(fa[3]), simt::in(b0), simt::in(b1));
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

TEST_CASE("mma.sync m16n8k16 bf16: the fragment layout gives A B + C") {
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8), d(16 * 8);
  for (int i = 0; i < 256; ++i) a[i] = static_cast<float>((i * 37) % 11 - 5);
  for (int i = 0; i < 128; ++i) b[i] = static_cast<float>((i * 13) % 7 - 3);
  for (int i = 0; i < 128; ++i) c[i] = static_cast<float>(i % 5);
  simt::launch(1, kWarp).run(mma_tile)(a.data(), b.data(), c.data(), d.data());
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      float expected = c[i * 8 + j];
      for (int k = 0; k < 16; ++k) expected += a[i * 16 + k] * b[k * 8 + j];
      INFO("row " << i << " column " << j);
      REQUIRE(d[i * 8 + j] == expected);
    }
  }
}

// Four 8 x 8 bf16 matrices (stored row-major one after the other, 16-bit element e = its index)
// loaded by ldmatrix.x4 (trans or not) from dynamic shared memory; out[lane][q] the lane's words.
// Without `sync` the lanes read rows other lanes wrote with no __syncwarp between: a race.
__global__ void ldmatrix_tiles(const uint16_t* m, int trans, uint32_t* out, int sync = 1) {
  uint16_t* s = simt::dynamic_shared<uint16_t>();
  for (int i = static_cast<int>(threadIdx.x); i < 256; i += kWarp) s[i] = m[i];
  if (sync) __syncwarp();
  const int lane = static_cast<int>(threadIdx.x);
  uint32_t r[4];
  const uint32_t row = __cvta_generic_to_shared(s + (lane / 8) * 64 + (lane % 8) * 8);
  if (trans) {
    simt::ptx("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n",
              simt::out(r[0]), simt::out(r[1]), simt::out(r[2]), simt::out(r[3]), simt::in(row));
  } else {
    simt::ptx("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n", simt::out(r[0]),
              simt::out(r[1]), simt::out(r[2]), simt::out(r[3]), simt::in(row));
  }
  for (int q = 0; q < 4; ++q) out[lane * 4 + q] = r[q];
}

TEST_CASE("ldmatrix x4: lane l holds row l/4, columns 2(l%4) and +1 (transposed: the column)") {
  std::vector<uint16_t> m(256);
  for (int i = 0; i < 256; ++i) m[i] = static_cast<uint16_t>(i);
  std::vector<uint32_t> out(kWarp * 4);
  for (int trans = 0; trans < 2; ++trans) {
    simt::launch(1, kWarp, 512).run(ldmatrix_tiles)(m.data(), trans, out.data(), 1);
    for (int lane = 0; lane < kWarp; ++lane) {
      const int g = lane / 4, t = lane % 4;
      for (int q = 0; q < 4; ++q) {
        const int lo = trans ? q * 64 + (2 * t) * 8 + g : q * 64 + g * 8 + 2 * t;
        const int hi = trans ? lo + 8 : lo + 1;
        INFO("trans " << trans << " lane " << lane << " matrix " << q);
        REQUIRE(out[lane * 4 + q] == (uint32_t(hi) << 16 | uint32_t(lo)));
      }
    }
  }
}

// Each thread copies 16 bytes with cp.async in two groups; seen[t] records the first word of the
// thread's two destinations before any wait, after wait_group 1 and after wait_group 0.
__global__ void async_copies(const float4* src, float* seen) {
  float4* s = simt::dynamic_shared<float4>();
  const int t = static_cast<int>(threadIdx.x);
  for (int g = 0; g < 2; ++g) {
    simt::ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;\n",
              simt::in(static_cast<uint32_t>(__cvta_generic_to_shared(s + 2 * t + g))),
              simt::in(src + 2 * t + g), simt::in(16));
    simt::ptx("cp.async.commit_group;\n");
  }
  float* row = seen + 6 * t;
  row[0] = s[2 * t].x;
  row[1] = s[2 * t + 1].x;
  simt::ptx("cp.async.wait_group %0;\n", simt::in(1));
  row[2] = s[2 * t].x;
  row[3] = s[2 * t + 1].x;
  simt::ptx("cp.async.wait_group %0;\n", simt::in(0));
  row[4] = s[2 * t].x;
  row[5] = s[2 * t + 1].x;
}

TEST_CASE("cp.async lands at the wait_group that waits for its group, not before") {
  constexpr int kThreads = 4;
  std::vector<float4> src(2 * kThreads);
  for (int i = 0; i < 2 * kThreads; ++i) src[i] = make_float4(float(i + 1), 0, 0, 0);
  std::vector<float> seen(6 * kThreads);
  simt::launch(1, kThreads, 2 * kThreads * sizeof(float4))
      .run(async_copies)(src.data(), seen.data());
  for (int t = 0; t < kThreads; ++t) {
    const float* row = seen.data() + 6 * t;
    CHECK(std::isnan(row[0]));  // dynamic shared memory starts as 0xff bytes
    CHECK(std::isnan(row[1]));
    CHECK(row[2] == float(2 * t + 1));  // the older group
    CHECK(std::isnan(row[3]));
    CHECK(row[4] == float(2 * t + 1));
    CHECK(row[5] == float(2 * t + 2));
  }
}

// Thread t writes salt + t into slot t, then (with or without a barrier) reads slot t + 1.
__global__ void neighbour(int with_barrier, int salt, int* out) {
  __shared__ int slot[64];
  slot[threadIdx.x] = salt + static_cast<int>(threadIdx.x);
  if (with_barrier) __syncthreads();
  out[threadIdx.x] = threadIdx.x + 1 < blockDim.x ? slot[threadIdx.x + 1] : salt;
}

TEST_CASE("a missing __syncthreads reads stale shared memory in one of the two orders") {
  constexpr int kThreads = 64;
  int salt = 0;
  // How many threads read something other than their neighbour's value of this launch.
  const auto stale_reads = [&](int with_barrier, bool reverse) {
    salt += 1000;  // each launch writes new values, so the previous launch's are stale
    std::vector<int> out(kThreads);
    simt::set_reverse_order(reverse);
    simt::launch(1, kThreads).run(neighbour)(with_barrier, salt, out.data());
    simt::set_reverse_order(false);
    int stale = 0;
    for (int t = 0; t + 1 < kThreads; ++t) stale += out[t] != salt + t + 1;
    return stale;
  };
  CHECK(stale_reads(1, false) == 0);
  CHECK(stale_reads(1, true) == 0);
#if !defined(__SANITIZE_THREAD__)                // there the race is reported (the next test)
  CHECK(stale_reads(0, false) == kThreads - 1);  // every thread runs before its neighbour
  CHECK(stale_reads(0, true) == 0);              // every thread runs after it
#endif
}

// Runs `f` in a child process; returns what it wrote to stderr and its wait status.
template <class F>
std::pair<std::string, int> run_child(F f) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    f();
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) text.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {text, status};
}

// What `f` writes to stderr in a child process, REQUIRE-ing SIGABRT.
template <class F>
std::string aborted_child(F f) {
  const auto [text, status] = run_child([&] {
    std::signal(SIGABRT, SIG_DFL);  // not Catch's handler, which would report a failure
    f();
  });
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGABRT);
  return text;
}

#if defined(__SANITIZE_THREAD__)
// Lanes write their slot, then (after __syncwarp, after a shuffle, or after nothing) read the
// next lane's.
__global__ void warp_neighbour(int how, int* out) {
  __shared__ int slot[32];
  slot[threadIdx.x] = static_cast<int>(threadIdx.x);
  if (how == 1) __syncwarp();
  int other = 0;
  if (how == 2) other = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
  out[threadIdx.x] = slot[(threadIdx.x + 1) % 32] + other;
}

// What a new process of this test writes to stderr when its hidden case below runs `launch`
// ("neighbour 0": a kernel and its argument) in `order`. Not a forked child: that would carry this
// process's ThreadSanitizer state, in which the fibers' earlier launches here are not ordered
// before the child's.
std::string race_report(const char* launch, const char* order) {
  const auto [text, status] = run_child([&] {
    dup2(open("/dev/null", O_WRONLY), 1);  // its own test report
    setenv("SIMT_RACE_LAUNCH", launch, 1);
    setenv("SIMT_ORDER", order, 1);
    execl("/proc/self/exe", "simt_test", "[.race_launch]", static_cast<char*>(nullptr));
    _exit(127);
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 127);
  return text;
}

TEST_CASE("one launch of the ThreadSanitizer test, named by SIMT_RACE_LAUNCH", "[.race_launch]") {
  const char* launch = std::getenv("SIMT_RACE_LAUNCH");
  REQUIRE(launch != nullptr);
  const std::string name(launch);
  const int arg = name.back() - '0';
  std::vector<int> out(64);
  std::vector<uint16_t> m(256);
  std::vector<uint32_t> words(kWarp * 4);
  if (name.starts_with("neighbour ")) {
    simt::launch(1, 64).run(neighbour)(arg, 1, out.data());
  } else if (name.starts_with("warp_neighbour ")) {
    simt::launch(1, 32).run(warp_neighbour)(arg, out.data());
  } else if (name.starts_with("ldmatrix_tiles ")) {
    simt::launch(1, kWarp, 512).run(ldmatrix_tiles)(m.data(), 0, words.data(), arg);
  } else {
    FAIL("no launch " << name);
  }
}

TEST_CASE("under ThreadSanitizer a block's threads racing on shared memory are reported") {
  const auto race = [](const char* launch, const char* order) {
    INFO(launch << ", " << order << " order");
    const std::string report = race_report(launch, order);
    return report.find("ThreadSanitizer: data race") != std::string::npos;
  };
  for (const char* order : {"forward", "reverse"}) {
    // __syncthreads orders the block's threads.
    CHECK_FALSE(race("neighbour 1", order));
    CHECK(race("neighbour 0", order));
    // __syncwarp orders a warp's lanes, and so does a shuffle (as warp-synchronous code assumes).
    CHECK_FALSE(race("warp_neighbour 1", order));
    CHECK(race("warp_neighbour 0", order));
    CHECK_FALSE(race("warp_neighbour 2", order));
    // ldmatrix reads each lane's row as that lane's own access, at the collective: a row another
    // lane wrote just before it needs a __syncwarp.
    CHECK_FALSE(race("ldmatrix_tiles 1", order));
    CHECK(race("ldmatrix_tiles 0", order));
  }
  // The report names the kernel.
  CHECK(race_report("neighbour 0", "forward").find("in neighbour") != std::string::npos);
}
#endif

// Lane 0 waits at __syncwarp for lanes that wait at __syncthreads for lane 0.
__global__ void barrier_in_branch() {
  if (threadIdx.x == 0) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

__global__ void shuffle_from_exited_lane(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 20);
  out[threadIdx.x] += __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 20);
}

TEST_CASE("a deadlock and a shuffle from a lane not taking part stop the process, saying where") {
  const std::string deadlock = aborted_child([] { simt::launch(1, 64).run(barrier_in_branch)(); });
  CHECK(deadlock.find("deadlock") != std::string::npos);
  CHECK(deadlock.find("simt_test.cpp") != std::string::npos);  // the launch's file
  int out[32];
  const std::string shuffle =
      aborted_child([&] { simt::launch(1, 32).run(shuffle_from_exited_lane)(out); });
  CHECK(shuffle.find("reads lane 20") != std::string::npos);
}

__global__ void nothing() {}

TEST_CASE("launches a GPU refuses: too many threads, dynamic shared memory above the limit") {
  (void)cudaGetLastError();
  simt::launch(1, 1025).run(nothing)();
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  simt::launch(0, 32).run(nothing)();
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  simt::launch(1, 32, 64 << 10).run(nothing)();
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  REQUIRE(cudaFuncSetAttribute(reinterpret_cast<const void*>(nothing),
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               64 << 10) == cudaSuccess);
  simt::launch(1, 32, 64 << 10).run(nothing)();
  CHECK(cudaGetLastError() == cudaSuccess);
}

__global__ void add_one(int* x) {
  x[threadIdx.x] += 1;
}

struct Launcher {
  // Launches add_one by its name, as rewrite.py writes it, from a member function.
  static void launch(cudaStream_t stream, int* x) {
    simt::launch(1, 4, 0, stream).run(add_one, "add_one")(x);
  }
};

TEST_CASE("a captured stream records launches and copies; the graph replays them in order") {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  std::array<int, 4> x{}, y{};
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  Launcher::launch(stream, x.data());
  REQUIRE(cudaMemcpyAsync(y.data(), x.data(), sizeof(x), cudaMemcpyDeviceToDevice, stream) ==
          cudaSuccess);
  simt::launch(1, 1, 0, stream).run(add_one)(x.data() + 3);  // a launch without a name
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  CHECK(x == std::array<int, 4>{});  // recorded, not run
  size_t count = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &count) == cudaSuccess);
  REQUIRE(count == 3);
  std::array<cudaGraphNode_t, 3> nodes{};
  REQUIRE(cudaGraphGetNodes(graph, nodes.data(), &count) == cudaSuccess);
  // Named as the driver names a kernel: the launcher's scope is where the name's lookup starts.
  CHECK(electra::test::kernel_node_name(nodes[0]) == "{anonymous}::Launcher::add_one");
  CHECK(electra::test::kernel_node_name(nodes[1]).empty());  // a copy
  CHECK(electra::test::kernel_node_name(nodes[2]).empty());
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  CHECK(x == std::array<int, 4>{2, 2, 2, 4});
  CHECK(y == std::array<int, 4>{2, 2, 2, 3});
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_CASE("a thread capturing (not relaxed) may not allocate or synchronise, as on a GPU") {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  void* p = nullptr;
  void* q = nullptr;
  REQUIRE(cudaMalloc(&p, 64) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  constexpr cudaError_t kRefused = cudaErrorStreamCaptureUnsupported;
  CHECK(cudaMalloc(&q, 64) == kRefused);
  CHECK(cudaFree(p) == kRefused);
  CHECK(cudaMemcpy(p, p, 64, cudaMemcpyDeviceToDevice) == kRefused);
  CHECK(cudaMemset(p, 0, 64) == kRefused);
  CHECK(cudaDeviceSynchronize() == kRefused);
  CHECK(cudaGetLastError() == kRefused);
  // Another thread's calls are not refused (ThreadLocal).
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] {
    void* r = nullptr;
    other = cudaMalloc(&r, 64);
    if (other == cudaSuccess) other = cudaFree(r);
  }).join();
  CHECK(other == cudaSuccess);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  cudaGraphDestroy(graph);
  // Relaxed mode refuses nothing; after the capture nothing is refused.
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  CHECK(cudaMalloc(&q, 64) == cudaSuccess);
  CHECK(cudaFree(q) == cudaSuccess);
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  cudaGraphDestroy(graph);
  CHECK(cudaFree(p) == cudaSuccess);
  cudaStreamDestroy(stream);
}

// D = A B for a 1 x 4 bf16 A and a column of ones, D in bf16, with the preference's reduction
// scheme mask (nullptr: none set).
float gemm_1x4(const std::array<float, 4>& a, const uint32_t* reduction_mask) {
  cublasLtHandle_t lt;
  REQUIRE(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc;
  REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  // Column-major: A is 1 x 4 (ld 1), B 4 x 1, D 1 x 1.
  cublasLtMatrixLayout_t la, lb, ld;
  REQUIRE(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, 1, 4, 1) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, 4, 1, 4) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, 1, 1, 1) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref;
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  if (reduction_mask != nullptr) {
    REQUIRE(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                 reduction_mask,
                                                 sizeof(*reduction_mask)) == CUBLAS_STATUS_SUCCESS);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  REQUIRE(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &count) ==
          CUBLAS_STATUS_SUCCESS);
  REQUIRE(count == 1);
  std::array<electra::bf16, 4> a16{}, ones{};
  for (int i = 0; i < 4; ++i) {
    a16[i] = electra::float_to_bf16(a[i]);
    ones[i] = electra::float_to_bf16(1.0f);
  }
  electra::bf16 d = electra::float_to_bf16(0.0f);
  const float alpha = 1, beta = 0;
  REQUIRE(cublasLtMatmul(lt, desc, &alpha, a16.data(), la, ones.data(), lb, &beta, &d, ld, &d, ld,
                         &result.algo, nullptr, 0, nullptr) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  return electra::bf16_to_float(d);
}

TEST_CASE("cuBLASLt's bf16 split-K rounds the first half of K unless the preference forbids it") {
  // 1 + 2^-8 - 1 = 2^-8 exactly; split in halves, bf16(1 + 2^-8) = 1 (a tie, to even) and the
  // second half's -1 leaves 0.
  const std::array<float, 4> a{1.0f, 0.00390625f, -1.0f, 0.0f};
  CHECK(gemm_1x4(a, nullptr) == 0.0f);  // the default mask allows every scheme
  for (uint32_t rounds_in_bf16 :
       {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}) {
    CHECK(gemm_1x4(a, &rounds_in_bf16) == 0.0f);
  }
  for (uint32_t once : {CUBLASLT_REDUCTION_SCHEME_NONE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE}) {
    CHECK(gemm_1x4(a, &once) == 0.00390625f);  // what kernels/matmul.cu asks for bf16 outputs
  }
}

}  // namespace
