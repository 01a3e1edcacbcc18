#include "tiny_mlp_step.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "tiny_mlp.h"

namespace tandem::bench {

using tiny_mlp::kBatch;
using tiny_mlp::kHidden;

void run_tiny_mlp_step(const data::DigitsDataSet& digits, bool quick, Records& records) {
  const tiny_mlp::Batches batches = tiny_mlp::make_batches(digits);
  const int steps = quick ? 1000 : 3000;
  const int rounds = quick ? 7 : 9;
  tiny_mlp::AutogradStep autograd_step;
  tiny_mlp::HandwrittenStep handwritten_step;
  std::vector<double> autograd_times, handwritten_times;
  // Interleaved rounds, so that both see the same machine noise; the median of each.
  for (int round = 0; round < rounds; ++round) {
    autograd_times.push_back(tiny_mlp::seconds_per_step(autograd_step, batches, steps));
    handwritten_times.push_back(tiny_mlp::seconds_per_step(handwritten_step, batches, steps));
  }
  const double with_autograd = tiny_mlp::median(autograd_times);
  const double handwritten = tiny_mlp::median(handwritten_times);
  std::printf(
      "tiny_mlp_step (64-64-10, batch 16, %d steps x %d rounds): autograd %.1f us, "
      "hand-written %.1f us, ratio %.2f\n",
      steps, rounds, with_autograd * 1e6, handwritten * 1e6, with_autograd / handwritten);
  for (const auto& [system, seconds] :
       {std::pair{"tandem", with_autograd}, std::pair{"tandem_handwritten", handwritten}}) {
    records.push_back({{"workload", "tiny_mlp_step"},
                       {"system", system},
                       {"device", "cpu(0)"},
                       {"seconds_per_step", seconds},
                       {"batch_size", kBatch},
                       {"hidden", kHidden},
                       {"steps", steps},
                       {"rounds", rounds}});
  }
}

}  // namespace tandem::bench
