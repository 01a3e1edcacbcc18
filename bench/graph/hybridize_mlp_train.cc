#include "hybridize_mlp_train.h"

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "mlp_model.h"

namespace tandem::bench {

namespace {

namespace nd = tandem::nd;
namespace nn = tandem::nn;

// One training step: the squared error against `target`, its backward, an SGD step.
nd::NDArray train_step(nn::Sequential& net, nn::Trainer& trainer, const nd::NDArray& x,
                       const nd::NDArray& target) {
  nd::NDArray loss;
  {
    auto recording = autograd::record();
    loss = nd::sum(nd::square(net(x) - target));
  }
  loss.backward();
  trainer.step(1);
  return loss;
}

// Seconds for `steps` steps, waiting once at the end.
double time_steps(nn::Sequential& net, nn::Trainer& trainer, const nd::NDArray& x,
                  const nd::NDArray& target, int steps) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) train_step(net, trainer, x, target);
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Both paths from the same parameters give the same losses and parameters (bit for bit).
void check_same_training(const nd::NDArray& x, const nd::NDArray& target) {
  nn::Sequential eager = make_graph_suite_mlp();
  nn::Sequential hybrid = make_graph_suite_mlp();
  const nn::ParameterDict source = eager.collect_params();
  for (const auto& [name, parameter] : hybrid.collect_params())
    parameter->set_data(source[name].data());
  hybrid.hybridize();
  nn::Trainer eager_trainer(eager.collect_params(), nn::SGD(0.001));
  nn::Trainer hybrid_trainer(hybrid.collect_params(), nn::SGD(0.001));
  for (int i = 0; i < 3; ++i) {
    const float a = train_step(eager, eager_trainer, x, target).scalar<float>();
    const float b = train_step(hybrid, hybrid_trainer, x, target).scalar<float>();
    if (a != b) throw std::runtime_error("hybridize_mlp_train: the hybridized loss differs");
  }
  if (!hybrid.hybrid_cache()->last_call_replayed())
    throw std::runtime_error("hybridize_mlp_train: the hybridized steps did not replay");
  const nn::ParameterDict trained = hybrid.collect_params();
  for (const auto& [name, parameter] : eager.collect_params()) {
    if (parameter->data().to_vector<float>() != trained[name].data().to_vector<float>())
      throw std::runtime_error("hybridize_mlp_train: the hybridized parameters differ");
  }
}

}  // namespace

void run_hybridize_mlp_train(bool quick, Records& records) {
  const int steps = quick ? 300 : 1500;
  const int rounds = quick ? 5 : 9;
  const nd::NDArray x = nd::random::normal({1, 512});
  const nd::NDArray target = nd::random::normal({1, 2});
  check_same_training(x, target);
  nn::Sequential net = make_graph_suite_mlp();
  nn::Trainer trainer(net.collect_params(), nn::SGD(0.001));
  // Interleaved rounds, the best of each: the machine is shared and noisy.
  double eager = 1e30, hybridized = 1e30;
  for (int round = 0; round < rounds; ++round) {
    net.hybridize(false);
    eager = std::min(eager, time_steps(net, trainer, x, target, steps));
    net.hybridize();
    train_step(net, trainer, x, target);  // records
    hybridized = std::min(hybridized, time_steps(net, trainer, x, target, steps));
  }
  std::printf("hybridize_mlp_train: %d steps, eager %.4f s, hybridized %.4f s (%.2fx)\n", steps,
              eager, hybridized, eager / hybridized);
  for (const auto& [system, seconds] : {std::pair{"eager", eager}, {"hybridized", hybridized}}) {
    records.push_back({{"workload", "hybridize_mlp_train"},
                       {"system", system},
                       {"seconds", seconds},
                       {"steps", steps},
                       {"model", "mlp 512-256-128-2, batch 1, SGD"},
                       {"device", "cpu(0)"}});
  }
}

}  // namespace tandem::bench
