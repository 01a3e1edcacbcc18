// invoke: the one path of an op (its record: core/op_definition.h). It checks, allocates,
// pushes, then reports to the mode stack, in that order; the op file gives only what is special
// about the op: its check (which returns an OpPlan) and its push.
//
//   return detail::invoke(kWhere, {&condition, &a, &b}, nullptr,
//       [&] {  // check: throws tandem::Error naming what was wrong
//         Engine& engine = detail::check_same_place("where", {&condition, &a, &b});
//         ...
//         return detail::OpPlan{&engine, shape, a.dtype(), a.device()};
//       },
//       [&](detail::OpOutput& o) {  // push: o.out is allocated
//         detail::push_view_op<4>(...);
//       });
//
// With no mode on (every op outside autograd::record and export) the cost over a hand-written
// op is one thread-local load and a branch (the result is built in place, no NDArray is copied).
// With a mode on, invoke asks once whether the op's gradient is wanted (OpOutput::gradient: the
// push then keeps what the rule reads in OpOutput::kept), hides the modes from the ops the push
// is made of (its dense copies, its steps), and reports the op as one OpCall. The result is
// allocated before the modes are hidden, which changes nothing: allocation reports to no mode.
#pragma once

#include <initializer_list>
#include <span>
#include <utility>

#include "core/access.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// What an op's check decided: the result's engine, shape, dtype and device. allocate = false:
// the push makes the result itself (an op composed of other ops).
struct OpPlan {
  Engine* engine = nullptr;
  Shape shape;
  DType dtype = float32;
  Device device;
  bool allocate = true;
};

// What the push sees: the result (allocated when the plan says so; the push sets it otherwise)
// and, when `gradient`, where to keep the intermediates the op's gradient rule reads (two).
struct OpOutput {
  NDArray& out;
  bool gradient = false;
  NDArray* kept = nullptr;  // set when `gradient`
};

// Tells the modes in `paused` about the op.
void report_definition(const OpModesPaused& paused, const OpDefinition& definition,
                       std::span<const NDArray* const> inputs, const void* attrs, NDArray& out,
                       const NDArray* kept, const char* name);

// The push with a mode on: asks once whether the gradient is wanted, hides the modes from the
// push's own steps, reports the op.
template <class Push>
void push_observed(const OpDefinition& definition, std::span<const NDArray* const> inputs,
                   const void* attrs, NDArray& out, const char* name, Push&& push) {
  NDArray kept[2];
  OpOutput output{out, definition.gradient != nullptr && gradient_wanted(inputs), kept};
  const OpModesPaused paused;
  std::forward<Push>(push)(output);
  report_definition(paused, definition, inputs, attrs, out, kept, name);
}

// invoke with the inputs as a span (an op with any number of them: concat) and the name
// autograd gives the node when it is not the record's (null: the record's).
template <class Check, class Push>
NDArray invoke_inputs(const OpDefinition& definition, std::span<const NDArray* const> inputs,
                      const void* attrs, const char* name, Check&& check, Push&& push) {
  const OpPlan plan = std::forward<Check>(check)();
  // One named result for every path: it is built in the caller's return slot.
  NDArray out = plan.allocate ? allocate_array(*plan.engine, plan.shape, plan.dtype, plan.device,
                                               name != nullptr ? name : definition.name)
                              : NDArray();
  if (!ops_observed()) [[likely]] {
    OpOutput output{out};
    std::forward<Push>(push)(output);
  } else {
    push_observed(definition, inputs, attrs, out, name, std::forward<Push>(push));
  }
  return out;
}

template <class Check, class Push>
NDArray invoke(const OpDefinition& definition, std::initializer_list<const NDArray*> inputs,
               const void* attrs, Check&& check, Push&& push) {
  return invoke_inputs(definition, std::span<const NDArray* const>(inputs.begin(), inputs.size()),
                       attrs, nullptr, std::forward<Check>(check), std::forward<Push>(push));
}

}  // namespace tandem::nd::detail
