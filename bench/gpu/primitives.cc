// The gpu suite's single-op workloads: dispatch of tiny ops, element-wise bandwidth async and
// sync, broadcast, reductions and softmax at memory speed, dot, 1 GiB copies pageable and
// pinned, the ResNet-sized convolution and its gradients, and lenet_bn's second convolution.
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

#include "measure.h"

namespace tandem::bench::gpu {

namespace {

// y = y + 1 on one element, `ops` dependent ops: microseconds per op, waiting once at the end
// or (wait_each) after every op, as a torch.cuda.synchronize() loop does.
double tiny_ops_us(int ops, bool wait_each) {
  nd::NDArray y = nd::zeros({1}, target().device);
  y.wait_to_read();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < ops; ++i) {
    y = y + 1;
    if (wait_each) y.wait_to_read();
  }
  y.wait_to_read();
  return seconds_since(start) * 1e6 / ops;
}

// y = x + 1 at n float32 elements, `repeats` times: GB/s moved (a read and a write per element).
double add_bandwidth_gbps(std::int64_t n, int repeats, bool sync) {
  const nd::NDArray x = nd::ones({n}, target().device);
  nd::NDArray y = x + 1;
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) {
    y = x + 1;
    if (sync) y.wait_to_read();
  }
  nd::waitall();
  return 2.0 * 4.0 * static_cast<double>(n) * repeats / seconds_since(start) / 1e9;
}

// Issue 22's item 1 beyond y = x + 1, on a rows x cols float32 matrix: the bytes each call
// must move (elements read and written; the bias row and the reduced outputs are small enough
// to leave out), divided by the time: GB/s.
enum class MemoryKernel { broadcast_add, sum, mean, sum_rows, sum_columns, softmax };

double memory_kernel_gbps(MemoryKernel kernel, std::int64_t rows, std::int64_t cols, int repeats) {
  const nd::NDArray x = nd::random::uniform({rows, cols}, target().device);
  const nd::NDArray bias = nd::random::uniform({cols}, target().device);
  auto call = [&] {
    switch (kernel) {
      case MemoryKernel::broadcast_add:
        return x + bias;
      case MemoryKernel::sum:
        return x.sum();
      case MemoryKernel::mean:
        return x.mean();
      case MemoryKernel::sum_rows:
        return x.sum(-1);
      case MemoryKernel::sum_columns:
        return x.sum(0);
      case MemoryKernel::softmax:
        return nd::softmax(x, -1);
    }
    return nd::NDArray();
  };
  call().wait_to_read();  // warm-up: scratch, pool blocks
  const bool writes = kernel == MemoryKernel::broadcast_add || kernel == MemoryKernel::softmax;
  const auto start = std::chrono::steady_clock::now();
  nd::NDArray out;
  for (int i = 0; i < repeats; ++i) out = call();
  nd::waitall();
  const double bytes = (writes ? 8.0 : 4.0) * static_cast<double>(rows * cols);
  return bytes * repeats / seconds_since(start) / 1e9;
}

double dot_tflops(std::int64_t n, int repeats) {
  const nd::NDArray a = nd::random::uniform({n, n}, target().device);
  const nd::NDArray b = nd::random::uniform({n, n}, target().device);
  nd::dot(a, b).wait_to_read();  // warm-up: handle, workspace, algorithm
  const auto start = std::chrono::steady_clock::now();
  nd::NDArray c;
  for (int i = 0; i < repeats; ++i) c = nd::dot(a, b);
  nd::waitall();
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return flops * repeats / seconds_since(start) / 1e12;
}

// One copy of `bytes` between a host array (pinned or pageable) and an existing device array,
// timed alone: GB/s.
double copy_gbps(std::int64_t floats, bool to_device, bool pinned) {
  const nd::HostMemory memory = pinned ? nd::HostMemory::pinned : nd::HostMemory::pageable;
  nd::NDArray host = nd::ones({floats}, nd::float32, cpu(), memory);
  nd::NDArray device = nd::zeros({floats}, target().device);
  nd::waitall();
  if (to_device) {
    host.copyto(device);  // warm-up: staging buffers, pages
    device.wait_to_read();
  } else {
    device.copyto(host);
    host.wait_to_read();
  }
  const auto start = std::chrono::steady_clock::now();
  if (to_device) {
    host.copyto(device);
    device.wait_to_read();
  } else {
    device.copyto(host);
    host.wait_to_read();
  }
  return 4.0 * static_cast<double>(floats) / seconds_since(start) / 1e9;
}

enum class ConvPass { forward, backward_data, backward_weight };

// A convolution's shape: batch, in -> out channels, a square image, 3x3 kernels, padding 1.
struct ConvShape {
  std::int64_t batch, in_channels, out_channels, size;
};

// The ResNet-18-sized convolution of issue 22.
constexpr ConvShape kResNetConv{256, 64, 64, 28};
// lenet_bn's second convolution (16 -> 32 channels on the 4x4 maps after the first pool, batch
// 64): its calls are too small to keep a GPU busy, so they show what a call costs the host.
constexpr ConvShape kLeNetConv{64, 16, 32, 4};

