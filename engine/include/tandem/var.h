// Var: a handle to one piece of state the engine orders ops on (an array's memory, an RNG
// state, a file...). Vars are cheap to copy; the state they name lives until `delete_var`.
//
// A handle carries the generation of the state it was made for. `delete_var` moves the state to
// the next generation, so every handle of the deleted var, copies included, is recognised as
// stale when it is used again (push, waits, a second delete_var): the engine throws
// tandem::Error instead of touching a state that may already serve another var. The check
// also refuses a var of another engine. (Generations are 32-bit: a handle kept across four
// billion reuses of its state would be taken for the new var.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace tandem {

namespace detail {
struct VarState;
}

class Var {
 public:
  Var() = default;
  Var(detail::VarState* state, std::uint32_t generation) : state_(state), generation_(generation) {}

  // False for a default-constructed handle. A valid handle may still be stale (deleted).
  bool valid() const { return state_ != nullptr; }
  detail::VarState* state() const { return state_; }
  std::uint32_t generation() const { return generation_; }
  friend bool operator==(Var, Var) = default;

 private:
  detail::VarState* state_ = nullptr;
  std::uint32_t generation_ = 0;
};

// A read or write set, as passed to push: `{a, b}`, a std::vector<Var>, or a span. It does not
// own the vars; push copies what it needs before returning. Duplicates are allowed (removed by
// the engine), and a var in both the read and the write set counts as a write.
class VarList {
 public:
  VarList() = default;
  // Only as a parameter: the list's array lives until the end of the push expression.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  VarList(std::initializer_list<Var> vars) : data_(vars.begin()), size_(vars.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  VarList(const std::vector<Var>& vars) : data_(vars.data()), size_(vars.size()) {}
  VarList(std::span<const Var> vars) : data_(vars.data()), size_(vars.size()) {}

  const Var* begin() const {
    return data_;
  }
  const Var* end() const {
    return data_ + size_;
  }
  std::size_t size() const {
    return size_;
  }
  bool empty() const {
    return size_ == 0;
  }

 private:
  const Var* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tandem
