// Fault injection: a test-only switch that makes tandem's own failure points fail on demand, to
// show that every failure becomes a poisoned result or a clear tandem::Error, that the engine
// goes on, that no var leaks and that no waiter hangs (tests/frontend/fault_injection_test.cc).
//
// Not part of the API a program uses: tandem/tandem.h does not include it, and nothing here is
// stable. It is an installed header only because the hooks sit in two libraries (the engine's
// allocators, sim streams and CUDA checks; the front end's host allocations and file writes),
// and the front end may include nothing of the engine but its installed headers.
//
//   namespace testing = tandem::testing;
//   testing::FaultScope faults({{testing::FaultKind::host_allocation, /*nth=*/7}});
//   ... run a program: the 7th host allocation fails (an out-of-memory error in its op) ...
//   CHECK(testing::faults_injected(testing::FaultKind::host_allocation) == 1);
//
// or, from the environment, read once with the rest of the configuration (engine_config.cc)
// when the process-wide engine is made:
//
//   TANDEM_FAULTS="host_alloc:7"                       the 7th host allocation fails
//   TANDEM_FAULTS="sim_kernel:p=0.01,seed=3;file:2"    1% of sim kernels, and the 2nd file step
//
// The kinds, and what a failure of each looks like (docs/building.md, "Fault injection"):
// - host_alloc:   an array's host memory (core/storage.cc): the op that needed it fails with
//                 "out of memory on cpu(0) allocating N bytes (injected fault)".
// - device_alloc: a block from an accelerator's memory pool (sim, cuda): OutOfMemoryError
//                 naming the device and the size, as when the device is full.
// - sim_launch:   enqueuing a kernel or copy on a sim stream throws, as a failed launch does.
// - sim_kernel:   a sim kernel or copy fails while it runs on its stream: the stream's next
//                 event carries the error, as a faulting CUDA kernel's would.
// - cuda_call:    a CUDA runtime or cuBLAS call that succeeded is reported as failed
//                 (cudaErrorUnknown) by check_cuda / check_cublas.
// - file:         each step of writing a file (create the temporary, write, fsync, rename,
//                 fsync the directory) is one event; the write fails naming the file and step.
//
// Cost when off: each hook is one relaxed load of a global flag, false unless a plan is armed.
// Armed, every event of a kind in the plan takes one atomic increment; other kinds stay one load.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tandem::testing {

enum class FaultKind : std::uint8_t {
  host_allocation,
  device_allocation,
  sim_launch,
  sim_kernel,
  cuda_call,
  file_write,
};
inline constexpr int kFaultKinds = 6;

// "host_alloc", "device_alloc", "sim_launch", "sim_kernel", "cuda_call", "file".
const char* fault_kind_name(FaultKind kind) noexcept;

// One kind's rule. `nth` > 0: its nth event (1-based, counted from arming) fails, once.
// Otherwise each event fails with `probability`, decided by a hash of (seed, kind, event
// number): the same seed fails the same event numbers. nth = 0 and probability = 0 only count.
struct FaultRule {
  FaultKind kind = FaultKind::host_allocation;
  std::uint64_t nth = 0;
  double probability = 0;
  std::uint64_t seed = 0;
};
using FaultPlan = std::vector<FaultRule>;

// "kind:N" or "kind:p=P[,seed=S]", rules separated by ';'. Throws tandem::Error saying what is
// accepted when `text` does not parse.
FaultPlan parse_fault_plan(const std::string& text);

// Arms `plan` process-wide, replacing any plan, with every kind's counts at 0. Not meant to
// race with running ops: arm and disarm between programs (after a wait_all).
void arm_faults(const FaultPlan& plan);
void disarm_faults() noexcept;

// Events of `kind` seen, and failures injected, since the last arm_faults.
std::uint64_t fault_events(FaultKind kind) noexcept;
std::uint64_t faults_injected(FaultKind kind) noexcept;

// Arms a plan for its lifetime.
class FaultScope {
 public:
  explicit FaultScope(const FaultPlan& plan) { arm_faults(plan); }
  FaultScope(std::initializer_list<FaultRule> rules) : FaultScope(FaultPlan(rules)) {}
  ~FaultScope() { disarm_faults(); }
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;
};

}  // namespace tandem::testing

namespace tandem::detail {

// True while a plan is armed: the one load every hook makes when injection is off.
extern std::atomic<bool> g_faults_armed;
inline bool faults_armed() noexcept {
  return g_faults_armed.load(std::memory_order_relaxed);
}

// Counts an event of `kind` and says whether it fails. Call only when faults_armed().
bool inject_fault(testing::FaultKind kind) noexcept;

// " (injected fault: <kind> #<event>)", for the message of a failure inject_fault decided.
std::string injected_fault_note(testing::FaultKind kind);

}  // namespace tandem::detail
