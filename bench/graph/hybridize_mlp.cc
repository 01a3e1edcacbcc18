#include "hybridize_mlp.h"

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace tandem::bench {

namespace {

namespace nd = tandem::nd;
namespace nn = tandem::nn;

// The seed's network: Dense(256) relu, Dense(128) relu, Dense(2), on a (1, 512) input.
nn::Sequential make_mlp() {
  nn::Sequential net;
  net.add(nn::Dense(256, nn::relu)).add(nn::Dense(128, nn::relu)).add(nn::Dense(2));
  net.initialize(nn::Xavier());
  return net;
}

// Seconds for `calls` forward calls, waiting once at the end (as the seed does).
double time_calls(nn::Sequential& net, const nd::NDArray& x, int calls) {
  const auto start = std::chrono::steady_clock::now();
  nd::NDArray y;
  for (int i = 0; i < calls; ++i) y = net(x);
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void run_hybridize_mlp(bool quick, Records& records) {
  const int calls = quick ? 1000 : 5000;
  const int rounds = quick ? 5 : 9;
  nn::Sequential net = make_mlp();
  const nd::NDArray x = nd::random::normal({1, 512});
  const std::vector<float> eager_output = net(x).to_vector<float>();  // creates the parameters
  net.hybridize();
  if (net(x).to_vector<float>() != eager_output) {
    throw std::runtime_error("hybridize_mlp: the hybridized output differs from the eager one");
  }
  // Interleaved rounds, the best of each: the machine is shared and noisy.
  double eager = 1e30, hybridized = 1e30;
  for (int round = 0; round < rounds; ++round) {
    net.hybridize(false);
    eager = std::min(eager, time_calls(net, x, calls));
    net.hybridize();
    net(x);  // records
    hybridized = std::min(hybridized, time_calls(net, x, calls));
  }
  std::printf("hybridize_mlp: %d calls, eager %.4f s, hybridized %.4f s (%.2fx)\n", calls, eager,
              hybridized, eager / hybridized);
  for (const auto& [system, seconds] : {std::pair{"eager", eager}, {"hybridized", hybridized}}) {
    records.push_back({{"workload", "hybridize_mlp"},
                       {"system", system},
                       {"seconds", seconds},
                       {"calls", calls},
                       {"model", "mlp 512-256-128-2, batch 1"},
                       {"device", "cpu(0)"}});
  }
  records.push_back(target_record("hybridize_mlp: eager / hybridized seconds", ">= 3",
                                  eager / hybridized, 3.0, false));
}

}  // namespace tandem::bench
