// What the MPI test suites share: the process group of the run.
#pragma once

#include "tandem/dist/process_group.h"

namespace tandem::dist::test {

ProcessGroup& group();

}  // namespace tandem::dist::test
