#include "assertions.h"

#include <cstdio>
#include <cstdlib>

namespace tandem::detail {

void assertion_failed(const char* condition, const char* what, const char* file,
                      int line) noexcept {
  std::fprintf(stderr, "tandem: internal invariant broken at %s:%d: %s (%s)\n", file, line, what,
               condition);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tandem::detail
