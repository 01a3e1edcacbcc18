// train_step_overhead: the engine ops per step and the step time of a 64-64-10 MLP at batch 16
// on the digits, with autograd and the Trainer against the same step with the gradients written
// by hand (tiny_mlp.h; bench/training's tiny_mlp_step without StarPU). Interleaved rounds,
// medians.
//
//   train_step_overhead [steps] [rounds]
#include <tandem/data/digits.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tiny_mlp.h"

using namespace tandem;
using namespace tiny_mlp;

namespace {

template <class Step>
double ops_per_step(Step& step, const Batches& b) {
  nd::waitall();
  const std::uint64_t before = nd::current_engine().stats().ops_pushed;
  step(b.images[0], b.labels[0]);
  const std::uint64_t after = nd::current_engine().stats().ops_pushed;
  nd::waitall();
  return static_cast<double>(after - before);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (!data::digits_available(TANDEM_DIGITS_DIR)) {
    std::fprintf(stderr, "train_step_overhead: the digits are not in %s\n", TANDEM_DIGITS_DIR);
    return 1;
  }
  const auto digits = data::load_digits(TANDEM_DIGITS_DIR);
  const Batches batches = make_batches(digits);
  AutogradStep autograd_step;
  HandwrittenStep handwritten_step;
  std::printf("ops per step: autograd %.0f, hand-written %.0f\n",
              ops_per_step(autograd_step, batches), ops_per_step(handwritten_step, batches));
  std::vector<double> a, h, ratios;
  for (int round = 0; round < rounds; ++round) {
    a.push_back(seconds_per_step(autograd_step, batches, steps));
    h.push_back(seconds_per_step(handwritten_step, batches, steps));
    ratios.push_back(a.back() / h.back());
  }
  std::printf(
      "step (64-64-10, batch 16, %d steps x %d rounds, medians): autograd %.1f us, hand-written "
      "%.1f us, ratio %.2f (per-round ratios %.2f..%.2f)\n",
      steps, rounds, median(a) * 1e6, median(h) * 1e6, median(a) / median(h),
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()));
  return 0;
}
