// data::DataLoader: the batches (rows, order, last-batch policies) on cpu and sim(0), seeded
// shuffles that are permutations and reproducible, and prefetch: the ops of batch i + 1 are
// queued by the time batch i is handed out, before the caller asks for batch i + 1.
#include <algorithm>
#include <set>

#include "frontend_test_util.h"
#include "tandem/data/data_loader.h"

namespace tandem::testing {
namespace {

using data::Batch;
using data::DataLoader;
using data::LastBatch;

// n samples of shape 2x3: sample r holds 100 r + k for k = 0..5; its label is r.
struct Samples {
  NDArray data;
  NDArray labels;
};
Samples numbered_samples(std::int64_t n) {
  std::vector<float> values;
  std::vector<std::int32_t> labels;
  for (std::int64_t r = 0; r < n; ++r) {
    for (int k = 0; k < 6; ++k) values.push_back(static_cast<float>(100 * r + k));
    labels.push_back(static_cast<std::int32_t>(r));
  }
  return {nd::from_vector(values, {n, 2, 3}), nd::from_vector(labels)};
}

// The sample numbers of a batch, after checking that its data rows and labels agree.
std::vector<std::int32_t> samples_of(const Batch& batch) {
  const std::vector<std::int32_t> labels = batch.label.to_vector<std::int32_t>();
  const std::vector<float> values = batch.data.to_vector<float>();
  REQUIRE(batch.data.shape() == Shape{static_cast<std::int64_t>(labels.size()), 2, 3});
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t k = 0; k < 6; ++k) {
      CHECK(values[i * 6 + k] == static_cast<float>(100 * labels[i] + static_cast<int>(k)));
    }
  }
  return labels;
}

std::vector<std::vector<std::int32_t>> one_epoch(DataLoader& loader) {
  std::vector<std::vector<std::int32_t>> batches;
  for (const Batch& batch : loader) {
    CHECK(batch.data.device() == loader.options().device);
    CHECK(batch.label.device() == loader.options().device);
    batches.push_back(samples_of(batch));
  }
  return batches;
}

using Batches = std::vector<std::vector<std::int32_t>>;

}  // namespace

