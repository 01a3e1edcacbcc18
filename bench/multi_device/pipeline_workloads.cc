// Pipeline and model parallel on two sim devices (issue 14). Placeholder until that work
// lands: it records nothing.
#include "workloads.h"

namespace tandem::bench {

void run_pipeline(const MultiDeviceOptions&, Records&) {}
void run_model_parallel(const MultiDeviceOptions&, Records&) {}

}  // namespace tandem::bench
