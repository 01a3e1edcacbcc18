// The default device-graph answers of a Stream (tandem/accel/stream.h): no graphs.
#include <memory>
#include <string>

#include "tandem/accel/device_graph.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"

namespace tandem {

void Stream::begin_graph_capture() {
  throw Error(std::string("tandem: ") + name() +
              " cannot capture device graphs: its backend has none (check "
              "supports_graph_capture() first)");
}

std::unique_ptr<DeviceGraph> Stream::end_graph_capture() {
  throw Error(std::string("tandem: ") + name() + " has no device-graph capture to end");
}

}  // namespace tandem
