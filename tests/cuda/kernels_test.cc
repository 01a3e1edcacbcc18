// Every tandem::ops::cuda kernel against its CPU twin on the same input: equal results (within
// rounding for floating reductions and transcendental functions), on a real device (skipped,
// visibly, without one).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/reduce_plan.h"        // ops/src: which axis reductions take the columns kernel
#include "common/update_group_plan.h"  // ops/src: the grouped update's launch tables
#include "cuda_test_util.h"
#include "kernel_declarations.h"  // ops/src: the grouped updates' cpu and cuda kernels
#include "tandem/ops/cpu/copy.h"
#include "tandem/ops/cpu/elementwise.h"
#include "tandem/ops/cpu/gemm.h"
#include "tandem/ops/cpu/random.h"
#include "tandem/ops/cpu/reduce.h"
#include "tandem/ops/cpu/softmax.h"
#include "tandem/ops/cuda/copy.h"
#include "tandem/ops/cuda/elementwise.h"
#include "tandem/ops/cuda/gemm.h"
#include "tandem/ops/cuda/random.h"
#include "tandem/ops/cuda/reduce.h"
#include "tandem/ops/cuda/softmax.h"

namespace ops = tandem::ops;
using ops::ArrayView;
using ops::DType;
using ops::Shape;
using namespace tandem::test;  // have_cuda, DeviceBuffer, compute_stream, sample

namespace {

template <class T>
ArrayView view(T* data, const Shape& shape) {
  return ops::contiguous_view(data, ops::dtype_of<T>(), shape);
}

// The transpose of a dense rows x cols view: shape cols x rows, strides (1, cols).
template <class T>
ArrayView transposed(T* data, std::int64_t rows, std::int64_t cols) {
  return ArrayView{data, ops::dtype_of<T>(), Shape{cols, rows}, {1, cols}};
}

template <class T>
void check_close(const std::vector<T>& gpu, const std::vector<T>& cpu, double tolerance) {
  REQUIRE(gpu.size() == cpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (std::isnan(static_cast<double>(cpu[i]))) {
      CHECK(std::isnan(static_cast<double>(gpu[i])));
    } else {
      CHECK(static_cast<double>(gpu[i]) ==
            doctest::Approx(static_cast<double>(cpu[i])).epsilon(tolerance));
    }
  }
}

// reduce_axis of float32 `host` (on the device: `in`) along `axis`, gpu against cpu: argmax
// exactly, the others within rounding.
void check_reduce_axis(ops::ReduceOp op, const DeviceBuffer<float>& in, std::vector<float>& host,
                       const Shape& shape, int axis) {
  const Shape reduced = shape.without_axis(axis);
  const auto count = static_cast<std::size_t>(reduced.num_elements());
  if (op == ops::ReduceOp::argmax) {
    DeviceBuffer<std::int64_t> out(count);
    std::vector<std::int64_t> expected(count);
    ops::cuda::reduce_axis(op, view(in.data(), shape), axis, view(out.data(), reduced),
                           compute_stream());
    ops::cpu::reduce_axis(op, view(host.data(), shape), axis, view(expected.data(), reduced));
    CHECK(out.read() == expected);
  } else {
    DeviceBuffer<float> out(count);
    std::vector<float> expected(count);
    ops::cuda::reduce_axis(op, view(in.data(), shape), axis, view(out.data(), reduced),
                           compute_stream());
    ops::cpu::reduce_axis(op, view(host.data(), shape), axis, view(expected.data(), reduced));
    check_close(out.read(), expected, 1e-5);
  }
}

// A grouped optimizer update of tensors of `sizes` elements, on the GPU and on the CPU from
// the same values: the same bits (the same operations per element, no FMA contraction), and
// the launches the plan counts (what sim reports for the same call).
template <class T>
void check_update_group(const std::vector<std::int64_t>& sizes, int moments) {
  CAPTURE(sizes.size());
  CAPTURE(moments);
  struct Tensor {
    std::vector<T> host[4];  // weight, grad, first moment, second moment
    std::unique_ptr<DeviceBuffer<T>> device[4];
  };
  std::vector<Tensor> tensors(sizes.size());
  ops::UpdateGroup gpu_group{.dtype = ops::dtype_of<T>(), .tensors = {}};
  ops::UpdateGroup cpu_group = gpu_group;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    void* device_data[4] = {};
    void* host_data[4] = {};
    for (int a = 0; a < 2 + moments; ++a) {
      std::vector<T>& host = tensors[t].host[a];
      host = sample<T>(sizes[t], static_cast<unsigned>(t * 4 + a));
      if (a == 3) {
        for (T& v : host) v = std::abs(v);  // a variance
      }
      tensors[t].device[a] = std::make_unique<DeviceBuffer<T>>(host);
      device_data[a] = tensors[t].device[a]->data();
      host_data[a] = host.data();
    }
    gpu_group.tensors.push_back(
        {device_data[0], device_data[1], device_data[2], device_data[3], sizes[t]});
    cpu_group.tensors.push_back({host_data[0], host_data[1], host_data[2], host_data[3], sizes[t]});
  }
  const ops::AdamStep adam{.rescale = 1.0 / 64, .wd = 1e-3, .step_size = 1e-3};
  const tandem::LaunchCounts before = tandem::launch_counts();
  if (moments == 2) {
    ops::cuda::adam_update_group(gpu_group, adam, compute_stream());
    ops::cpu::adam_update_group(cpu_group, adam);
  } else {
    const double momentum = moments == 1 ? 0.9 : 0.0;
    ops::cuda::sgd_update_group(gpu_group, 0.1 / 64, 1e-4, momentum, compute_stream());
    ops::cpu::sgd_update_group(cpu_group, 0.1 / 64, 1e-4, momentum);
  }
  const tandem::LaunchCounts made = tandem::launch_counts() - before;
  CHECK(made.kernels == ops::update_group_tables(gpu_group));
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    CAPTURE(t);
    for (int a = 0; a < 2 + moments; ++a) {
      if (a == 1) continue;  // the gradient is only read
      CHECK(tensors[t].device[a]->read() == tensors[t].host[a]);
    }
  }
}

}  // namespace

