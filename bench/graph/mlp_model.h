// The graph suite's network (d2l 8.1's experiment): Dense(256) relu, Dense(128) relu, Dense(2),
// on (1, 512) float32 inputs, Xavier-initialized on cpu(0).
#pragma once

#include <tandem/tandem.h>

namespace tandem::bench {

inline nn::Sequential make_graph_suite_mlp() {
  nn::Sequential net;
  net.add(nn::Dense(256, nn::relu, {.in_units = 512}))
      .add(nn::Dense(128, nn::relu, {.in_units = 256}))
      .add(nn::Dense(2, nn::ActivationType::none, {.in_units = 128}));
  net.initialize(nn::Xavier());
  return net;
}

}  // namespace tandem::bench
