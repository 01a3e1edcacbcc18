// DeviceWork and VarFences: how the engine remembers accelerator work that it has already
// completed (at launch) but that the device may still be running.
//
// An accelerator op completes when its work is *enqueued*. The event recorded on its stream
// right after the body becomes a fence on each var it touched:
// - a write replaces the var's fences with its own (everything before it on the var is ordered
//   before it on the device, through the waits the launch enqueued);
// - a read adds its fence, replacing the read fence of the same stream, so a var carries at most
//   one write fence plus one read fence per stream.
// Fences live in VarState and are read and written under the var's lock. `VarState::fenced`
// tells the grant path (under the same lock) that the op granted must settle fences first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "error_record.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

// The device work of one launched accelerator op. Shared by the fences it left on vars and by
// its executor's list of outstanding work (which wait_all settles).
struct DeviceWork {
  EventRef done;  // recorded after the op's body: complete when its work has ended
  const Stream* stream = nullptr;
  std::uint64_t push_sequence = 0;  // of the op, so that the oldest error wins
  std::string op_name;              // copied: OpProps::name need only live until the op completes
  Device device;
  // The work whose failure this work's stream inherits: the write fences of the vars the op
  // reads that its stream waited on device-side (Stream::wait). If one of them failed, this
  // work was skipped on the device and its failure is theirs (the oldest one's record);
  // otherwise a failure is this op's own. Emptied once the work has ended without error or has
  // been resolved, so chains of work stay as short as the work in flight.
  std::vector<std::shared_ptr<DeviceWork>> inputs;
  // What the op's launch function threw while an input might still fail. Its stream then fails
  // this work in any case (an item rethrows it), and unless an input failed, this is the error
  // the work resolves to, also when the work it had enqueued failed too: the launch function's
  // exception is the op's, as the one exception of a CPU op's body.
  std::exception_ptr launch_error;
  // The error record its failure resolved to. `resolved`, `record` and `inputs` (after launch)
  // are guarded by EngineCore's device-error mutex.
  bool resolved = false;
  ErrorRef record;
};
using DeviceWorkRef = std::shared_ptr<DeviceWork>;

struct VarFences {
  DeviceWorkRef write;
  std::vector<DeviceWorkRef> reads;  // at most one per stream

  bool empty() const { return !write && reads.empty(); }
  void clear() {
    write.reset();
    reads.clear();
  }
  // `work` wrote the var: it is ordered after every earlier fence.
  void set_write(DeviceWorkRef work) {
    reads.clear();
    write = std::move(work);
  }
  // `work` read the var: a later write must wait for it (and for the other streams' readers).
  void add_read(DeviceWorkRef work) {
    for (DeviceWorkRef& read : reads) {
      if (read->stream == work->stream) {
        read = std::move(work);
        return;
      }
    }
    reads.push_back(std::move(work));
  }
  // What an op accessing the var must wait for: a read waits for the last write; a write also
  // for every read since.
  // `out` is a vector of DeviceWorkRef (std:: or std::pmr::).
  template <class Works>
  void collect(bool for_write, Works& out) const {
    if (write) out.push_back(write);
    if (for_write) out.insert(out.end(), reads.begin(), reads.end());
  }
};

}  // namespace tandem::detail
