// lenet_digits: a model of train_lenet's models.h ("lenet" when it exists, else "mlp") trained
// on the digits for a fixed number of epochs, in a fresh child process (for its peak RSS): test
// accuracy, seconds per epoch. lenet_step: the same model's training step at batch 256.
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
