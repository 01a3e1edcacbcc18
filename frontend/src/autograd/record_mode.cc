// Autograd recording as a mode of the mode stack (core/modes.h): each op's call becomes a tape
// node by its form's rule (gradients_*.cc), or by the rule the op gave itself.
#include <string>
#include <vector>

#include "autograd/record.h"
#include "autograd/tape.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "tandem/errors.h"

namespace tandem::autograd::detail {

namespace {

using nd::NDArray;
using nd::detail::OpCall;
using nd::detail::OpForm;

// An op's own rule: its saved arrays are detached and versioned here, then handed to the rule.
void record_own_rule(const char* name, const nd::detail::OpGradient& gradient, NDArray& out) {
  Saver save;
  std::vector<NDArray> saved;
  saved.reserve(gradient.saved.size());
  for (const NDArray& array : gradient.saved)
    saved.push_back(array.defined() ? save(array) : NDArray());
  record_node(name, gradient.inputs, {&out}, save.take(),
              [rule = gradient.rule, saved = std::move(saved)](const std::vector<NDArray>& g) {
                return rule(g, saved);
              });
}

class RecordMode final : public nd::detail::Mode {
 public:
  RecordMode() : Mode(nd::detail::ModeKind::record) {}

  void op(const OpCall& c) override {
    switch (c.form) {
      case OpForm::unary:
        return record_unary(c.unary_op, *c.x, *c.out);
      case OpForm::binary:
        return record_binary(c.binary_op, *c.x, *c.y, *c.out);
      case OpForm::binary_scalar:
        return record_binary_scalar(c.binary_op, *c.x, c.scalar, c.scalar_first, *c.out);
      case OpForm::reduce:
        if (c.axis) return record_reduce_axis(c.reduce_op, *c.x, *c.axis, *c.out);
        return record_reduce_all(c.reduce_op, *c.x, *c.out);
      case OpForm::dot:
        return record_dot(*c.x, *c.y, *c.out);
      case OpForm::transpose:
        return record_transpose(*c.x, *c.axes, *c.out);
      case OpForm::reshape:
        return record_reshape(*c.x, *c.out);
      case OpForm::slice:
        return record_slice(*c.x, c.begin, c.step, *c.out);
      case OpForm::index:
        return record_index(*c.x, c.begin, *c.out);
      case OpForm::copy:
        return record_copy(c.name, *c.x, *c.out);
      case OpForm::concat:
        return record_concat(*c.arrays, *c.axis, *c.out);
      // An op with a record: its rule, when an input needs a gradient.
      case OpForm::defined:
        if (c.definition->gradient == nullptr || !wants_gradient(c.inputs, c.input_count)) return;
        return record_own_rule(c.name, c.definition->gradient(c), *c.out);
    }
  }

  bool wants_gradient(const NDArray* const* inputs, std::size_t count) const override {
    for (std::size_t i = 0; i < count; ++i)
      if (inputs[i] != nullptr && inputs[i]->defined() && needs_grad(*inputs[i])) return true;
    return false;
  }

  void in_place_write(const char* op, const NDArray& target, const NDArray* source) override {
    if (source != nullptr && needs_grad(*source)) {
      throw Error(std::string("tandem: ") + op +
                  ": writing an array that needs a gradient (shape " + source->shape().to_string() +
                  ") in place into another array while recording; "
                  "in-place writes are not recorded, so no gradient would flow back. Use a "
                  "function that returns a new array, or write source.detach() on purpose");
    }
    // A null-request leaf has no gradient to protect (the write-version check still guards a
    // saved use of it).
    if (needs_grad(target)) {
      throw Error(std::string("tandem: ") + op + ": writing in place into an array of shape " +
                  target.shape().to_string() +
                  " that is part of the recorded graph (attached, or computed by a recorded op) "
                  "while recording; gradients cannot flow through in-place writes. Write into a "
                  "new array, or into x.detach() inside autograd::pause()");
    }
  }
};

}  // namespace

nd::detail::Mode* record_mode() {
  static RecordMode mode;
  return &mode;
}

}  // namespace tandem::autograd::detail
