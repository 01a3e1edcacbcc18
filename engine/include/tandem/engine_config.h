// EngineConfig: every knob of the engine, read from the environment in exactly one place
// (`EngineConfig::from_env`) and then passed in. docs/environment.md lists the variables.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace tandem {

enum class EngineKind {
  threaded,  // the real engine: dependency tracking, worker pools, async completion
  naive,     // runs every op inline in push: the synchronous baseline and a debugging mode
};

const char* engine_kind_name(EngineKind kind);

// The accelerators (process-wide, see tandem/accel/accelerator.h) and how the engine drives them.
struct AcceleratorConfig {
  // How many sim devices exist (sim(0) .. sim(n-1)).
  int sim_devices = 2;
  // Compute streams per accelerator (cuda and sim).
  int compute_streams = 2;
  // The sim cost model: an item on a sim stream lasts
  //   latency + max(flops / compute rate, bytes / bandwidth)
  // where bandwidth is the memory bandwidth on compute streams and the bus bandwidth on copy
  // streams, or as long as its CPU body really takes when that is longer. The compute streams of
  // a device share its compute rate and memory bandwidth: while k items run on them, each
  // progresses at 1/k of the rate. Each copy and comm stream has its bus rate to itself.
  double sim_gflops = 1000.0;        // compute rate, GFLOP/s
  double sim_memory_gbps = 500.0;    // device memory bandwidth, GB/s
  double sim_bus_gbps = 12.0;        // host<->device and peer bus, GB/s per direction
  double sim_latency_us = 5.0;       // per item (launch or copy setup)
  std::size_t sim_memory_mb = 4096;  // modelled device memory; past it allocation fails
  // Debug/benchmark mode: every accelerator op synchronizes its stream before it completes,
  // instead of completing at launch with event fences on its vars.
  bool synchronize_each_op = false;
  // cuBLAS may use TF32 tensor cores for float32 products (dot, convolution's gemms): about
  // 8x the fp32 rate on an H100, with a 10-bit mantissa in the products. Off by default, as
  // PyTorch's torch.backends.cuda.matmul.allow_tf32: float32 stays float32 unless asked.
  // Set on each compute stream's cuBLAS handle once, when the handle is made.
  bool allow_tf32 = false;
  // Convolutions on a GPU go through cuDNN when its library (libcudnn.so.9) loads: it is loaded
  // at run time (dlopen), never linked, and a machine without it uses tandem's own im2col +
  // cuBLAS kernels. Off: always the im2col kernels (e.g. to compare the two paths).
  bool use_cudnn = true;

  // Defaults overridden by the accelerator variables only (TANDEM_SIM_*, TANDEM_ACCEL_*): what
  // the accelerator registry reads when configure_accelerators was not called. Throws
  // tandem::Error naming the variable when a value does not parse.
  static AcceleratorConfig from_env();
};

struct EngineConfig {
  EngineKind kind = EngineKind::threaded;
  // Threads of the CPU worker pool (a oneTBB arena). 0: one per hardware thread.
  int cpu_workers = 0;
  // Dedicated threads for CPU ops with priority > 0 or a copy queue, so they never wait behind
  // long compute ops.
  int priority_workers = 1;
  // Backpressure: push blocks while this many ops are pushed but not finished. 0: unbounded.
  std::size_t max_ops_in_flight = 16384;
  // How long the first idle worker polls for new ops before it parks (another: a few polls).
  std::chrono::microseconds spin_before_park{50};
  // Destroying an engine waits this long for pending ops, then reports and abandons them.
  std::chrono::milliseconds shutdown_timeout{60000};
  // A wait (wait_for_var, wait_to_write, wait_all, and the naive engine's wait for an async
  // op's Completion) still blocked after this long logs a warning saying what it is blocked on,
  // and again each time as long again passes. 0: never.
  std::chrono::milliseconds wait_warn_after{120000};
  // Profile the process-wide engine from its creation and write a Chrome/Perfetto trace here
  // when it is destroyed (at exit). Empty: off.
  std::string profile_path{};
  // Captured graphs (tandem/graph.h): a run of accelerator ops of a captured window that may
  // form a device graph is recorded into one on its first replay and launched as one unit by
  // every later replay (a CUDA Graph on cuda, one modelled launch on sim). Off: every
  // accelerator op of a window is pushed one by one at each replay, e.g. to compare.
  bool device_graphs = true;
  AcceleratorConfig accel{};
  // spdlog level name: trace, debug, info, warn, error, critical, off.
  std::string log_level = "warn";
  // Test-only: a fault-injection plan (tandem/detail/fault_injection.h, e.g. "host_alloc:7"),
  // armed process-wide when this configuration makes the process-wide engine. Empty: off.
  std::string faults{};

  // Defaults overridden by TANDEM_* environment variables (values trimmed of surrounding
  // whitespace); throws tandem::Error naming the variable, its value, the accepted values and
  // how to get past it when a value does not parse.
  static EngineConfig from_env();
  // The same, reading from `getenv` (exposed for tests).
  static EngineConfig from_env(const char* (*getenv)(const char*));
};

}  // namespace tandem
