// train_step_overhead: the engine ops per step and the step time of a 64-64-10 MLP at batch 16
// on the digits, with autograd and the Trainer against the same step with the gradients written
// by hand (bench/training's tiny_mlp_step, without StarPU). Interleaved rounds, medians.
//
//   train_step_overhead [steps] [rounds]
#include <tandem/data/digits.h>
#include <tandem/nd/autograd.h>
#include <tandem/nd/network.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace tandem;

namespace {

constexpr std::int64_t kBatch = 16, kInputs = 64, kHidden = 64, kClasses = 10;
constexpr double kLearningRate = 0.1;

class AutogradStep {
 public:
  AutogradStep() {
    net_.add(nn::Dense(kHidden, nn::relu, {.in_units = kInputs}))
        .add(nn::Dense(kClasses, nn::ActivationType::none, {.in_units = kHidden}));
    net_.initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0, 1));
    trainer_ = std::make_unique<nn::Trainer>(net_.collect_params(), nn::SGD(kLearningRate));
  }
  void operator()(const nd::NDArray& x, const nd::NDArray& y) {
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy(net_(x), y).sum();
    }
    loss.backward();
    trainer_->step(kBatch);
  }

 private:
  nn::Sequential net_;
  std::unique_ptr<nn::Trainer> trainer_;
};

class HandwrittenStep {
 public:
  HandwrittenStep() {
    nd::random::seed(1);
    w1_ = nd::random::normal({kHidden, kInputs}, {.stddev = 0.1});
    b1_ = nd::zeros({kHidden});
    w2_ = nd::random::normal({kClasses, kHidden}, {.stddev = 0.1});
    b2_ = nd::zeros({kClasses});
  }
  void operator()(const nd::NDArray& x, const nd::NDArray& y) {
    const nd::NDArray pre = nd::dot(x, w1_.T()) + b1_;
    const nd::NDArray h = nd::relu(pre);
    const nd::NDArray logits = nd::dot(h, w2_.T()) + b2_;
    const nd::NDArray d_logits = nd::softmax(logits) - nd::one_hot(y, kClasses);
    const nd::NDArray d_pre = nd::dot(d_logits, w2_) * (pre > 0.0);
    const double scale = kLearningRate / static_cast<double>(kBatch);
    w2_ -= nd::dot(d_logits.T(), h) * scale;
    b2_ -= nd::sum(d_logits, 0) * scale;
    w1_ -= nd::dot(d_pre.T(), x) * scale;
    b1_ -= nd::sum(d_pre, 0) * scale;
  }

 private:
  nd::NDArray w1_, b1_, w2_, b2_;
};

struct Batches {
  std::vector<nd::NDArray> images, labels;
};

template <class Step>
double ops_per_step(Step& step, const Batches& b) {
  nd::waitall();
  const std::uint64_t before = nd::current_engine().stats().ops_pushed;
  step(b.images[0], b.labels[0]);
  const std::uint64_t after = nd::current_engine().stats().ops_pushed;
  nd::waitall();
  return static_cast<double>(after - before);
}

template <class Step>
double seconds_per_step(Step& step, const Batches& b, int steps) {
  const std::size_t count = b.images.size();
  for (std::size_t i = 0; i < 20; ++i) step(b.images[i % count], b.labels[i % count]);
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    const std::size_t k = static_cast<std::size_t>(i) % count;
    step(b.images[k], b.labels[k]);
  }
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
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
  const nd::NDArray images = digits.train.images.reshape({-1, kInputs});
  Batches batches;
  for (std::int64_t row = 0; row + kBatch <= images.shape()[0]; row += kBatch) {
    batches.images.push_back(images.slice(row, row + kBatch).copy());
    batches.labels.push_back(digits.train.labels.slice(row, row + kBatch).copy());
  }
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