TEST_SUITE("frontend.data_loader") {
  TEST_CASE("batches follow the data set in order, with each last-batch policy, on cpu and sim") {
    const Samples samples = numbered_samples(10);
    for (Device device : {cpu(), sim(0)}) {
      CAPTURE(device);
      DataLoader keep(samples.data, samples.labels, {.batch_size = 4, .device = device});
      CHECK(keep.batches_in_next_epoch() == 3);
      CHECK(one_epoch(keep) == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
      CHECK(one_epoch(keep) == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
      CHECK(keep.epochs_started() == 2);

      DataLoader discard(samples.data, samples.labels,
                         {.batch_size = 4, .last_batch = LastBatch::discard, .device = device});
      CHECK(discard.batches_in_next_epoch() == 2);
      CHECK(one_epoch(discard) == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}});

      DataLoader rollover(samples.data, samples.labels,
                          {.batch_size = 4, .last_batch = LastBatch::rollover, .device = device});
      CHECK(one_epoch(rollover) == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}});
      CHECK(rollover.batches_in_next_epoch() == 3);  // 8 and 9 roll over: 12 samples
      CHECK(one_epoch(rollover) == Batches{{8, 9, 0, 1}, {2, 3, 4, 5}, {6, 7, 8, 9}});
      CHECK(rollover.batches_in_next_epoch() == 2);
      CHECK(one_epoch(rollover) == Batches{{0, 1, 2, 3}, {4, 5, 6, 7}});
    }
  }

  TEST_CASE("a batch larger than the data set is one batch, or none when discarding") {
    const Samples samples = numbered_samples(3);
    DataLoader keep(samples.data, samples.labels, {.batch_size = 8});
    CHECK(one_epoch(keep) == Batches{{0, 1, 2}});
    DataLoader discard(samples.data, samples.labels,
                       {.batch_size = 8, .last_batch = LastBatch::discard});
    CHECK(discard.begin() == discard.end());
    CHECK(one_epoch(discard).empty());
  }

  TEST_CASE("shuffled epochs are permutations, differ from each other, and repeat with the seed") {
    const Samples samples = numbered_samples(50);
    const data::DataLoaderOptions options{.batch_size = 8, .shuffle = true, .seed = 42};
    DataLoader first(samples.data, samples.labels, options);
    DataLoader again(samples.data, samples.labels, options);
    auto other_options = options;
    other_options.seed = 43;
    DataLoader other(samples.data, samples.labels, other_options);
    std::vector<std::vector<std::int32_t>> orders;
    for (int epoch = 0; epoch < 3; ++epoch) {
      std::vector<std::int32_t> order;
      for (const auto& batch : one_epoch(first))
        order.insert(order.end(), batch.begin(), batch.end());
      std::vector<std::int32_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      std::vector<std::int32_t> all(50);
      std::iota(all.begin(), all.end(), 0);
      CHECK(sorted == all);  // every sample once
      CHECK(order != all);   // shuffled (1 chance in 50! to fail)
      const Batches repeated = one_epoch(again);
      const Batches different = one_epoch(other);
      std::vector<std::int32_t> order_again;
      for (const auto& batch : repeated)
        order_again.insert(order_again.end(), batch.begin(), batch.end());
      std::vector<std::int32_t> order_other;
      for (const auto& batch : different)
        order_other.insert(order_other.end(), batch.begin(), batch.end());
      CHECK(order_again == order);
      CHECK(order_other != order);
      orders.push_back(order);
    }
    CHECK(orders[0] != orders[1]);
    CHECK(orders[1] != orders[2]);
  }

  TEST_CASE("batches on sim(0) hold the values of the batches on the cpu") {
    nd::random::seed(5);
    const NDArray images = nd::random::uniform({37, 4, 4});
    const NDArray labels = nd::arange(0, 37, 1, nd::int64);
    const data::DataLoaderOptions options{.batch_size = 6, .shuffle = true, .seed = 9};
    DataLoader on_cpu(images, labels, options);
    auto sim_options = options;
    sim_options.device = sim(0);
    DataLoader on_sim(images.copyto(sim(0)), labels.copyto(sim(0)), sim_options);
    auto a = on_cpu.begin();
    auto b = on_sim.begin();
    int count = 0;
    for (; a != on_cpu.end(); ++a, ++b, ++count) {
      REQUIRE(b != on_sim.end());
      CHECK(b->data.device() == sim(0));
      CHECK(b->data.to_vector<float>() == a->data.to_vector<float>());
      CHECK(b->label.to_vector<std::int64_t>() == a->label.to_vector<std::int64_t>());
    }
    CHECK(b == on_sim.end());
    CHECK(count == 7);
  }

  TEST_CASE("a batch is a fresh array: writing it leaves the data set alone") {
    const Samples samples = numbered_samples(4);
    DataLoader loader(samples.data, samples.labels, {.batch_size = 2});
    for (const Batch& batch : loader) {
      NDArray writable = batch.data;
      writable += 1000;
    }
    CHECK(one_epoch(loader) == Batches{{0, 1}, {2, 3}});  // samples_of checks the values
  }

  TEST_CASE("the next batch's ops are queued before the caller asks for it") {
    for (Device device : {cpu(), sim(0)}) {
      CAPTURE(device);
      // A private engine: its statistics count this loader's ops alone.
      auto engine = Engine::create({.kind = EngineKind::threaded});
      {
        nd::EngineScope scope(*engine);
        const Samples samples = numbered_samples(10);
        samples.data.wait_to_read();
        samples.labels.wait_to_read();
        engine->wait_all();
        DataLoader loader(samples.data, samples.labels, {.batch_size = 3, .device = device});
        // A gate op writes the data set until the counting is done: no loader op runs before,
        // so no batch array is freed (a freed array pushes its deletion op from the worker that
        // drops it, at a time the count cannot predict). Only building ops are counted.
        Gate gate(*engine, {samples.data.var(), samples.labels.var()});
        std::vector<Batch> held;
        auto pushed = [&] { return engine->stats().ops_pushed; };
        std::uint64_t before = pushed();
        auto it = loader.begin();
        const std::uint64_t first_two = pushed() - before;
        held.push_back(*it);
        std::vector<std::uint64_t> per_advance;
        while (it != loader.end()) {
          before = pushed();
          ++it;
          per_advance.push_back(pushed() - before);
          if (it != loader.end()) held.push_back(*it);
        }
        // 4 batches: begin queues batches 0 and 1; advancing to 1 and 2 queues 2 and 3;
        // advancing to 3 (the last) and past it queue nothing.
        REQUIRE(per_advance.size() == 4);
        const std::uint64_t one_batch = per_advance[0];
        CHECK(one_batch > 0);
        CHECK(first_two == 2 * one_batch);
        CHECK(per_advance[1] == one_batch);
        CHECK(per_advance[2] == 0);
        CHECK(per_advance[3] == 0);
        gate.open();
        std::vector<std::int32_t> seen;
        for (const Batch& batch : held) {
          const auto labels = samples_of(batch);
          seen.insert(seen.end(), labels.begin(), labels.end());
        }
        CHECK(seen == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
        held.clear();
        engine->wait_all();
      }
    }
  }

  TEST_CASE("an error the data set carries reaches the batches at their sync point") {
    auto bad = nd::full({4, 2}, 6, nd::int32) /
               nd::from_vector(std::vector<std::int32_t>{1, 0, 1, 1, 1, 1, 1, 1}, {4, 2});
    DataLoader loader(bad, nd::arange(0, 4, 1, nd::int32), {.batch_size = 2});
    auto it = loader.begin();
    CHECK_THROWS_WITH_AS(it->data.wait_to_read(), doctest::Contains("division by zero"), Error);
    ++it;  // the gather reads the whole data set: every batch carries the error
    CHECK_THROWS_WITH_AS(it->data.wait_to_read(), doctest::Contains("division by zero"), Error);
    CHECK_THROWS_WITH_AS(it->label.wait_to_read(), doctest::Contains("division by zero"), Error);
    try {
      nd::waitall();  // leaves no unreported error to the tests that follow
    } catch (const Error&) {
    }
  }

  TEST_CASE("bad arguments are errors at construction; the end is not a batch") {
    const Samples samples = numbered_samples(4);
    CHECK_THROWS_WITH_AS(DataLoader(samples.data, nd::arange(3), {.batch_size = 2}),
                         doctest::Contains("data has 4 samples"), Error);
    CHECK_THROWS_WITH_AS(DataLoader(samples.data, samples.labels, {.batch_size = 0}),
                         doctest::Contains("batch_size is 0"), Error);
    CHECK_THROWS_WITH_AS(DataLoader(nd::zeros({0, 3}), nd::zeros({0}), {.batch_size = 1}),
                         doctest::Contains("empty"), Error);
    CHECK_THROWS_WITH_AS(DataLoader(samples.data, samples.labels, {.device = sim(99)}),
                         doctest::Contains("sim(99) is not available"), Error);
    DataLoader loader(samples.data, samples.labels, {.batch_size = 4});
    auto it = loader.begin();
    ++it;
    CHECK(it == loader.end());
    CHECK_THROWS_WITH_AS(*it, doctest::Contains("past the last batch"), Error);
    CHECK_THROWS_AS(++it, Error);
  }
}

}  // namespace tandem::testing
