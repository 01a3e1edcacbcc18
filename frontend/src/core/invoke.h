// invoke: the one path of an op with a record (core/op_definition.h). It checks, allocates,
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
// op is one thread-local load and a branch. With a mode on, invoke asks once whether the op's
// gradient is wanted (OpOutput::gradient: the push then keeps what the rule reads in
// OpOutput::kept), hides the modes from the ops the push is made of (its dense copies, its
// steps), and reports the op as one OpCall.
#pragma once

#include <initializer_list>
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

// What the push fills: the result (allocated when the plan says so), and, when `gradient`, the
// intermediates the op's gradient rule reads.
struct OpOutput {
  NDArray out;
  bool gradient = false;
  NDArray kept[2];
};

// Tells the modes in `paused` about the op (OpForm::defined).
void report_definition(const OpModesPaused& paused, const OpDefinition& definition,
                       std::initializer_list<const NDArray*> inputs, const void* attrs,
                       OpOutput& output);

template <class Check, class Push>
NDArray invoke(const OpDefinition& definition, std::initializer_list<const NDArray*> inputs,
               const void* attrs, Check&& check, Push&& push) {
  const OpPlan plan = std::forward<Check>(check)();
  OpOutput output;
  if (!ops_observed()) [[likely]] {
    if (plan.allocate) {
      output.out =
          allocate_array(*plan.engine, plan.shape, plan.dtype, plan.device, definition.name);
    }
    std::forward<Push>(push)(output);
    return std::move(output.out);
  }
  output.gradient = definition.gradient != nullptr && gradient_wanted(inputs);
  const OpModesPaused paused;
  if (plan.allocate) {
    output.out = allocate_array(*plan.engine, plan.shape, plan.dtype, plan.device, definition.name);
  }
  std::forward<Push>(push)(output);
  report_definition(paused, definition, inputs, attrs, output);
  return std::move(output.out);
}

}  // namespace tandem::nd::detail
