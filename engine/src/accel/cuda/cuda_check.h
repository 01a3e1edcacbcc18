// The CUDA error checks live in the public tandem/accel/cuda_check.h, shared with tandem_ops.
#pragma once

#include "tandem/accel/cuda_check.h"
