// train_step_sim: what a replayed training step saves on sim(0), the stand-in for a GPU. One
// LeNet-BN SGD step at batch 64 on 8x8 images (tests/frontend/step_counts_test.cc's network),
// eager (record, backward, Trainer::step) and as a replayed nn::TrainingStep (its window fails
// as one unit: tandem/graph.h, CaptureOptions::fail_as_one_unit), read from the sim's modelled
// clock: device time and launches per step. The wall time of a sim step is mostly the CPU
// bodies of its kernels, not the model: the modelled figures are the proxy for a GPU.
#pragma once

#include "records.h"

namespace tandem::bench {

// Appends {"workload": "train_step_sim", "system": "eager" | "training_step", "modelled_us",
// "launches", "seconds", "steps", "latency_us", "model", "device"}: per step, modelled_us is
// sim(0)'s modelled busy time (compute and copy streams), launches its stream launches (an
// item, or a device graph launch), seconds the wall time, the median of the rounds.
void run_train_step_sim(bool quick, Records& records);

}  // namespace tandem::bench
