// TANDEM_ASSERT(condition, what): the engine's internal invariants, checked where they are kept
// (var state transitions, pending counts, pool ownership) in builds configured with
// -DTANDEM_ASSERTIONS=ON (the default for Debug builds, and the TSan and ASan stages of
// scripts/test.sh). Elsewhere they compile to nothing: the condition is not evaluated, so it may
// cost what it likes (a lookup, a lock) but must have no effect the program relies on.
//
// A failed assertion is a bug in tandem, not a user error: it prints the condition, `what` and
// where, then aborts (no exception: the engine's state is already inconsistent).
#pragma once

namespace tandem::detail {

[[noreturn]] void assertion_failed(const char* condition, const char* what, const char* file,
                                   int line) noexcept;

}  // namespace tandem::detail

#if defined(TANDEM_ASSERTIONS) && TANDEM_ASSERTIONS
#define TANDEM_ASSERT(condition, what) \
  ((condition) ? static_cast<void>(0)  \
               : ::tandem::detail::assertion_failed(#condition, what, __FILE__, __LINE__))
#define TANDEM_ASSERTIONS_ON 1
#else
#define TANDEM_ASSERT(condition, what) static_cast<void>(0)
#define TANDEM_ASSERTIONS_ON 0
#endif
