#include "accel/builtin_backends.h"

#include "accel/cuda/cuda_backend.h"
#include "accel/sim/sim_accelerator.h"

namespace tandem::detail {

std::vector<Backend> builtin_backends() {
  std::vector<Backend> rows;
  rows.push_back(cuda_backend());
  rows.push_back(sim_backend());
  return rows;
}

}  // namespace tandem::detail
