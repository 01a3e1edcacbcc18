// The kernel tables: every built-in backend has every family, an unregistered kind is a clear
// error, and a backend registered at run time gets the table it registered.
#include <doctest/doctest.h>

#include <tandem/errors.h>
#include <tandem/ops/kernels.h>

#include <vector>

namespace ops = tandem::ops;
using tandem::DeviceKind;

namespace {

std::vector<DeviceKind> built_in_kinds() {
  std::vector<DeviceKind> kinds{DeviceKind::cpu, DeviceKind::sim};
#ifdef TANDEM_HAVE_CUDA
  kinds.push_back(DeviceKind::cuda);
#endif
  return kinds;
}

// A kind no backend of the build uses; the tests register tables for kinds above it.
constexpr auto kUnregistered = static_cast<DeviceKind>(200);

}  // namespace

TEST_SUITE("ops.kernel_table") {
  TEST_CASE("every built-in backend has a kernel for every family") {
    for (DeviceKind kind : built_in_kinds()) {
      CAPTURE(tandem::kind_name(kind));
      REQUIRE(ops::has_kernels(kind));
      const char* missing = ops::missing_kernel(ops::kernels_for(kind));
      CHECK_MESSAGE(missing == nullptr, "missing family: ", (missing ? missing : ""));
    }
  }

  TEST_CASE("cpu runs the CPU kernels inline and sim runs them on its stream's host side") {
    CHECK((&ops::kernels_for(DeviceKind::cpu) == &ops::host_kernels()));
    CHECK((&ops::kernels_for(DeviceKind::sim) == &ops::host_stream_kernels()));
  }

  TEST_CASE("the host table computes in the calling thread") {
    const std::vector<float> a{1, -2, 3, -4};
    const std::vector<float> b{10, 20, 30, 40};
    std::vector<float> out(4);
    const ops::Kernels& host = ops::host_kernels();
    host.binary_dense(nullptr, ops::BinaryOp::add, ops::DType::float32, a.data(), b.data(),
                      out.data(), 4);
    CHECK(out == std::vector<float>{11, 18, 33, 36});
    host.unary_dense(nullptr, ops::UnaryOp::relu, ops::DType::float32, a.data(), out.data(), 4);
    CHECK(out == std::vector<float>{1, 0, 3, 0});
    host.fill(nullptr, ops::contiguous_view(out.data(), ops::DType::float32, ops::Shape{4}), 2.5);
    CHECK(out == std::vector<float>{2.5, 2.5, 2.5, 2.5});
  }

  TEST_CASE("a host-stream kernel without a stream is an error naming the op") {
    std::vector<double> out(3);
    CHECK_THROWS_WITH_AS(
        ops::host_stream_kernels().fill(
            nullptr, ops::contiguous_view(out.data(), ops::DType::float64, ops::Shape{3}), 1.0),
        doctest::Contains("fill: a host-stream kernel needs the op's stream"), tandem::Error);
  }

  TEST_CASE("an unregistered device kind is an error that says how to register one") {
    CHECK_FALSE(ops::has_kernels(kUnregistered));
    CHECK_THROWS_WITH_AS(ops::kernels_for(kUnregistered),
                         doctest::Contains("no kernels are registered for device kind"),
                         tandem::Error);
    CHECK_THROWS_WITH_AS(ops::kernels_for(kUnregistered), doctest::Contains("(200)"),
                         tandem::Error);
    CHECK_THROWS_WITH_AS(ops::kernels_for(kUnregistered), doctest::Contains("register_kernels"),
                         tandem::Error);
  }

  TEST_CASE("a table missing a family is refused, naming the family") {
    ops::Kernels partial = ops::host_stream_kernels();
    partial.gemm = nullptr;
    CHECK(std::string(ops::missing_kernel(partial)) == "gemm");
    constexpr auto kind = static_cast<DeviceKind>(201);
    CHECK_THROWS_WITH_AS(ops::register_kernels(kind, partial), doctest::Contains("'gemm'"),
                         tandem::Error);
    CHECK_FALSE(ops::has_kernels(kind));
  }

  TEST_CASE("a backend registered at run time reuses the host-stream kernels") {
    constexpr auto kind = static_cast<DeviceKind>(202);
    ops::register_kernels(kind, ops::host_stream_kernels());
    REQUIRE(ops::has_kernels(kind));
    const ops::Kernels& table = ops::kernels_for(kind);
    CHECK((table.unary == ops::host_stream_kernels().unary));
    CHECK((table.gemm == ops::host_stream_kernels().gemm));
    CHECK(ops::missing_kernel(table) == nullptr);

    // Replacing the table keeps the old one valid for ops that read it already.
    ops::register_kernels(kind, ops::host_kernels());
    CHECK((ops::kernels_for(kind).unary == ops::host_kernels().unary));
    CHECK((table.unary == ops::host_stream_kernels().unary));
  }
}
