// Data-parallel training across the ranks of mpirun: the same bits on every rank after every
// step, and N ranks with batch b stepping like one process with batch N * b.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "dist_test_support.h"
#include "tandem/data/data_loader.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/network.h"
#include "tandem/nd/random.h"
#include "tandem/nn/nn.h"

namespace nd = tandem::nd;
namespace nn = tandem::nn;
namespace data = tandem::data;
namespace autograd = tandem::autograd;
using tandem::dist::test::group;

namespace {

// The group, shared without owning it (the test main owns it).
std::shared_ptr<nn::CrossProcessReducer> shared_group() {
  return std::shared_ptr<nn::CrossProcessReducer>(&group(), [](nn::CrossProcessReducer*) {});
}

// A float64 MLP 8 -> 16 (tanh) -> 10 whose initial weights depend on `seed`; the first layer's
// input size is inferred at the first forward (deferred initialization) when `deferred`.
std::shared_ptr<nn::Sequential> mlp(std::uint64_t seed, bool deferred) {
  auto net = std::make_shared<nn::Sequential>();
  nn::DenseOptions first{.dtype = nd::float64};
  if (!deferred) first.in_units = 8;
  net->add(nn::Dense(16, nn::tanh, first))
      .add(nn::Dense(10, nn::ActivationType::none, {.in_units = 16, .dtype = nd::float64}));
  net->initialize(
      nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0, seed));
  return net;
}

struct DataSet {
  nd::NDArray images;
  nd::NDArray labels;
};

// The same 96 samples on every rank.
DataSet data_set() {
  nd::random::seed(11);
  return {nd::random::uniform({96, 8}).astype(nd::float64),
          nd::random::uniform(0, 10, {96}).astype(nd::int32)};
}

void train_step(nn::Sequential& net, nn::Trainer& trainer, const data::Batch& batch) {
  nd::NDArray loss;
  {
    auto recording = autograd::record();
    loss = nd::softmax_cross_entropy(net(batch.data), batch.label).sum();
  }
  loss.backward();
  trainer.step(batch.data.shape()[0]);
}

std::vector<std::vector<double>> values(nn::Sequential& net) {
  std::vector<std::vector<double>> all;
  for (const auto& entry : net.collect_params())
    all.push_back(entry.second->data().to_vector<double>());
  return all;
}

// Every rank's parameters, gathered: true when all ranks hold the same bits.
bool same_bits_on_every_rank(nn::Sequential& net) {
  bool same = true;
  for (const auto& entry : net.collect_params()) {
    const nd::NDArray mine = entry.second->data();
    const std::vector<double> all =
        group().allgather(mine.reshape({1, mine.size()})).to_vector<double>();
    const auto n = static_cast<std::size_t>(mine.size());
    for (std::size_t r = 1; r < static_cast<std::size_t>(group().size()); ++r) {
      same = same && std::equal(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n),
                                all.begin() + static_cast<std::ptrdiff_t>(r * n));
    }
  }
  return same;
}

}  // namespace

