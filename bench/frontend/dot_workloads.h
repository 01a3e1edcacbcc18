// The dot workloads: 10 x dot(x, x) on 2000x2000 float32, independent (all queued, one waitall)
// and dependent (y = dot(y, x), a chain); the seeds' dot(x, x).sum() (time to queue, time to
// finish); and one dot against OpenBLAS called directly with its default threads.
#pragma once

#include "records.h"

namespace tandem::bench {

void run_dot_workloads(bool quick, Records& records);

}  // namespace tandem::bench
