// Data-parallel training on 1, 2 and 4 sim devices (issue 14). Placeholder until the
// data-parallel work lands: it records nothing.
#include "workloads.h"

namespace tandem::bench {

void run_data_parallel(const MultiDeviceOptions&, Records&) {}

}  // namespace tandem::bench
