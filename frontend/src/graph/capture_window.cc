#include "graph/capture_window.h"

#include "tandem/errors.h"

namespace tandem::nd::detail {

CaptureWindow::CaptureWindow() : Mode(ModeKind::capture) {
  if (capturing_on_this_thread()) {
    throw Error(
        "tandem: hybridize: a recording is already in progress on this thread; recordings do "
        "not nest");
  }
  previous_ = set_mode(ModeKind::capture, this);
}

CaptureWindow::~CaptureWindow() {
  set_mode(ModeKind::capture, previous_);
  for (Storage* storage : deferred_) delete_storage(storage);
}

void CaptureWindow::defer_deletion(Storage* storage) {
  // Only called with this window open (release checks first). A failed push_back leaks the
  // storage: leaking beats freeing memory an op may still use.
  try {
    deferred_.push_back(storage);
  } catch (...) {
  }
}

}  // namespace tandem::nd::detail
