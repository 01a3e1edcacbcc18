// The accelerator backends compiled into the engine, one row each, registered before the
// registry answers its first lookup. Adding a backend to the engine: its folder under
// engine/src/accel/ defines a function returning its row, and builtin_backends() lists it.
#pragma once

#include <vector>

#include "tandem/accel/backend.h"

namespace tandem::detail {

std::vector<Backend> builtin_backends();

}  // namespace tandem::detail
