// Autograd recording as a mode of the mode stack (core/modes.h): each op's call becomes a tape
// node by the gradient rule of its record (core/op_definition.h). No op is named here.
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "core/access.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "tandem/errors.h"

namespace tandem::autograd::detail {

namespace {

using nd::NDArray;
using nd::detail::OpCall;

// An op's rule: its saved arrays are detached and versioned here, then handed to the rule.
void record_rule(const char* name, const nd::detail::OpGradient& gradient, NDArray& out) {
  Saver save;
  std::vector<NDArray> saved;
  saved.reserve(gradient.saved.size());
  for (const NDArray& array : gradient.saved)
    saved.push_back(array.defined() ? save(array) : NDArray());
  record_node(
      name, gradient.inputs, {&out}, save.take(),
      [rule = gradient.rule, saved](const std::vector<NDArray>& g) { return rule(g, saved); });
  Node& node = *nd::detail::NDArrayAccess::grad_node(out);
  if (gradient.rule_into) {
    node.backward_into = [rule = gradient.rule_into, saved = std::move(saved)](
                             const std::vector<NDArray>& g,
                             std::vector<GradientDestination>& destinations) {
      return rule(g, saved, destinations);
    };
  }
  if (gradient.same_view_of) node.same_view_of = gradient.same_view_of;
}

class RecordMode final : public nd::detail::Mode {
 public:
  RecordMode() : Mode(nd::detail::ModeKind::record) {}

  // Every op has a record: its rule, for the inputs that need a gradient.
  void op(const OpCall& c) override {
    if (c.definition->gradient == nullptr) return;
    std::uint64_t wanted = 0;
    for (std::size_t i = 0; i < c.input_count; ++i) {
      const NDArray* input = c.inputs[i];
      if (input != nullptr && input->defined() && needs_grad(*input))
        wanted |= i < 64 ? std::uint64_t{1} << i : ~std::uint64_t{0};
    }
    if (wanted == 0) return;
    OpCall call = c;
    call.gradient_inputs = wanted;
    if (const nd::detail::OpGradient gradient = c.definition->gradient(call); gradient.rule)
      record_rule(c.name, gradient, *c.out);  // no rule: none for this call (argmax, integers)
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
