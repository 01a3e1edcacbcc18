// The element-wise math, one functor per operation, written once for every device: the CPU
// backend runs them in a oneTBB parallel_for, the accelerator backends in a grid-stride loop.
// The functors live with their op lists: unary_ops.h and binary_ops.h.
#pragma once

#include "tandem/ops/binary_ops.h"
#include "tandem/ops/unary_ops.h"
#include "tandem/ops/wrapping.h"
