// tiny_mlp_step: the step time of a 64-64-10 MLP at batch 16 on the digits, where the per-op
// cost dominates: with autograd and the Trainer ("tandem") and with the same gradients written
// by hand ("tandem_handwritten").
#pragma once

#include <tandem/data/digits.h>

#include "records.h"

namespace tandem::bench {

void run_tiny_mlp_step(const data::DigitsDataSet& digits, bool quick, Records& records);

}  // namespace tandem::bench