TEST_SUITE("cuda.kernels") {
  TEST_CASE("the convolution's bias gradient (one block per channel) matches the CPU") {
    if (!have_cuda("conv2d_backward_bias")) return;
    // LeNet's, a 1x1 map, ResNet-18's first block at batch 256, an empty batch.
    for (const Shape& shape :
         {Shape{64, 16, 6, 6}, Shape{3, 5, 1, 1}, Shape{256, 64, 28, 28}, Shape{0, 4, 3, 3}}) {
      CAPTURE(shape.to_string());
      const Shape bias{shape[1]};
      auto host = sample<float>(shape.num_elements(), 21);
      DeviceBuffer<float> dy(host), db(static_cast<std::size_t>(shape[1]));
      std::vector<float> expected(static_cast<std::size_t>(shape[1]));
      const tandem::LaunchCounts before = tandem::launch_counts();
      ops::cuda::conv2d_backward_bias(view(dy.data(), shape), view(db.data(), bias),
                                      compute_stream());
      CHECK((tandem::launch_counts() - before).kernels == 1);
      ops::cpu::conv2d_backward_bias(view(host.data(), shape), view(expected.data(), bias));
      check_close(db.read(), expected, 1e-4);
      auto host64 = sample<double>(shape.num_elements(), 22);
      DeviceBuffer<double> dy64(host64), db64(static_cast<std::size_t>(shape[1]));
      std::vector<double> expected64(static_cast<std::size_t>(shape[1]));
      ops::cuda::conv2d_backward_bias(view(dy64.data(), shape), view(db64.data(), bias),
                                      compute_stream());
      ops::cpu::conv2d_backward_bias(view(host64.data(), shape), view(expected64.data(), bias));
      check_close(db64.read(), expected64, 1e-10);
    }
  }

  TEST_CASE("grouped optimizer updates give the CPU's bits, one launch per table of the plan") {
    if (!have_cuda("grouped optimizer updates")) return;
    // LeNet-BN's parameters (one table); 40 tensors and an empty one (two tables, 32 tensors
    // each at most); a tensor of 257 chunks between two small ones (a tensor split over tables).
    const std::vector<std::int64_t> lenet{144, 16, 16, 16, 4608, 32, 32, 32, 5120, 10};
    std::vector<std::int64_t> forty;
    for (int i = 0; i < 40; ++i) forty.push_back(1 + 97 * i);
    forty.push_back(0);
    const std::vector<std::int64_t> long_one{7, 257 * ops::kUpdateChunk + 5, 3};
    for (int moments : {0, 1, 2}) {
      check_update_group<float>(lenet, moments);
      check_update_group<double>(forty, moments);
      check_update_group<float>(long_one, moments);
    }
  }

  TEST_CASE("copy converts dtypes and follows strides like the CPU; fill and arange match") {
    if (!have_cuda("copy")) return;
    const std::int64_t rows = 37, cols = 53;
    auto input = sample<double>(rows * cols, 1, -1e10, 1e10);
    DeviceBuffer<double> in(input);
    DeviceBuffer<std::int32_t> out(rows * cols);
    std::vector<std::int32_t> expected(rows * cols);
    ops::cuda::copy(transposed(in.data(), rows, cols), view(out.data(), Shape{cols, rows}),
                    compute_stream());
    ops::cpu::copy(transposed(input.data(), rows, cols), view(expected.data(), Shape{cols, rows}));
    CHECK(out.read() == expected);

    DeviceBuffer<float> ramp(1000);
    std::vector<float> ramp_cpu(1000);
    ops::cuda::arange(view(ramp.data(), Shape{10, 100}), 0.1, 0.3, compute_stream());
    ops::cpu::arange(view(ramp_cpu.data(), Shape{10, 100}), 0.1, 0.3);
    CHECK(ramp.read() == ramp_cpu);
    ops::cuda::fill(view(ramp.data(), Shape{1000}), 2.5, compute_stream());
    CHECK(ramp.read() == std::vector<float>(1000, 2.5f));
  }

  TEST_CASE("unary, binary with broadcasting and scalar ops match the CPU") {
    if (!have_cuda("elementwise")) return;
    const Shape shape{64, 33};
    auto a_host = sample<float>(64 * 33, 2, 0.1, 4.0);
    auto row_host = sample<float>(33, 3, 0.1, 4.0);
    DeviceBuffer<float> a(a_host), row(row_host), out(64 * 33);
    std::vector<float> expected(64 * 33);
    const ArrayView row_view = ops::broadcast_view(view(row.data(), Shape{33}), shape);
    const ArrayView row_cpu = ops::broadcast_view(view(row_host.data(), Shape{33}), shape);
    for (auto op : {ops::UnaryOp::negative, ops::UnaryOp::abs, ops::UnaryOp::square,
                    ops::UnaryOp::relu, ops::UnaryOp::exp, ops::UnaryOp::log, ops::UnaryOp::sqrt,
                    ops::UnaryOp::sigmoid, ops::UnaryOp::tanh}) {
      CAPTURE(ops::op_name(op));
      ops::cuda::unary(op, view(a.data(), shape), view(out.data(), shape), compute_stream());
      ops::cpu::unary(op, view(a_host.data(), shape), view(expected.data(), shape));
      check_close(out.read(), expected, 1e-6);
    }
    for (auto op : {ops::BinaryOp::add, ops::BinaryOp::subtract, ops::BinaryOp::multiply,
                    ops::BinaryOp::divide, ops::BinaryOp::maximum, ops::BinaryOp::minimum,
                    ops::BinaryOp::greater, ops::BinaryOp::equal, ops::BinaryOp::power}) {
      CAPTURE(ops::op_name(op));
      ops::cuda::binary(op, view(a.data(), shape), row_view, view(out.data(), shape),
                        compute_stream());
      ops::cpu::binary(op, view(a_host.data(), shape), row_cpu, view(expected.data(), shape));
      check_close(out.read(), expected, 1e-6);
      ops::cuda::binary_scalar(op, view(a.data(), shape), 1.5, true, view(out.data(), shape),
                               compute_stream());
      ops::cpu::binary_scalar(op, view(a_host.data(), shape), 1.5, true,
                              view(expected.data(), shape));
      check_close(out.read(), expected, 1e-6);
    }
    std::vector<std::int32_t> ints = {7, -7, 100, -2147483647 - 1};
    DeviceBuffer<std::int32_t> i_in(ints), i_out(4);
    std::vector<std::int32_t> i_expected(4);
    ops::cuda::binary_scalar_dense(ops::BinaryOp::divide, DType::int32, i_in.data(), -1.0, false,
                                   i_out.data(), 4, compute_stream());
    ops::cpu::binary_scalar_dense(ops::BinaryOp::divide, DType::int32, ints.data(), -1.0, false,
                                  i_expected.data(), 4);
    CHECK(i_out.read() == i_expected);
    CHECK_THROWS_AS(ops::cuda::binary_scalar_dense(ops::BinaryOp::divide, DType::int32, i_in.data(),
                                                   0.0, false, i_out.data(), 4, compute_stream()),
                    tandem::Error);
    CHECK_THROWS_AS(ops::cuda::unary_dense(ops::UnaryOp::exp, DType::int32, i_in.data(),
                                           i_out.data(), 4, compute_stream()),
                    tandem::Error);
  }

  TEST_CASE("binary ops on two-dimensional layouts and on strided ones match the CPU") {
    if (!have_cuda("elementwise 2d")) return;
    struct Case {
      Shape shape;    // the output's
      Shape b_shape;  // broadcast to `shape`
      bool a_transposed;
    };
    // A matrix plus a row, plus a column, a transposed operand (all row by row), a 3-d array
    // whose broadcast row merges it into two dimensions, rows shorter than a warp, and a layout
    // that stays three-dimensional (the strided kernel).
    for (const Case& c : {Case{{300, 1000}, {1000}, false}, Case{{1000, 40}, {1000, 1}, false},
                          Case{{64, 70}, {64, 70}, true}, Case{{4, 50, 33}, {33}, false},
                          Case{{500, 7}, {7}, false}, Case{{4, 50, 33}, {50, 1}, false}}) {
      CAPTURE(c.shape.to_string());
      CAPTURE(c.b_shape.to_string());
      const auto n = static_cast<std::size_t>(c.shape.num_elements());
      auto a_host = sample<float>(c.shape.num_elements(), 21, 0.1, 4.0);
      auto b_host = sample<float>(c.b_shape.num_elements(), 22, 0.1, 4.0);
      DeviceBuffer<float> a(a_host), b(b_host), out(n);
      std::vector<float> expected(n);
      // A transposed a: the buffer holds its transpose, read with swapped strides.
      const auto a_view = [&](float* data) {
        return c.a_transposed ? transposed(data, c.shape[1], c.shape[0]) : view(data, c.shape);
      };
      const ArrayView b_gpu = ops::broadcast_view(view(b.data(), c.b_shape), c.shape);
      const ArrayView b_cpu = ops::broadcast_view(view(b_host.data(), c.b_shape), c.shape);
      for (auto op : {ops::BinaryOp::add, ops::BinaryOp::multiply, ops::BinaryOp::divide,
                      ops::BinaryOp::maximum}) {
        CAPTURE(ops::op_name(op));
        ops::cuda::binary(op, a_view(a.data()), b_gpu, view(out.data(), c.shape), compute_stream());
        ops::cpu::binary(op, a_view(a_host.data()), b_cpu, view(expected.data(), c.shape));
        check_close(out.read(), expected, 1e-6);
      }
    }
  }

  TEST_CASE("integer division by a zero element fails the stream with the CPU's error") {
    if (!have_cuda("zero divisor")) return;
    tandem::Stream& stream = compute_stream();
    stream.synchronize();
    const Shape shape{2, 3};
    std::vector<std::int32_t> a_host{6, 6, 6, 6, 6, 6}, b_host{1, 2, 0, 3, 1, 2};
    DeviceBuffer<std::int32_t> a(a_host), b(b_host), out(6);
    std::vector<std::int32_t> expected(6);
    const auto message_of = [](const auto& call) -> std::string {
      try {
        call();
      } catch (const tandem::Error& e) {
        return e.what();
      }
      return "(no error)";
    };
    const std::string cpu_message = message_of([&] {
      ops::cpu::binary(ops::BinaryOp::divide, view(a_host.data(), shape),
                       view(b_host.data(), shape), view(expected.data(), shape));
    });
    REQUIRE(cpu_message.find("integer division by zero") != std::string::npos);
    // a / b, b holding a zero: the launch succeeds, the stream's next sync reports the error.
    ops::cuda::binary(ops::BinaryOp::divide, view(a.data(), shape), view(b.data(), shape),
                      view(out.data(), shape), stream);
    CHECK(message_of([&] { stream.synchronize(); }) == cpu_message);
    // 6 / b, the scalar first: the divisors are b's elements.
    const std::string cpu_scalar_message = message_of([&] {
      ops::cpu::binary_scalar(ops::BinaryOp::divide, view(b_host.data(), shape), 6.0, true,
                              view(expected.data(), shape));
    });
    ops::cuda::binary_scalar(ops::BinaryOp::divide, view(b.data(), shape), 6.0, true,
                             view(out.data(), shape), stream);
    CHECK(message_of([&] { stream.synchronize(); }) == cpu_scalar_message);
    // Without a zero: no error, the CPU's quotients.
    ops::cuda::binary(ops::BinaryOp::divide, view(b.data(), shape), view(a.data(), shape),
                      view(out.data(), shape), stream);
    CHECK(message_of([&] { stream.synchronize(); }) == "(no error)");
    ops::cpu::binary(ops::BinaryOp::divide, view(b_host.data(), shape), view(a_host.data(), shape),
                     view(expected.data(), shape));
    CHECK(out.read() == expected);
  }

  TEST_CASE("gemm matches the CPU for float, double (transposed operand) and int") {
    if (!have_cuda("gemm")) return;
    const std::int64_t m = 65, k = 40, n = 31;
    auto a_host = sample<double>(m * k, 4);
    auto b_host = sample<double>(k * n, 5);
    DeviceBuffer<double> a(a_host), b(b_host), c(m * n);
    std::vector<double> expected(m * n);
    ops::cuda::gemm(view(a.data(), Shape{m, k}), view(b.data(), Shape{k, n}),
                    view(c.data(), Shape{m, n}), compute_stream());
    ops::cpu::gemm(view(a_host.data(), Shape{m, k}), view(b_host.data(), Shape{k, n}),
                   view(expected.data(), Shape{m, n}));
    check_close(c.read(), expected, 1e-12);
    // a stored as its transpose (k x m dense): c = (a^T)^T b.
    ops::cuda::gemm(transposed(a.data(), k, m), view(b.data(), Shape{k, n}),
                    view(c.data(), Shape{m, n}), compute_stream());
    ops::cpu::gemm(transposed(a_host.data(), k, m), view(b_host.data(), Shape{k, n}),
                   view(expected.data(), Shape{m, n}));
    check_close(c.read(), expected, 1e-12);

    std::vector<float> af(a_host.begin(), a_host.end()), bf(b_host.begin(), b_host.end());
    DeviceBuffer<float> fa(af), fb(bf), fc(m * n);
    std::vector<float> fexpected(m * n);
    ops::cuda::gemm(view(fa.data(), Shape{m, k}), view(fb.data(), Shape{k, n}),
                    view(fc.data(), Shape{m, n}), compute_stream());
    ops::cpu::gemm(view(af.data(), Shape{m, k}), view(bf.data(), Shape{k, n}),
                   view(fexpected.data(), Shape{m, n}));
    check_close(fc.read(), fexpected, 1e-4);

    std::vector<std::int64_t> ai(a_host.begin(), a_host.end()), bi(b_host.begin(), b_host.end());
    DeviceBuffer<std::int64_t> ia(ai), ib(bi), ic(m * n);
    std::vector<std::int64_t> iexpected(m * n);
    ops::cuda::gemm(view(ia.data(), Shape{m, k}), view(ib.data(), Shape{k, n}),
                    view(ic.data(), Shape{m, n}), compute_stream());
    ops::cpu::gemm(view(ai.data(), Shape{m, k}), view(bi.data(), Shape{k, n}),
                   view(iexpected.data(), Shape{m, n}));
    CHECK(ic.read() == iexpected);
  }

  TEST_CASE("reductions over everything and along each axis match the CPU, argmax included") {
    if (!have_cuda("reduce")) return;
    const Shape shape{17, 9, 23};
    auto host = sample<float>(17 * 9 * 23, 6);
    host[100] = 1e6f;  // a unique maximum for argmax
    DeviceBuffer<float> in(host);
    for (auto op : {ops::ReduceOp::sum, ops::ReduceOp::mean, ops::ReduceOp::max, ops::ReduceOp::min,
                    ops::ReduceOp::norm, ops::ReduceOp::argmax}) {
      CAPTURE(ops::op_name(op));
      const bool arg = op == ops::ReduceOp::argmax;
      if (arg) {
        DeviceBuffer<std::int64_t> out(1);
        std::int64_t expected = 0;
        ops::cuda::reduce_all(op, view(in.data(), shape), view(out.data(), Shape{}),
                              compute_stream());
        ops::cpu::reduce_all(op, view(host.data(), shape), view(&expected, Shape{}));
        CHECK(out.read()[0] == expected);
      } else {
        DeviceBuffer<float> out(1);
        float expected = 0;
        ops::cuda::reduce_all(op, view(in.data(), shape), view(out.data(), Shape{}),
                              compute_stream());
        ops::cpu::reduce_all(op, view(host.data(), shape), view(&expected, Shape{}));
        check_close(out.read(), {expected}, 1e-5);
      }
      for (int axis = 0; axis < 3; ++axis) {
        CAPTURE(axis);
        check_reduce_axis(op, in, host, shape, axis);
      }
    }
    // Integer sums wrap identically; NaN propagates through max; argmax picks the first NaN.
    std::vector<std::int32_t> ints = {2147483647, 5, -3, 2147483647};
    DeviceBuffer<std::int32_t> i_in(ints), i_out(1);
    std::int32_t i_expected = 0;
    ops::cuda::reduce_all(ops::ReduceOp::sum, view(i_in.data(), Shape{4}),
                          view(i_out.data(), Shape{}), compute_stream());
    ops::cpu::reduce_all(ops::ReduceOp::sum, view(ints.data(), Shape{4}),
                         view(&i_expected, Shape{}));
    CHECK(i_out.read()[0] == i_expected);
    std::vector<double> with_nan = {1.0, NAN, 3.0, NAN, 2.0};
    DeviceBuffer<double> n_in(with_nan), n_max(1);
    DeviceBuffer<std::int64_t> n_arg(1);
    ops::cuda::reduce_all(ops::ReduceOp::max, view(n_in.data(), Shape{5}),
                          view(n_max.data(), Shape{}), compute_stream());
    ops::cuda::reduce_all(ops::ReduceOp::argmax, view(n_in.data(), Shape{5}),
                          view(n_arg.data(), Shape{}), compute_stream());
    CHECK(std::isnan(n_max.read()[0]));
    CHECK(n_arg.read()[0] == 1);
  }

  TEST_CASE("dense reductions along a non-last axis (the columns kernel) match the CPU") {
    if (!have_cuda("reduce columns")) return;
    // Short and long axes, a few or many columns: one chunk, and chunks spread over the device
    // (the first shape's axis 0 is split so that its partials are combined in a second kernel).
    for (const auto& [shape, axis] : {std::pair{Shape{4000, 37}, 0},
                                      {Shape{3, 5}, 0},
                                      {Shape{6, 700, 33}, 1},
                                      {Shape{2, 9, 1, 4}, 1},
                                      {Shape{257, 3, 65}, 0}}) {
      CAPTURE(shape.to_string());
      CAPTURE(axis);
      const auto n = static_cast<std::size_t>(shape.num_elements());
      auto host = sample<float>(shape.num_elements(), 11);
      host[n / 3] = 1e6f;  // a unique maximum for argmax in one column
      DeviceBuffer<float> in(host);
      REQUIRE(ops::reduces_dense_columns(view(in.data(), shape), axis));
      const Shape reduced = shape.without_axis(axis);
      for (auto op : {ops::ReduceOp::sum, ops::ReduceOp::mean, ops::ReduceOp::max,
                      ops::ReduceOp::min, ops::ReduceOp::norm, ops::ReduceOp::argmax}) {
        CAPTURE(ops::op_name(op));
        const tandem::LaunchCounts before = tandem::launch_counts();
        check_reduce_axis(op, in, host, shape, axis);
        // What sim counts for the same call (common/reduce_plan.h).
        const tandem::LaunchCounts made = tandem::launch_counts() - before;
        const tandem::LaunchCounts planned = ops::reduce_axis_launches(
            view(in.data(), shape), axis, view(static_cast<float*>(nullptr), reduced));
        CHECK(made.kernels == planned.kernels);
        CHECK(made.library_calls == planned.library_calls);
      }
    }
    // Into a strided output (every other element of a buffer): the finishing kernel's indexer.
    const Shape shape{300, 8};
    auto host = sample<double>(300 * 8, 12);
    DeviceBuffer<double> in(host), out(16);
    std::vector<double> expected(16, 0.0);
    const ArrayView out_view{out.data(), DType::float64, Shape{8}, {2}};
    const ArrayView expected_view{expected.data(), DType::float64, Shape{8}, {2}};
    ops::cuda::reduce_axis(ops::ReduceOp::sum, view(in.data(), shape), 0, out_view,
                           compute_stream());
    ops::cpu::reduce_axis(ops::ReduceOp::sum, view(host.data(), shape), 0, expected_view);
    check_close(out.read(), expected, 1e-12);
  }

  TEST_CASE("a dense whole-array reduction read through its pointer matches the CPU") {
    if (!have_cuda("reduce dense")) return;
    const std::int64_t n = 4'000'003;  // not a multiple of CUB's vector width
    auto host = sample<float>(n, 13);
    DeviceBuffer<float> in(host);
    for (auto op :
         {ops::ReduceOp::sum, ops::ReduceOp::mean, ops::ReduceOp::max, ops::ReduceOp::min}) {
      CAPTURE(ops::op_name(op));
      DeviceBuffer<float> out(1);
      float expected = 0;
      ops::cuda::reduce_all(op, view(in.data(), Shape{n}), view(out.data(), Shape{}),
                            compute_stream());
      ops::cpu::reduce_all(op, view(host.data(), Shape{n}), view(&expected, Shape{}));
      check_close(out.read(), {expected}, 1e-5);
    }
    std::vector<std::int32_t> ints(1000, 2147483647);
    DeviceBuffer<std::int32_t> i_in(ints), i_out(1);
    std::int32_t i_expected = 0;
    ops::cuda::reduce_all(ops::ReduceOp::sum, view(i_in.data(), Shape{1000}),
                          view(i_out.data(), Shape{}), compute_stream());
    ops::cpu::reduce_all(ops::ReduceOp::sum, view(ints.data(), Shape{1000}),
                         view(&i_expected, Shape{}));
    CHECK(i_out.read()[0] == i_expected);  // wraps as on the CPU
  }

  TEST_CASE("softmax, its gradient and softmax cross entropy match the CPU at every row length") {
    if (!have_cuda("softmax")) return;
    // A warp's row in 1, 2, ... 32 values per lane, its edges, and rows a block takes (> 1024).
    for (const std::int64_t classes : {1, 7, 32, 33, 100, 1000, 1024, 1025, 3000}) {
      for (const std::int64_t rows : {1, 5, 300}) {
        CAPTURE(classes);
        CAPTURE(rows);
        const Shape shape{rows, classes};
        const auto n = static_cast<std::size_t>(rows * classes);
        auto x_host = sample<double>(rows * classes, 14, -20.0, 20.0);
        auto dy_host = sample<double>(rows * classes, 15);
        DeviceBuffer<double> x(x_host), dy(dy_host), y(n), dx(n);
        std::vector<double> y_cpu(n), dx_cpu(n);
        for (const bool log : {false, true}) {
          CAPTURE(log);
          ops::cuda::softmax_rows(view(x.data(), shape), view(y.data(), shape), log,
                                  compute_stream());
          ops::cpu::softmax_rows(view(x_host.data(), shape), view(y_cpu.data(), shape), log);
          check_close(y.read(), y_cpu, 1e-12);
          ops::cuda::softmax_rows_backward(view(y.data(), shape), view(dy.data(), shape),
                                           view(dx.data(), shape), log, compute_stream());
          ops::cpu::softmax_rows_backward(view(y_cpu.data(), shape), view(dy_host.data(), shape),
                                          view(dx_cpu.data(), shape), log);
          check_close(dx.read(), dx_cpu, 1e-9);
        }
        // Labels in range, and one out of range (loss and gradient 0) in every fifth row.
        std::vector<std::int32_t> labels_host(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) {
          labels_host[static_cast<std::size_t>(r)] =
              r % 5 == 4 ? -1 : static_cast<std::int32_t>((r * 7) % classes);
        }
        DeviceBuffer<std::int32_t> labels(labels_host);
        std::vector<double> head_host{1.0};
        DeviceBuffer<double> loss(static_cast<std::size_t>(rows)), p(n), head(head_host), d(n);
        std::vector<double> loss_cpu(static_cast<std::size_t>(rows)), p_cpu(n), d_cpu(n);
        const Shape label_shape{rows};
        ops::cuda::softmax_cross_entropy_rows(
            view(x.data(), shape), view(labels.data(), label_shape), view(loss.data(), label_shape),
            view(p.data(), shape), compute_stream());
        ops::cpu::softmax_cross_entropy_rows(
            view(x_host.data(), shape), view(labels_host.data(), label_shape),
            view(loss_cpu.data(), label_shape), view(p_cpu.data(), shape));
        check_close(loss.read(), loss_cpu, 1e-12);
        check_close(p.read(), p_cpu, 1e-12);
        ops::cuda::softmax_cross_entropy_backward(
            view(p.data(), shape), view(labels.data(), label_shape), view(head.data(), Shape{}),
            view(d.data(), shape), compute_stream());
        ops::cpu::softmax_cross_entropy_backward(
            view(p_cpu.data(), shape), view(labels_host.data(), label_shape),
            view(head_host.data(), Shape{}), view(d_cpu.data(), shape));
        check_close(d.read(), d_cpu, 1e-12);
      }
    }
    // A NaN anywhere in a row makes the whole row NaN, in both paths; float32 rows too.
    for (const std::int64_t classes : {40, 2000}) {
      CAPTURE(classes);
      const Shape shape{3, classes};
      const auto n = static_cast<std::size_t>(3 * classes);
      auto x_host = sample<float>(3 * classes, 16);
      x_host[static_cast<std::size_t>(classes + 5)] = NAN;  // row 1
      DeviceBuffer<float> x(x_host), y(n);
      std::vector<float> y_cpu(n);
      ops::cuda::softmax_rows(view(x.data(), shape), view(y.data(), shape), false,
                              compute_stream());
      ops::cpu::softmax_rows(view(x_host.data(), shape), view(y_cpu.data(), shape), false);
      check_close(y.read(), y_cpu, 1e-5);
    }
  }

  TEST_CASE("random draws give the CPU's values for the same seed and counter") {
    if (!have_cuda("random")) return;
    const Shape shape{33, 31};  // not a multiple of the values per Philox block
    DeviceBuffer<float> uniform(33 * 31);
    std::vector<float> uniform_cpu(33 * 31);
    const auto used =
        ops::cuda::random_uniform(view(uniform.data(), shape), -2.0, 3.0, 42, 7, compute_stream());
    CHECK(used == ops::cpu::random_uniform(view(uniform_cpu.data(), shape), -2.0, 3.0, 42, 7));
    CHECK(uniform.read() == uniform_cpu);  // bit for bit

    DeviceBuffer<double> normal(33 * 31);
    std::vector<double> normal_cpu(33 * 31);
    ops::cuda::random_normal(view(normal.data(), shape), 1.0, 2.0, 9, 0, compute_stream());
    ops::cpu::random_normal(view(normal_cpu.data(), shape), 1.0, 2.0, 9, 0);
    check_close(normal.read(), normal_cpu, 1e-12);  // log/sin/cos may differ in the last bits
  }
}
