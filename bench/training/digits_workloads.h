// lenet_digits: train_lenet's default recipe (random 1-pixel shifts, weight decay, cosine
// learning rate) trained on the digits for 20 epochs from 5 seeds, on lenet_bn and on the small
// ResNet, each run in a fresh child process (for its peak RSS): test accuracy (mean and worst
// seed), seconds per epoch. lenet_step: the training step at batch 256 of train_lenet's "lenet"
// model ("mlp" when there is none), which the JAX peer also builds.
#pragma once

#include <string>

#include "records.h"

namespace tandem::bench {

// The model the lenet_* workloads train.
std::string lenet_workload_model();
// Forks: call it before this process starts any thread.
void run_lenet_digits(const std::string& digits_dir, bool quick, Records& records);
void run_lenet_step(const std::string& digits_dir, bool quick, Records& records);

}  // namespace tandem::bench
