// The sim backend on its own: streams, events, errors, memory and the registry.
#include <tandem/accel/device_graph.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim_test_support.h"

using namespace tandem;
using namespace tandem_test;

TEST_CASE("work on one sim stream runs one item at a time in enqueue order") {
  use_sim_test_config();
  Stream& stream = accelerator(sim(0)).stream(Queue::compute, 0);
  std::vector<int> order;  // touched only by the stream thread until synchronize returns
  for (int i = 0; i < 50; ++i) stream.enqueue_host([&order, i] { order.push_back(i); }, {});
  stream.synchronize();
  REQUIRE(order.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("a sim item is held for its modelled duration and timing events record it") {
  use_sim_test_config();
  Stream& stream = accelerator(sim(0)).stream(Queue::compute, 1);
  EventRef before = stream.record(true);
  stream.enqueue_host([] {}, cost_ms(5));
  EventRef after = stream.record(true);
  after->synchronize();
  REQUIRE(before->query());
  CHECK(ms_between(before->time_ns(), after->time_ns()) >= 5.0);
  CHECK(stream.record(false)->time_ns() == -1);  // no timing asked for
}

namespace {

// Two streams each run one `ms` item from the same moment (the first stream, when
// `first_work` is given, what that enqueues instead); returns the ms from the first start to
// the last end, read from timing events.
double both_done_ms(Stream& one, Stream& other, double ms, bool other_copies = false,
                    const std::function<void(Stream&)>& first_work = {}) {
  // Both items wait for one event, so neither starts before the other is queued.
  Stream& gate = accelerator(sim(0)).stream(Queue::copy_d2h);
  std::atomic<bool> open{false};
  gate.enqueue_host(
      [&open] {
        while (!open.load()) std::this_thread::yield();
      },
      {});
  EventRef gate_open = gate.record();
  EventRef starts[2], ends[2];
  Stream* streams[2] = {&one, &other};
  for (int i = 0; i < 2; ++i) {
    streams[i]->wait(gate_open);
    starts[i] = streams[i]->record(true);
    if (i == 1 && other_copies) {
      // A transfer of ms x 1 MB at the bus's 1 GB/s, as the copy stream models it, without
      // moving the bytes: a real memmove of that size can outlast its model on a loaded host
      // or under ThreadSanitizer (10-20 ms for 10 MB), which would time the host, not the
      // model. "copies are held for the bus model and move the bytes" checks real copies.
      streams[i]->enqueue_host([] {}, {.flops = 0, .bytes = ms * kFlopsPerMs});
    } else if (i == 0 && first_work) {
      first_work(*streams[i]);
    } else {
      streams[i]->enqueue_host([] {}, cost_ms(ms));
    }
    ends[i] = streams[i]->record(true);
  }
  open = true;
  ends[0]->synchronize();
  ends[1]->synchronize();
  const std::int64_t first = std::min(starts[0]->time_ns(), starts[1]->time_ns());
  const std::int64_t last = std::max(ends[0]->time_ns(), ends[1]->time_ns());
  return ms_between(first, last);
}

// On a loaded machine a stream thread may start late, which only lengthens a run: a run that is
// not under `bound` is tried again, up to three times.
double fastest_of_three(const std::function<double()>& run, double bound) {
  double fastest = run();
  for (int attempt = 2; attempt <= 3 && fastest >= bound; ++attempt) {
    fastest = std::min(fastest, run());
  }
  return fastest;
}

}  // namespace

TEST_CASE("two kernels on two compute streams of one device share its rate: twice one kernel") {
  use_sim_test_config();
  Accelerator& device = accelerator(sim(0));
  constexpr double kMs = 10;
  // Work-conserving sharing: however the two starts fall, the last end is at least 2 x 10 ms.
  const double shared = fastest_of_three(
      [&] {
        return both_done_ms(device.stream(Queue::compute, 0), device.stream(Queue::compute, 1),
                            kMs);
      },
      2.5 * kMs);
  MESSAGE("two kernels on one device: " << shared << " ms");
  CHECK(shared >= 2 * kMs * 0.99);
  CHECK(shared < 2.5 * kMs);
}

TEST_CASE("a device graph launch shares the device's rate like the kernels it holds") {
  use_sim_test_config();
  Accelerator& device = accelerator(sim(0));
  constexpr double kMs = 10;
  // A graph of two 5 ms items on compute stream 0, launched beside a 10 ms kernel on stream 1:
  // 20 ms of work on one device, so the last end is at least 20 ms, as for two kernels.
  Stream& stream = device.stream(Queue::compute, 0);
  stream.begin_graph_capture();
  stream.enqueue_host([] {}, cost_ms(kMs / 2));
  stream.enqueue_host([] {}, cost_ms(kMs / 2));
  const std::unique_ptr<DeviceGraph> graph = stream.end_graph_capture();
  const double shared = fastest_of_three(
      [&] {
        return both_done_ms(stream, device.stream(Queue::compute, 1), kMs, false,
                            [&](Stream& on) { graph->launch(on); });
      },
      2.5 * kMs);
  MESSAGE("a device graph beside a kernel on one device: " << shared << " ms");
  CHECK(shared >= 2 * kMs * 0.99);
  CHECK(shared < 2.5 * kMs);
}

TEST_CASE("two kernels on two devices run side by side: the time of one") {
  use_sim_test_config();
  constexpr double kMs = 10;
  const double apart = fastest_of_three(
      [&] {
        return both_done_ms(accelerator(sim(0)).stream(Queue::compute, 0),
                            accelerator(sim(1)).stream(Queue::compute, 0), kMs);
      },
      1.5 * kMs);
  MESSAGE("two kernels on two devices: " << apart << " ms");
  CHECK(apart >= kMs * 0.99);
  CHECK(apart < 1.5 * kMs);
}

TEST_CASE("a copy engine does not share the compute rate: a copy overlaps a kernel") {
  use_sim_test_config();
  Accelerator& device = accelerator(sim(0));
  constexpr double kMs = 10;
  const double overlapped = fastest_of_three(
      [&] {
        return both_done_ms(device.stream(Queue::compute, 0), device.stream(Queue::copy_h2d), kMs,
                            /*other_copies=*/true);
      },
      1.5 * kMs);
  MESSAGE("a kernel beside a copy: " << overlapped << " ms");
  CHECK(overlapped >= kMs * 0.99);
  CHECK(overlapped < 1.5 * kMs);
}

TEST_CASE("copies are held for the bus model and move the bytes") {
  use_sim_test_config();
  Accelerator& device = accelerator(sim(0));
  Stream& h2d = device.stream(Queue::copy_h2d);
  std::vector<char> src(2'000'000, 'x'), dst(2'000'000, 0);
  EventRef before = h2d.record(true);
  h2d.copy(dst.data(), src.data(), src.size());
  EventRef after = h2d.record(true);
  h2d.synchronize();
  CHECK(ms_between(before->time_ns(), after->time_ns()) >= 2.0);  // 2 MB at 1 GB/s
  CHECK(dst == src);
  CHECK(std::string(h2d.name()) == "sim(0) h2d");
  CHECK(std::string(device.stream(Queue::compute, 1).name()) == "sim(0) compute 1");
}

TEST_CASE("a stream that waits on an event runs after it, across streams and devices") {
  use_sim_test_config();
  Stream& producer = accelerator(sim(0)).stream(Queue::compute, 0);
  Stream& consumer = accelerator(sim(1)).stream(Queue::compute, 0);
  int value = 0;
  int seen = -1;
  producer.enqueue_host([&value] { value = 42; }, cost_ms(10));
  consumer.wait(producer.record());
  consumer.enqueue_host([&value, &seen] { seen = value; }, {});
  consumer.synchronize();
  CHECK(seen == 42);
}

TEST_CASE("a failing item fails the next event and synchronize throws its error") {
  use_sim_test_config();
  Stream& stream = accelerator(sim(0)).stream(Queue::compute, 0);
  stream.enqueue_host([] { throw std::runtime_error("kernel exploded"); }, {});
  bool later_ran = false;
  stream.enqueue_host([&later_ran] { later_ran = true; }, {});  // same segment: skipped
  EventRef failed = stream.record();
  CHECK_THROWS_WITH(failed->synchronize(), "kernel exploded");
  CHECK(failed->error() != nullptr);
  CHECK_FALSE(later_ran);
  CHECK_THROWS_WITH(stream.synchronize(), "kernel exploded");
  // The next segment is clean again.
  stream.enqueue_host([] {}, {});
  EventRef clean = stream.record();
  clean->synchronize();
  CHECK(clean->error() == nullptr);
  CHECK_NOTHROW(stream.synchronize());
}

TEST_CASE("work downstream of a failed event is skipped and its event carries the same error") {
  use_sim_test_config();
  Stream& upstream = accelerator(sim(0)).stream(Queue::compute, 0);
  Stream& downstream = accelerator(sim(1)).stream(Queue::compute, 1);
  upstream.enqueue_host([] { throw std::runtime_error("upstream failed"); }, cost_ms(2));
  EventRef failed = upstream.record();
  downstream.wait(failed);
  bool ran = false;
  downstream.enqueue_host([&ran] { ran = true; }, {});
  EventRef skipped = downstream.record();
  CHECK_THROWS_WITH(skipped->synchronize(), "upstream failed");
  CHECK(skipped->error() == failed->error());  // the same exception object
  CHECK_FALSE(ran);
  CHECK_THROWS(upstream.synchronize());
  CHECK_THROWS(downstream.synchronize());
}

TEST_CASE("sim device memory runs out at its modelled capacity with a clear error") {
  use_sim_test_config();
  Accelerator& device = accelerator(sim(1));
  CHECK(device.memory_capacity() == 64u << 20);
  MemoryBlock block = device.device_pool().allocate(40u << 20);
  CHECK(block.data != nullptr);
  std::memset(block.data, 1, 40u << 20);  // real memory
  CHECK_THROWS_AS(device.device_pool().allocate(40u << 20), OutOfMemoryError);
  device.device_pool().free(block);
  MemoryBlock again = device.device_pool().allocate(40u << 20);
  CHECK(again.data != nullptr);
  device.device_pool().free(again);
  MemoryBlock pinned = device.pinned_pool().allocate(1u << 20);
  CHECK(pinned.data != nullptr);
  device.pinned_pool().free(pinned);
}

TEST_CASE("the registry counts sim devices and names a missing device and the count") {
  use_sim_test_config();
  CHECK(accelerator_count(DeviceKind::cpu) == 1);
  CHECK(accelerator_count(DeviceKind::sim) == 2);
#ifndef TANDEM_HAVE_CUDA
  CHECK(accelerator_count(DeviceKind::cuda) == 0);
  CHECK_THROWS_WITH_AS(accelerator(cuda(0)), doctest::Contains("gpu(0)"), Error);
#endif
  CHECK_THROWS_WITH_AS(accelerator(sim(2)), doctest::Contains("2 sim devices"), Error);
  CHECK_THROWS_AS(accelerator(cpu()), Error);
  CHECK(&accelerator(sim(1)) == &accelerator(sim(1)));
  CHECK(accelerator(sim(0)).compute_streams() == 2);
  CHECK_THROWS_AS(configure_accelerators(sim_test_config()), Error);  // too late now
  CHECK(accelerator(sim(0)).description().find("sim(0)") == 0);
}

TEST_CASE("a host item skipped after an upstream failure is destroyed, releasing its captures") {
  // What frontend/src/core/transfer.cc relies on: the pinned stage of a skipped copy goes back to
  // the pool when the last item holding it is destroyed.
  use_sim_test_config();
  Accelerator& device = accelerator(sim(0));
  Stream& first = device.stream(Queue::compute, 0);
  Stream& second = device.stream(Queue::copy_d2h);
  first.enqueue_host([] { throw std::runtime_error("upstream failure"); }, {});
  second.wait(first.record());
  auto held = std::make_shared<int>(0);
  std::atomic<bool> ran{false};
  second.enqueue_host([held, &ran] { ran = true; }, {});
  EventRef done = second.record();
  CHECK_THROWS_WITH(done->synchronize(), doctest::Contains("upstream failure"));
  CHECK_FALSE(ran);
  CHECK(held.use_count() == 1);
  // The failure is reported once per stream that saw it; leave both streams clean.
  CHECK_THROWS(first.synchronize());
  try {
    second.synchronize();
  } catch (const std::exception&) {
  }
  CHECK_NOTHROW(second.synchronize());
}

TEST_CASE("a wait passes the producer's device time on: the waiting stream is stamped with it") {
  use_sim_test_config();
  Stream& producer = accelerator(sim(0)).stream(Queue::compute, 0);
  Stream& consumer = accelerator(sim(1)).stream(Queue::copy_h2d);
  producer.enqueue_host([] {}, cost_ms(50));
  EventRef produced = producer.record(true);
  // The consumer is idle and its items are queued long before the producer's work ends: the
  // device reaches them when the event is reached, not when the consumer's thread wakes up.
  consumer.wait(produced);
  EventRef resumed = consumer.record(true);
  consumer.enqueue_host([] {}, {.flops = 0, .bytes = 2 * kFlopsPerMs});  // 2 ms at 1 GB/s
  EventRef finished = consumer.record(true);
  finished->synchronize();
  CHECK(resumed->time_ns() == produced->time_ns());
  // Latency (10 us) + 2 ms, to the nanosecond: the body is empty.
  CHECK(finished->time_ns() - resumed->time_ns() == 2'010'000);
}

TEST_CASE("device time does not stretch when the host starves the stream threads") {
  // More busy threads than cores: a sim stream thread is descheduled for whole time slices. The
  // device it models is not, so the timing events between items must still show each item's
  // modelled duration (30 us here), not when the thread got a core back.
  use_sim_test_config();
  Stream& stream = accelerator(sim(1)).stream(Queue::copy_d2h);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  const unsigned hog_count = std::max(4u, 3 * std::thread::hardware_concurrency());
  for (unsigned i = 0; i < hog_count; ++i) {
    hogs.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  constexpr int kItems = 200;
  constexpr std::int64_t kItemNs = 30'000;  // 10 us latency + 20 KB at 1 GB/s
  std::vector<EventRef> marks{stream.record(true)};
  for (int i = 0; i < kItems; ++i) {
    stream.enqueue_host([] {}, {.flops = 0, .bytes = 20'000});
    marks.push_back(stream.record(true));
  }
  marks.back()->synchronize();
  stop = true;
  for (std::thread& hog : hogs) hog.join();
  int exact = 0;
  std::int64_t shortest = kItemNs, longest = 0;
  for (std::size_t i = 1; i < marks.size(); ++i) {
    const std::int64_t took = marks[i]->time_ns() - marks[i - 1]->time_ns();
    shortest = std::min(shortest, took);
    longest = std::max(longest, took);
    // An empty body takes well under a microsecond, unless preempted in those few instructions.
    if (took - kItemNs < 2'000) ++exact;
  }
  MESSAGE(hog_count << " busy threads: " << exact << " of " << kItems << " items took 30 us "
                    << "(longest " << longest / 1000 << " us)");
  CHECK(shortest >= kItemNs);
  CHECK(exact >= kItems * 95 / 100);
}