// Milliseconds per call of `pass` on `shape`, `repeats` calls queued and one wait.
double conv_ms(ConvPass pass, const ConvShape& shape, int repeats) {
  const std::int64_t batch =
      shape.batch == kResNetConv.batch ? sized(shape.batch, 64) : shape.batch;
  const nd::Shape x_shape{batch, shape.in_channels, shape.size, shape.size};
  const nd::Shape y_shape{batch, shape.out_channels, shape.size, shape.size};
  const nd::Shape w_shape{shape.out_channels, shape.in_channels, 3, 3};
  const nd::Conv2dOptions options{.padding = nd::Size2d(1)};
  const nd::NDArray x = nd::random::uniform(x_shape, target().device);
  const nd::NDArray w = nd::random::uniform(w_shape, target().device);
  const nd::NDArray grad = nd::random::uniform(y_shape, target().device);
  auto call = [&] {
    switch (pass) {
      case ConvPass::forward:
        return nd::conv2d(x, w, options);
      case ConvPass::backward_data:
        return nd::conv2d_backward_data(grad, w, x_shape, options);
      case ConvPass::backward_weight:
        return nd::conv2d_backward_weight(grad, x, w_shape, options);
    }
    return nd::NDArray();
  };
  call().wait_to_read();
  const auto start = std::chrono::steady_clock::now();
  nd::NDArray out;
  for (int i = 0; i < repeats; ++i) out = call();
  nd::waitall();
  return seconds_since(start) * 1e3 / repeats;
}

}  // namespace

void run_primitives(bool quick, Records& records) {
  auto add = [&](const std::string& workload, const Measured& measured, const char* unit,
                 bool higher, const std::string& detail) {
    std::printf("  %-22s %12.3f %s\n", workload.c_str(), measured.value, unit);
    std::fflush(stdout);
    records.push_back(gpu_record(workload, "tandem", measured, unit, higher, detail));
  };
  const int ops = 1000;
  add("add_n1_async", median_of_rounds([&] { return tiny_ops_us(ops, false); }), "us/op", false,
      "y = y + 1, n = 1, 1000 dependent ops, one wait");
  add("add_n1_wait", median_of_rounds([&] { return tiny_ops_us(ops, true); }), "us/op", false,
      "y = y + 1, n = 1, wait_to_read after each op");
  for (const auto& [name, n, repeats] :
       {std::tuple{"4M", std::int64_t{4'000'000}, 200}, {"64M", std::int64_t{64} << 20, 20}}) {
    for (const bool sync : {false, true}) {
      add(std::string("add_") + name + (sync ? "_sync" : "_async"), median_of_rounds([&] {
            return add_bandwidth_gbps(sized(n, 256), quick ? repeats / 4 : repeats, sync);
          }),
          "GB/s", true,
          std::string("y = x + 1, float32, ") + (sync ? "wait_to_read after each" : "one wait"));
    }
  }
  // 4e6 and 64 M elements, as rows of about a thousand classes.
  for (const auto& [name, rows, cols, repeats] :
       {std::tuple{"4M", std::int64_t{4000}, std::int64_t{1000}, 200},
        {"64M", std::int64_t{65536}, std::int64_t{1024}, 20}}) {
    for (const auto& [kernel_name, kernel, what] :
         {std::tuple{"bcast_add", MemoryKernel::broadcast_add, "x + b, b one row (cols)"},
          {"sum", MemoryKernel::sum, "x.sum(), all elements"},
          {"mean", MemoryKernel::mean, "x.mean(), all elements"},
          {"sum_rows", MemoryKernel::sum_rows, "x.sum(-1), one sum per row"},
          {"sum_cols", MemoryKernel::sum_columns, "x.sum(0), one sum per column"},
          {"softmax", MemoryKernel::softmax, "softmax(x, -1)"}}) {
      add(std::string(kernel_name) + "_" + name, median_of_rounds([&] {
            return memory_kernel_gbps(kernel, sized(rows, 256), sized(cols, 8),
                                      quick ? repeats / 4 : repeats);
          }),
          "GB/s", true,
          std::string(what) + ", " + std::to_string(rows) + " x " + std::to_string(cols) +
              " float32");
    }
  }
  for (const auto& [n, repeats] : {std::pair{1024, 200}, {4096, 20}, {8192, 4}}) {
    add("dot_" + std::to_string(n),
        median_of_rounds([&] { return dot_tflops(sized(n, 16), repeats); }), "TFLOP/s", true,
        "float32, strict (no TF32)");
  }
  const std::int64_t floats = (quick ? std::int64_t{64} : std::int64_t{256}) << 20;
  const std::string size = quick ? "256 MiB" : "1 GiB";
  for (const bool to_device : {true, false}) {
    for (const bool pinned : {false, true}) {
      add(std::string(to_device ? "h2d_" : "d2h_") + (pinned ? "pinned" : "pageable"),
          median_of_rounds([&] { return copy_gbps(sized(floats, 8), to_device, pinned); }), "GB/s",
          true, size + (pinned ? ", pinned host array" : ", pageable host array (staged)"));
    }
  }
  const int conv_repeats = quick ? 3 : 10;
  for (const auto& [name, pass] : {std::pair{"fwd", ConvPass::forward},
                                   {"bwd_data", ConvPass::backward_data},
                                   {"bwd_weight", ConvPass::backward_weight}}) {
    add(std::string("conv_") + name,
        median_of_rounds([&] { return conv_ms(pass, kResNetConv, conv_repeats); }), "ms", false,
        "batch 256, 64->64, 3x3, pad 1, 28x28, float32");
  }
  for (const auto& [name, pass] : {std::pair{"fwd", ConvPass::forward},
                                   {"bwd_data", ConvPass::backward_data},
                                   {"bwd_weight", ConvPass::backward_weight}}) {
    add(std::string("conv_lenet_") + name, median_of_rounds([&] {
          return 1e3 * conv_ms(pass, kLeNetConv, static_cast<int>(sized(quick ? 200 : 1000, 20)));
        }),
        "us", false, "batch 64, 16->32, 3x3, pad 1, 4x4, float32, calls queued, one wait");
  }
}

}  // namespace tandem::bench::gpu
