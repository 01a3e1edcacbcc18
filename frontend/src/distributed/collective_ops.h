// The array-level pieces nn's gradient exchange and pipeline are built from: placement checks,
// named copies between devices, and the two batched ops of a gradient bucket (its pack/unpack
// and its sum in device order). nn builds on these and on NDArray functions only; the views,
// kernel tables and engine pushes behind them stay in the core.
#pragma once

#include <cstddef>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// Throws tandem::Error naming `op` and the device when `device` is not present.
void require_device(Device device, const char* op);

// Throws tandem::Error naming `op` and both devices when no copy path joins them.
void require_copy_path(const char* op, Device from, Device to);

// source.as_in_context(device), its transfer named `op` in the profiler; not recorded by
// autograd.
NDArray copy_to_device_as(const NDArray& source, Device device, const char* op);
// The same, on the source accelerator's peer-copy stream (core/transfer.h, copy_to_device_sent).
NDArray send_to_device_as(const NDArray& source, Device device, const char* op);

// A new dense array of `shape` on `device`, its size checked naming `op`; the next op pushed on
// it writes all of it (a bucket's flat array).
NDArray allocate_on(Engine& engine, const Shape& shape, DType dtype, Device device, const char* op);

// One op named `name` on `device`'s compute queue that copies sources[i] into destinations[i]
// for each i, one after the other (a bucket's pack into its flat array, or its unpack). It reads
// the sources' vars and writes the destinations'. Same shapes and dtypes pairwise; the caller
// has checked that.
void push_copies(const std::vector<NDArray>& sources, const std::vector<NDArray>& destinations,
                 Device device, const char* name);

// One op named `name` on `device` that sums, for each member m, the addends[d][m] of every
// device d into addends[here][m] in device order, ((a0 + a1) + a2) + ..., with
// addends[here][m] in place of a_here. The sum of the addends before `here` is formed in
// addends[0][m] (written when here >= 2), then a_here = a_here + that sum (the same bits as
// that sum + a_here), then the addends after `here` are added in order. All of one member's
// addends are dense, of one shape and of one dtype. `after`, when defined, is read only so that
// the op is queued behind the op that wrote it.
void push_sum_in_device_order(const std::vector<std::vector<NDArray>>& addends, std::size_t here,
                              const NDArray& after, Device device, const char* name);

}  // namespace tandem::nd::detail
