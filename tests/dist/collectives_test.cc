// Collectives across the ranks of mpirun: values, dtypes, queuing without waiting, order,
// and an input poisoned on one rank.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist_test_support.h"
#include "tandem/device_info.h"
#include "tandem/engine.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"

namespace nd = tandem::nd;
using tandem::dist::ReduceOp;
using tandem::dist::test::group;

namespace {

// 1, 2, ..., n, offset by the rank: rank r's element i is r * 100 + i.
nd::NDArray rank_values(std::int64_t n, nd::DType dtype = nd::float32) {
  return (nd::arange(0, static_cast<double>(n)) + group().rank() * 100.0).astype(dtype);
}

}  // namespace

TEST_SUITE("dist.collectives") {
  TEST_CASE("allreduce sums, averages and takes the max over the ranks, in place") {
    const int size = group().size();
    double rank_sum = 0;
    for (int r = 0; r < size; ++r) rank_sum += r * 100.0;
    for (const nd::DType dtype : {nd::float32, nd::float64, nd::int32, nd::int64}) {
      CAPTURE(nd::dtype_name(dtype));
      nd::NDArray sum = rank_values(1000, dtype);
      nd::NDArray mean = rank_values(1000, dtype);
      nd::NDArray max = rank_values(1000, dtype);
      group().allreduce(sum);
      group().allreduce(mean, ReduceOp::mean);
      group().allreduce(max, ReduceOp::max);
      const std::vector<double> s = sum.astype(nd::float64).to_vector<double>();
      const std::vector<double> m = mean.astype(nd::float64).to_vector<double>();
      const std::vector<double> x = max.astype(nd::float64).to_vector<double>();
      for (int i = 0; i < 1000; ++i) {
        REQUIRE(s[i] == size * i + rank_sum);
        if (dtype == nd::int32 || dtype == nd::int64) {
          REQUIRE(m[i] == static_cast<double>(static_cast<long>((size * i + rank_sum) / size)));
        } else {
          REQUIRE(m[i] == doctest::Approx((size * i + rank_sum) / size));
        }
        REQUIRE(x[i] == (size - 1) * 100.0 + i);
      }
    }
  }

  TEST_CASE("broadcast gives every rank the root's array") {
    for (int root = 0; root < group().size(); ++root) {
      nd::NDArray a = rank_values(257);
      group().broadcast(a, root);
      const std::vector<float> v = a.to_vector<float>();
      for (int i = 0; i < 257; ++i) REQUIRE(v[i] == static_cast<float>(root * 100 + i));
    }
  }

  TEST_CASE("allgather stacks the ranks' arrays along axis 0, rank 0 first") {
    nd::NDArray mine = rank_values(6).reshape({2, 3});
    nd::NDArray all = group().allgather(mine);
    CHECK(all.shape() == nd::Shape{2 * group().size(), 3});
    const std::vector<float> v = all.to_vector<float>();
    for (int r = 0; r < group().size(); ++r) {
      for (int i = 0; i < 6; ++i) REQUIRE(v[r * 6 + i] == static_cast<float>(r * 100 + i));
    }
    nd::NDArray scalar = group().allgather(nd::full(nd::Shape{}, group().rank() + 0.5));
    CHECK(scalar.shape() == nd::Shape{group().size()});
  }

  TEST_CASE("a collective is queued: the caller and the cpu worker go on while it waits") {
    // Rank 0 joins 2 s late. The others' push returns at once, and their compute (one worker
    // per rank) finishes while the allreduce still waits for rank 0: the collective holds no
    // worker meanwhile.
    group().barrier();
    if (group().rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    nd::NDArray x = nd::ones({1 << 16});
    group().allreduce(x);
    nd::NDArray y = (nd::ones({1000}) * 2).sum();
    CHECK(y.scalar<float>() == 2000.0f);
    if (group().rank() != 0) {
      CHECK_THROWS_AS(x.wait_to_read(std::chrono::milliseconds(0)), tandem::TimeoutError);
    }
    CHECK(x.to_vector<float>()[0] == static_cast<float>(group().size()));
  }

  TEST_CASE("collectives start in call order even when the engine finds them ready out of order") {
    // On rank 0 the first collective's input comes from a slow op, so its op is ready after
    // the second's; the comm thread still starts them in call order on every rank.
    auto& engine = tandem::Engine::get();
    nd::NDArray first = rank_values(100);
    nd::NDArray second = rank_values(50) * 2;
    if (group().rank() == 0) {
      engine.push([] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); },
                  tandem::cpu(), {}, {first.var()}, {.name = "slow"});
    }
    group().allreduce(first);
    group().allreduce(second);
    double rank_sum = 0;
    for (int r = 0; r < group().size(); ++r) rank_sum += r * 100.0;
    CHECK(first.to_vector<float>()[1] == static_cast<float>(group().size() + rank_sum));
    CHECK(second.to_vector<float>()[1] == static_cast<float>(2 * (group().size() + rank_sum)));
    CHECK(group().collectives_queued() > 0);
  }

  TEST_CASE("an input poisoned on one rank fails the collective on every rank, naming it") {
    auto& engine = tandem::Engine::get();
    nd::NDArray a = rank_values(10);
    const int bad = group().size() - 1;
    if (group().rank() == bad) {
      engine.push([] { throw std::runtime_error("boom on the last rank"); }, tandem::cpu(), {},
                  {a.var()}, {.name = "fails"});
    }
    group().allreduce(a);
    nd::NDArray after = a + 1;  // downstream of the failed collective: skipped, poisoned
    try {
      (void)after.to_vector<float>();
      FAIL("the collective's output should be poisoned");
    } catch (const tandem::Error& error) {
      const std::string message = error.what();
      CHECK(message.find("allreduce #") != std::string::npos);
      CHECK(message.find("rank(s) " + std::to_string(bad)) != std::string::npos);
    }
    try {
      tandem::wait_all();
    } catch (const std::exception&) {
      // the errors above, once more
    }
    // The group stays usable.
    nd::NDArray b = nd::ones({4});
    group().allreduce(b);
    CHECK(b.to_vector<float>()[3] == static_cast<float>(group().size()));
  }

  TEST_CASE("bad arrays are refused at the call, naming what was wrong") {
    nd::NDArray strided = nd::ones({4, 4}).T();
    CHECK_THROWS_WITH_AS(group().allreduce(strided), doctest::Contains("not contiguous"),
                         tandem::Error);
    nd::NDArray a = nd::ones({2});
    CHECK_THROWS_WITH_AS(group().broadcast(a, group().size()), doctest::Contains("is not a rank"),
                         tandem::Error);
    CHECK_THROWS_WITH_AS(tandem::dist::ProcessGroup{}, doctest::Contains("already alive"),
                         tandem::Error);
    // A sim array: neither MPI (cpu arrays) nor NCCL (cuda arrays) takes it.
    nd::NDArray on_sim = nd::ones({2}, nd::float32, tandem::sim(0));
    CHECK_THROWS_WITH_AS(group().allreduce(on_sim), doctest::Contains("sim(0)"), tandem::Error);
  }

  TEST_CASE("gpu arrays are summed and broadcast across the ranks through NCCL") {
    const int gpus = tandem::device_count(tandem::DeviceKind::cuda);
    if (gpus < group().local_size()) {
      MESSAGE("skipped: NCCL across processes needs a CUDA device per rank of this machine ("
              << gpus << " device(s) for " << group().local_size() << " rank(s))");
      return;
    }
    const tandem::Device gpu = tandem::cuda(group().local_rank());
    nd::NDArray x = nd::full({1000}, group().rank() + 1.0, nd::float32, gpu);
    group().allreduce(x);
    nd::NDArray y = nd::full({10}, group().rank() * 1.0, nd::float32, gpu);
    group().broadcast(y, group().size() - 1);
    const float expected = static_cast<float>(group().size() * (group().size() + 1) / 2);
    for (const float value : x.copyto(tandem::cpu()).to_vector<float>()) REQUIRE(value == expected);
    for (const float value : y.copyto(tandem::cpu()).to_vector<float>())
      REQUIRE(value == static_cast<float>(group().size() - 1));
    nd::NDArray gathered = nd::ones({2}, nd::float32, gpu);
    CHECK_THROWS_WITH_AS((void)group().allgather(gathered), doctest::Contains("NCCL"),
                         tandem::Error);
  }
}
