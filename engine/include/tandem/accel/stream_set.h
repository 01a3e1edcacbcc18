// StreamSet: the streams of one accelerator by queue, the helper every backend builds its
// Accelerator::stream() on. It owns `compute_streams` compute streams and one stream for each
// other queue (copy_h2d, copy_d2h, copy_d2d, comm), plus a staging stream beside each copy
// direction (Accelerator::staging_stream), and names them all the same way, so that every
// backend's profiler lanes read alike:
//
//   tandem::StreamSet streams(device, config.compute_streams,
//       [&](tandem::Queue queue, int index, std::string name) {
//         return std::make_unique<MyStream>(device, queue, index, std::move(name));
//       });
//   tandem::Stream& s = streams.stream(tandem::Queue::compute, 1);   // "null(0) compute 1"
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tandem/accel/stream.h"
#include "tandem/device.h"
#include "tandem/op_props.h"

namespace tandem {

class StreamSet {
 public:
  using MakeStream =
      std::function<std::unique_ptr<Stream>(Queue queue, int index, std::string name)>;

  // Throws tandem::Error naming `device` if `compute_streams` < 1.
  StreamSet(Device device, int compute_streams, const MakeStream& make);

  int compute_streams() const { return static_cast<int>(compute_.size()); }
  // The stream of `queue`; `index` picks a compute stream, taken modulo their count (negative
  // indices wrap too). Ignored for the other queues, which have one stream each.
  Stream& stream(Queue queue, int index = 0);
  // The staging stream beside copy_h2d or copy_d2h (Accelerator::staging_stream), made with
  // index 1 and named "<copy stream> stage". Throws tandem::Error for any other queue.
  Stream& staging(Queue direction);
  // Every stream: the compute streams in index order, then copy_h2d, copy_d2h, copy_d2d, comm,
  // then the two staging streams.
  std::vector<Stream*> all();
  // Waits for every stream, even after one has failed, then throws the first error.
  void synchronize();

  // "sim(0) compute 1", "gpu(0) h2d", "gpu(0) d2h", "gpu(0) peer", "gpu(0) comm".
  static std::string name(Device device, Queue queue, int index);

 private:
  std::vector<std::unique_ptr<Stream>> compute_;
  // copy_h2d, copy_d2h, copy_d2d, comm: indexed by the queue's value minus one.
  std::array<std::unique_ptr<Stream>, 4> single_;
  // The staging streams of copy_h2d and copy_d2h, in that order.
  std::array<std::unique_ptr<Stream>, 2> staging_;
};

}  // namespace tandem
