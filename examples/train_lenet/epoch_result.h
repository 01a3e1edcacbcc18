// The numbers a training loop on the digits reports after each epoch: train_lenet's on one
// device (training.h), train_multi_device's over several (data_parallel_training.h).
#pragma once

namespace tandem::examples {

struct EpochResult {
  int epoch = 0;              // from 1
  double loss = 0;            // mean training loss over the epoch
  double train_accuracy = 0;  // on the training batches, as they were trained
  double test_accuracy = 0;   // after the epoch, in prediction mode (on the first device)
  double seconds = 0;         // the epoch's training (to its end-of-epoch sync), no test
};

}  // namespace tandem::examples