TEST_SUITE("dist.training") {
  TEST_CASE("every rank holds the same bits after every step, from different initial weights") {
    for (const auto mode :
         {nn::GradientExchangeMode::at_step, nn::GradientExchangeMode::during_backward}) {
      for (const bool deferred : {false, true}) {
        CAPTURE(deferred);
        CAPTURE(mode == nn::GradientExchangeMode::at_step);
        // Each rank initialises differently; the Trainer broadcasts rank 0's weights.
        auto net = mlp(100 + static_cast<std::uint64_t>(group().rank()), deferred);
        nn::Trainer trainer(net->collect_params(), nn::SGD(0.5),
                            {.exchange = mode, .cross_process = shared_group()});
        const DataSet all = data_set();
        data::DataLoader loader(all.images, all.labels,
                                {.batch_size = 8,
                                 .shuffle = true,
                                 .seed = 3,
                                 .num_shards = group().size(),
                                 .shard = group().rank()});
        int steps = 0;
        for (const data::Batch& batch : loader) {
          train_step(*net, trainer, batch);
          REQUIRE(same_bits_on_every_rank(*net));
          if (++steps == 4) break;
        }
      }
    }
  }

  TEST_CASE("N ranks with batch b step like one process with batch N * b") {
    const int size = group().size();
    const DataSet all = data_set();
    for (const auto mode :
         {nn::GradientExchangeMode::at_step, nn::GradientExchangeMode::during_backward}) {
      auto net = mlp(7, false);
      nn::Trainer trainer(net->collect_params(), nn::SGD(0.5),
                          {.exchange = mode, .cross_process = shared_group()});
      auto reference = mlp(7, false);
      nn::Trainer alone(reference->collect_params(), nn::SGD(0.5));
      data::DataLoader shard(all.images, all.labels,
                             {.batch_size = 4,
                              .shuffle = true,
                              .seed = 5,
                              .num_shards = size,
                              .shard = group().rank()});
      data::DataLoader whole(all.images, all.labels,
                             {.batch_size = 4 * size, .shuffle = true, .seed = 5});
      for (int epoch = 0; epoch < 2; ++epoch) {
        auto mine = shard.begin();
        for (const data::Batch& batch : whole) {
          REQUIRE(!(mine == shard.end()));
          train_step(*net, trainer, *mine);
          train_step(*reference, alone, batch);
          ++mine;
        }
        CHECK(mine == shard.end());
      }
      const auto a = values(*net);
      const auto b = values(*reference);
      REQUIRE(a.size() == b.size());
      double worst = 0;
      for (std::size_t p = 0; p < a.size(); ++p) {
        for (std::size_t i = 0; i < a[p].size(); ++i)
          worst = std::max(worst, std::abs(a[p][i] - b[p][i]));
      }
      CHECK(worst < 1e-9);
    }
  }

  TEST_CASE("the exchange across processes goes in buckets, queued inside backward") {
    auto net = mlp(7, false);
    nn::Trainer trainer(
        net->collect_params(), nn::SGD(0.5),
        {.exchange = nn::GradientExchangeMode::during_backward, .cross_process = shared_group()});
    const std::size_t parameters = net->collect_params().size();
    const DataSet all = data_set();
    data::DataLoader loader(
        all.images, all.labels,
        {.batch_size = 8, .num_shards = group().size(), .shard = group().rank()});
    int steps = 0;
    for (const data::Batch& batch : loader) {
      nd::NDArray loss;
      {
        auto recording = autograd::record();
        loss = nd::softmax_cross_entropy((*net)(batch.data), batch.label).sum();
      }
      const std::uint64_t before = group().collectives_queued();
      loss.backward();
      const std::uint64_t during_backward = group().collectives_queued() - before;
      // Every gradient's sum across the ranks is queued inside backward.
      CHECK(trainer.exchange()->summed_during_backward() == parameters);
      trainer.step(batch.data.shape()[0]);
      CHECK(group().collectives_queued() - before == during_backward);
      if (steps == 0) {
        // The first step records backward's order: one collective per gradient.
        CHECK(during_backward == parameters);
      } else {
        // Then the plan: the last-ready gradient alone, the three others in one bucket.
        CHECK(trainer.exchange()->cross_process_buckets() == 2);
        CHECK(during_backward == 2);
      }
      REQUIRE(same_bits_on_every_rank(*net));
      if (++steps == 3) break;
    }
  }

  TEST_CASE("the distributed sampler deals disjoint shards, reshuffled every epoch") {
    const nd::NDArray ids = nd::arange(0, 10).astype(nd::int64);
    data::DataLoader loader(ids, ids,
                            {.batch_size = 2,
                             .shuffle = true,
                             .seed = 9,
                             .num_shards = group().size(),
                             .shard = group().rank()});
    std::vector<std::vector<std::int64_t>> epochs;
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<std::int64_t> seen;
      for (const data::Batch& batch : loader) {
        for (const std::int64_t id : batch.data.to_vector<std::int64_t>()) seen.push_back(id);
      }
      CHECK(seen.size() == static_cast<std::size_t>(10 / group().size()));
      // Gather every rank's ids: no id twice.
      const std::int64_t count = static_cast<std::int64_t>(seen.size());
      const auto gathered =
          group().allgather(nd::from_vector(seen, nd::Shape{count})).to_vector<std::int64_t>();
      std::vector<std::int64_t> sorted = gathered;
      std::sort(sorted.begin(), sorted.end());
      CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
      epochs.push_back(seen);
    }
    CHECK(epochs[0] != epochs[1]);
  }
}
