// What the data-parallel training tests share (nn_training_test.cc, data_parallel_test.cc): a
// small float64 MLP, one step's forward and backward with the global batch split over the
// devices, and the trained parameters read back and compared.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "frontend_test_util.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {

// A float64 MLP 8x8 -> 16 (tanh) -> 10, initialized on `devices` by `initializer`: by default
// with fixed weights (a seeded Xavier), the same for every run.
inline std::shared_ptr<nn::Sequential> small_mlp(
    const std::vector<Device>& devices,
    const nn::Initializer& initializer = nn::Xavier(nn::Xavier::Distribution::uniform,
                                                    nn::Xavier::Factor::avg, 3.0, 9)) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Dense(16, nn::tanh, {.dtype = nd::float64}))
      .add(nn::Dense(10, nn::ActivationType::none, {.dtype = nd::float64}));
  net->initialize(initializer, devices);
  return net;
}

// One loss per device, recorded for backward: the summed softmax cross-entropy of `net` on
// device d's share of the batch (xs[d], ys[d], as nd::split_and_load gives them).
inline std::vector<NDArray> recorded_losses(nn::Block& net, const std::vector<NDArray>& xs,
                                            const std::vector<NDArray>& ys) {
  std::vector<NDArray> losses;
  auto recording = autograd::record();
  for (std::size_t d = 0; d < xs.size(); ++d) {
    losses.push_back(nd::softmax_cross_entropy(net(xs[d]), ys[d]).sum());
  }
  return losses;
}

// One step's forward and backward: the global batch split over `devices`, one loss per device,
// the backwards in device order. The Trainer's step is the caller's.
inline void forward_backward(nn::Block& net, const NDArray& images, const NDArray& labels,
                             const std::vector<Device>& devices) {
  const std::vector<NDArray> xs = nd::split_and_load(images, devices);
  const std::vector<NDArray> ys = nd::split_and_load(labels, devices);
  for (const NDArray& loss : recorded_losses(net, xs, ys)) loss.backward();
}

using ParameterValues = std::vector<std::vector<double>>;

// Every parameter's values, in collect_params order; checks that all the copies of a parameter
// (one per device) hold the same bits.
inline ParameterValues parameter_values(nn::Block& net) {
  ParameterValues values;
  for (const auto& entry : net.collect_params()) {
    const std::vector<NDArray> copies = entry.second->list_data();
    for (const NDArray& copy : copies) {
      CHECK(copy.to_vector<double>() == copies.front().to_vector<double>());
    }
    values.push_back(copies.front().to_vector<double>());
  }
  return values;
}

inline double largest_difference(const ParameterValues& a, const ParameterValues& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t p = 0; p < a.size(); ++p) {
    REQUIRE(a[p].size() == b[p].size());
    for (std::size_t i = 0; i < a[p].size(); ++i) {
      worst = std::max(worst, std::abs(a[p][i] - b[p][i]));
    }
  }
  return worst;
}

}  // namespace tandem::testing
