// The exceptions the engine throws at sync points and at push.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace tandem {

// Base of every error tandem itself raises.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An op threw (or its deleter did). Rethrown once at the next matching sync point:
// `wait_for_var` on a var the op (or a skipped op downstream of it) wrote, or `wait_all`.
// The op's own exception is nested: `std::rethrow_if_nested(e)` recovers it.
class OpError : public Error, public std::nested_exception {
 public:
  // Must be constructed inside the catch block that caught the op's exception.
  OpError(const std::string& op_name, const std::string& device, const std::string& what)
      : Error("tandem: op '" + op_name + "' on " + device + " failed: " + what),
        op_name_(op_name) {}
  const std::string& op_name() const { return op_name_; }

 private:
  std::string op_name_;
};

// A sync call made where it could never return, e.g. `wait_for_var` from inside an op.
class DeadlockError : public Error {
 public:
  using Error::Error;
};

// A wait given a timeout (`wait_for_var(v, 5s)`) that passed first. The message says what the
// wait is blocked on: the ops ahead of it, the op holding each var on the way, and the async
// ops waiting for their Completion. Nothing was cancelled: the wait may be retried.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

}  // namespace tandem
