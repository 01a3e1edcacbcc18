#include "graph/capture_window.h"

#include <string>

#include "tandem/errors.h"

namespace tandem::nd::detail {

namespace {
thread_local CaptureWindow* tls_open_window = nullptr;
}  // namespace

bool capturing_on_this_thread() noexcept {
  return tls_open_window != nullptr;
}

void throw_if_capturing(const char* sync_call) {
  if (tls_open_window == nullptr) [[likely]]
    return;
  throw Error(std::string("tandem: ") + sync_call +
              " inside a hybridized function while it is recorded: the recorded ops have not "
              "run, so there is nothing to wait for or read; a hybridized function must not "
              "read values (wait_to_read, to_vector, scalar, printing, waitall). Read the "
              "outputs after the call, or call the function without hybridize");
}

CaptureWindow::CaptureWindow() {
  if (tls_open_window != nullptr) {
    throw Error(
        "tandem: hybridize: a recording is already in progress on this thread; recordings do "
        "not nest");
  }
  tls_open_window = this;
}

CaptureWindow::~CaptureWindow() {
  tls_open_window = nullptr;
  for (Storage* storage : deferred_) delete_storage(storage);
}

void CaptureWindow::defer_deletion(Storage* storage) {
  // Only called with a window open (release checks first). A failed push_back leaks the
  // storage: leaking beats freeing memory an op may still use.
  try {
    tls_open_window->deferred_.push_back(storage);
  } catch (...) {
  }
}

}  // namespace tandem::nd::detail
