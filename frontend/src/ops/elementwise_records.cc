// The element-wise rows' records (elementwise_records.h), expanded from TANDEM_UNARY_OPS and
// TANDEM_BINARY_OPS: each row carries its gradient expression and the arrays that expression
// reads. Broadcast inputs get the output gradient summed over the axes they were broadcast
// along.
//
// What a rule reads is checked at compile time: an array its row does not list in `saves` is
// passed to the expression as a NotSaved, which no nd:: function or operator takes.
#include "ops/elementwise_records.h"

#include <cmath>
#include <string_view>
#include <type_traits>

#include "core/op_dispatch.h"
#include "ops/gradient_into.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/reduce.h"

namespace tandem::nd::detail {

using ops::BinaryOp;
using ops::UnaryOp;

NDArray sum_to_shape(const NDArray& gradient, const Shape& shape) {
  if (gradient.shape() == shape) return gradient;
  NDArray reduced = gradient;
  while (reduced.ndim() > shape.ndim()) reduced = nd::sum(reduced, 0);
  for (int i = 0; i < shape.ndim(); ++i)
    if (shape[i] == 1 && reduced.shape()[i] != 1) reduced = nd::sum(reduced, i, true);
  if (!(reduced.shape() == shape)) reduced = reduced.reshape(shape);
  return reduced;
}

// sum_to_shape, its last reduction written into input `input`'s destination when backward
// offers one and the input was broadcast along leading axes only (a bias added to a batch):
// the same reductions, the last one into the leaf's gradient buffer (gradient_into.h).
NDArray sum_to_shape_into(const NDArray& gradient, const Shape& shape,
                          std::vector<GradientDestination>& into, std::size_t input) {
  const int lead = gradient.ndim() - shape.ndim();
  bool leading_only = lead > 0;
  for (int i = 0; leading_only && i < shape.ndim(); ++i)
    leading_only = gradient.shape()[lead + i] == shape[i];
  if (!leading_only || usable_destination(into, input, gradient.engine(), shape, gradient.dtype(),
                                          gradient.device()) == nullptr) {
    return sum_to_shape(gradient, shape);
  }
  NDArray reduced = gradient;
  while (reduced.ndim() > shape.ndim() + 1) reduced = nd::sum(reduced, 0);
  const GradientOutput out = gradient_output(into, input, gradient.engine(), shape,
                                             gradient.dtype(), gradient.device(), "sum");
  push_reduce_axis_into(ops::ReduceOp::sum, reduced, 0, out);
  return out.result();
}

namespace elementwise_rules {

// The names a row's `saves` column lists, as bits.
namespace saved_names {
inline constexpr unsigned x = 1, a = 1, b = 2, y = 4;
}  // namespace saved_names
constexpr unsigned mask_of() {
  return 0;
}
template <class... Bits>
constexpr unsigned mask_of(Bits... bits) {
  return (0u | ... | bits);
}
#define TANDEM_SAVED_MASK(saves) \
  [] {                           \
    using namespace saved_names; \
    return mask_of saves;        \
  }()

// An array a rule did not declare: passing it to an expression does not compile.
struct NotSaved {};
// The gradient of an op that has none (comparisons).
struct NoGradient {};
inline constexpr NoGradient no_gradient{};

template <unsigned Mask, unsigned Bit>
decltype(auto) saved_if(const NDArray& array) {
  if constexpr ((Mask & Bit) != 0) {
    return (array);
  } else {
    return NotSaved{};
  }
}

// What a rule is handed for `Bit`: the saved array when its mask lists it, else a NotSaved.
template <unsigned Mask, unsigned Bit>
using Saved = std::conditional_t<(Mask & Bit) != 0, const NDArray&, NotSaved>;

template <class Rule, class... Args>
constexpr bool has_gradient = !std::is_same_v<std::invoke_result_t<Rule, Args...>, NoGradient>;

// The expressions see nd:: functions by name lookup, and std::log for the scalar of
// op(scalar, b).
using std::log;

NDArray saved_when(bool wanted, const NDArray& array) {
  return wanted ? array : NDArray();
}

// A unary row's rule: saved = {x, y} as its mask lists them.
template <unsigned Saves, class Rule>
OpGradient unary_gradient(const OpCall& c, Rule rule) {
  if constexpr (!has_gradient<Rule, const NDArray&, Saved<Saves, saved_names::x>,
                              Saved<Saves, saved_names::y>>) {
    return {};
  } else {
    const NDArray& x = c.input(0);
    if (!ops::is_floating(x.dtype())) return {};
    OpGradient gradient;
    gradient.inputs = {x};
    gradient.saved = {saved_when((Saves & saved_names::x) != 0, x),
                      saved_when((Saves & saved_names::y) != 0, *c.out)};
    gradient.rule = [rule](const std::vector<NDArray>& g, const std::vector<NDArray>& saved) {
      return std::vector<NDArray>{rule(g[0], saved_if<Saves, saved_names::x>(saved[0]),
                                       saved_if<Saves, saved_names::y>(saved[1]))};
    };
    return gradient;
  }
}

// A binary row's rules: saved = {a, b, y}, each kept only when a rule of an input that needs a
// gradient reads it.
template <unsigned SavesA, unsigned SavesB, class RuleA, class RuleB>
OpGradient binary_gradient(const OpCall& c, RuleA rule_a, RuleB rule_b) {
  if constexpr (!has_gradient<RuleA, const NDArray&, Saved<SavesA, saved_names::a>,
                              Saved<SavesA, saved_names::b>, Saved<SavesA, saved_names::y>>) {
    return {};
  } else {
    const NDArray &a = c.input(0), &b = c.input(1);
    if (!ops::is_floating(c.out->dtype())) return {};
    const bool need_a = c.needs_gradient(0), need_b = c.needs_gradient(1);
    const unsigned saves = (need_a ? SavesA : 0) | (need_b ? SavesB : 0);
    OpGradient gradient;
    gradient.inputs = {a, b};
    gradient.saved = {saved_when((saves & saved_names::a) != 0, a),
                      saved_when((saves & saved_names::b) != 0, b),
                      saved_when((saves & saved_names::y) != 0, *c.out)};
    const auto compute = [rule_a, rule_b, need_a, need_b, shape_a = a.shape(), shape_b = b.shape()](
                             const std::vector<NDArray>& grads, const std::vector<NDArray>& saved,
                             std::vector<GradientDestination>& into) {
      const NDArray& g = grads[0];
      std::vector<NDArray> result(2);
      if (need_a) {
        result[0] = sum_to_shape_into(rule_a(g, saved_if<SavesA, saved_names::a>(saved[0]),
                                             saved_if<SavesA, saved_names::b>(saved[1]),
                                             saved_if<SavesA, saved_names::y>(saved[2])),
                                      shape_a, into, 0);
      }
      if (need_b) {
        result[1] = sum_to_shape_into(rule_b(g, saved_if<SavesB, saved_names::a>(saved[0]),
                                             saved_if<SavesB, saved_names::b>(saved[1]),
                                             saved_if<SavesB, saved_names::y>(saved[2])),
                                      shape_b, into, 1);
      }
      return result;
    };
    gradient.rule = [compute](const std::vector<NDArray>& grads,
                              const std::vector<NDArray>& saved) {
      std::vector<GradientDestination> none;
      return compute(grads, saved, none);
    };
    // Only a broadcast input's gradient (a reduction) can be formed in its buffer: without
    // one, rule_into stays unset and backward takes the plain rule.
    if (!(a.shape() == c.out->shape()) || !(b.shape() == c.out->shape()))
      gradient.rule_into = compute;
    return gradient;
  }
}

// op(a, scalar) takes rule_a with b = scalar; op(scalar, a) takes rule_b with a = scalar (the
// array is then the rule's b). saved = {the array, y}.
template <unsigned SavesA, unsigned SavesB, class RuleA, class RuleB>
OpGradient binary_scalar_gradient(const OpCall& c, RuleA rule_a, RuleB rule_b) {
  if constexpr (!has_gradient<RuleA, const NDArray&, Saved<SavesA, saved_names::a>,
                              Saved<SavesA, saved_names::b>, Saved<SavesA, saved_names::y>>) {
    return {};
  } else {
    const NDArray& array = c.input(0);
    if (!ops::is_floating(c.out->dtype())) return {};
    const auto [scalar, scalar_first] = attrs_of<BinaryScalarAttrs>(c);
    const unsigned array_bit = scalar_first ? saved_names::b : saved_names::a;
    const unsigned saves = scalar_first ? SavesB : SavesA;
    OpGradient gradient;
    gradient.inputs = {array};
    gradient.saved = {saved_when((saves & array_bit) != 0, array),
                      saved_when((saves & saved_names::y) != 0, *c.out)};
    gradient.rule = [rule_a, rule_b, scalar, scalar_first](const std::vector<NDArray>& g,
                                                           const std::vector<NDArray>& saved) {
      if (scalar_first) {
        return std::vector<NDArray>{rule_b(g[0], scalar, saved_if<SavesB, saved_names::b>(saved[0]),
                                           saved_if<SavesB, saved_names::y>(saved[1]))};
      }
      return std::vector<NDArray>{rule_a(g[0], saved_if<SavesA, saved_names::a>(saved[0]), scalar,
                                         saved_if<SavesA, saved_names::y>(saved[1]))};
    };
    return gradient;
  }
}

// One gradient function per row: the row's expression becomes a generic lambda over (g, x, y)
// or (g, a, b, y), called with the saved arrays it declared and NotSaved for the others. A row
// whose expression is no_gradient has none (its record's gradient is null).
#define TANDEM_UNARY_GRADIENT(name, Functor, dtypes, flops, saves, gradient)     \
  OpGradient unary_gradient_##name(const OpCall& c) {                            \
    constexpr unsigned mask = TANDEM_SAVED_MASK(saves);                          \
    return unary_gradient<mask>(                                                 \
        c, []([[maybe_unused]] const NDArray& g, [[maybe_unused]] const auto& x, \
              [[maybe_unused]] const auto& y) { return gradient; });             \
  }
#define TANDEM_BINARY_RULES(saves_a, gradient_a, saves_b, gradient_b)                 \
  constexpr unsigned mask_a = TANDEM_SAVED_MASK(saves_a);                             \
  constexpr unsigned mask_b = TANDEM_SAVED_MASK(saves_b);                             \
  auto rule_a = []([[maybe_unused]] const NDArray& g, [[maybe_unused]] const auto& a, \
                   [[maybe_unused]] const auto& b,                                    \
                   [[maybe_unused]] const auto& y) { return gradient_a; };            \
  auto rule_b = []([[maybe_unused]] const NDArray& g, [[maybe_unused]] const auto& a, \
                   [[maybe_unused]] const auto& b,                                    \
                   [[maybe_unused]] const auto& y) { return gradient_b; };
#define TANDEM_BINARY_GRADIENT(name, Functor, dtypes, flops, saves_a, gradient_a, saves_b, \
                               gradient_b)                                                 \
  OpGradient binary_gradient_##name(const OpCall& c) {                                     \
    TANDEM_BINARY_RULES(saves_a, gradient_a, saves_b, gradient_b)                          \
    return binary_gradient<mask_a, mask_b>(c, rule_a, rule_b);                             \
  }                                                                                        \
  OpGradient binary_scalar_gradient_##name(const OpCall& c) {                              \
    TANDEM_BINARY_RULES(saves_a, gradient_a, saves_b, gradient_b)                          \
    return binary_scalar_gradient<mask_a, mask_b>(c, rule_a, rule_b);                      \
  }
TANDEM_UNARY_OPS(TANDEM_UNARY_GRADIENT)
TANDEM_BINARY_OPS(TANDEM_BINARY_GRADIENT)
#undef TANDEM_UNARY_GRADIENT
#undef TANDEM_BINARY_GRADIENT
#undef TANDEM_BINARY_RULES
#undef TANDEM_SAVED_MASK

}  // namespace elementwise_rules

namespace {

using namespace elementwise_rules;

// The rows' example calls: inputs in [0.5, 1.5] (every row is defined and smooth there: log,
// sqrt, divide, power), broadcast for the binary rows, both orders for the scalar forms.
std::vector<OpExample> unary_examples(UnaryOp op, bool differentiable) {
  return {OpExample{.label = "(2, 3)",
                    .inputs =
                        [](Device d) {
                          return std::vector<NDArray>{example_array({2, 3}, d, 11, 0.5, 1.5)};
                        },
                    .run = [op](const std::vector<NDArray>& in) { return unary_op(op, in[0]); },
                    .differentiable = differentiable ? std::vector<int>{0} : std::vector<int>{}}};
}

std::vector<OpExample> binary_examples(BinaryOp op, bool differentiable) {
  const auto pair = [&](const char* label, Shape a, Shape b) {
    return OpExample{
        .label = label,
        .inputs =
            [a, b](Device d) {
              return std::vector<NDArray>{example_array(a, d, 12, 0.5, 1.5),
                                          example_array(b, d, 13, 0.5, 1.5)};
            },
        .run = [op](const std::vector<NDArray>& in) { return binary_op(op, in[0], in[1]); },
        .differentiable = differentiable ? std::vector<int>{0, 1} : std::vector<int>{}};
  };
  return {pair("same shape", {2, 3}, {2, 3}), pair("broadcast", {2, 3}, {3})};
}

std::vector<OpExample> binary_scalar_examples(BinaryOp op, bool differentiable) {
  const auto form = [&](const char* label, bool scalar_first) {
    return OpExample{.label = label,
                     .inputs =
                         [](Device d) {
                           return std::vector<NDArray>{example_array({2, 3}, d, 14, 0.5, 1.5)};
                         },
                     .run =
                         [op, scalar_first](const std::vector<NDArray>& in) {
                           return binary_scalar_op(op, in[0], 1.25, scalar_first);
                         },
                     .differentiable = differentiable ? std::vector<int>{0} : std::vector<int>{}};
  };
  return {form("array, scalar", false), form("scalar, array", true)};
}

template <UnaryOp op>
NDArray import_unary(const OpAttrReader&, const std::vector<NDArray>& in) {
  return unary_op(op, in[0]);
}
template <BinaryOp op>
NDArray import_binary(const OpAttrReader&, const std::vector<NDArray>& in) {
  return binary_op(op, in[0], in[1]);
}
template <BinaryOp op>
NDArray import_binary_scalar(const OpAttrReader& attrs, const std::vector<NDArray>& in) {
  return binary_scalar_op(op, in[0], attrs.scalar("scalar"), attrs.boolean("scalar_first"));
}

void write_binary_scalar(const OpCall& c, OpAttrWriter& out) {
  const BinaryScalarAttrs& attrs = attrs_of<BinaryScalarAttrs>(c);
  out.scalar("scalar", attrs.scalar);
  out.boolean("scalar_first", attrs.scalar_first);
}

}  // namespace

#define TANDEM_HAS_GRADIENT(gradient) (std::string_view(#gradient) != "no_gradient")

const OpDefinition kUnaryRecords[ops::kUnaryOpCount] = {
#define TANDEM_UNARY_RECORD(row, Functor, dtypes, flops, saves, expression)         \
  OpDefinition{                                                                     \
      .name = #row,                                                                 \
      .import = import_unary<UnaryOp::row>,                                         \
      .gradient = TANDEM_HAS_GRADIENT(expression) ? unary_gradient_##row : nullptr, \
      .examples = [] { return unary_examples(UnaryOp::row, TANDEM_HAS_GRADIENT(expression)); }},
    TANDEM_UNARY_OPS(TANDEM_UNARY_RECORD)
#undef TANDEM_UNARY_RECORD
};

const OpDefinition kBinaryRecords[ops::kBinaryOpCount] = {
#define TANDEM_BINARY_RECORD(row, Functor, dtypes, flops, saves_a, expression_a, saves_b,       \
                             expression_b)                                                      \
  OpDefinition{.name = #row,                                                                    \
               .num_inputs = 2,                                                                 \
               .import = import_binary<BinaryOp::row>,                                          \
               .gradient = TANDEM_HAS_GRADIENT(expression_a) ? binary_gradient_##row : nullptr, \
               .examples = [] {                                                                 \
                 return binary_examples(BinaryOp::row, TANDEM_HAS_GRADIENT(expression_a));      \
               }},
    TANDEM_BINARY_OPS(TANDEM_BINARY_RECORD)
#undef TANDEM_BINARY_RECORD
};

const OpDefinition kBinaryScalarRecords[ops::kBinaryOpCount] = {
#define TANDEM_BINARY_SCALAR_RECORD(row, Functor, dtypes, flops, saves_a, expression_a, saves_b, \
                                    expression_b)                                                \
  OpDefinition{                                                                                  \
      .name = #row "_scalar",                                                                    \
      .write_attrs = write_binary_scalar,                                                        \
      .import = import_binary_scalar<BinaryOp::row>,                                             \
      .gradient = TANDEM_HAS_GRADIENT(expression_a) ? binary_scalar_gradient_##row : nullptr,    \
      .examples = [] {                                                                           \
        return binary_scalar_examples(BinaryOp::row, TANDEM_HAS_GRADIENT(expression_a));         \
      }},
    TANDEM_BINARY_OPS(TANDEM_BINARY_SCALAR_RECORD)
#undef TANDEM_BINARY_SCALAR_RECORD
};

#undef TANDEM_HAS_GRADIENT

// Every row's records, for the graph import (graph/graph_ops.cc) and the tests.
std::span<const OpDefinition* const> op_definitions_elementwise_rows();
std::span<const OpDefinition* const> op_definitions_elementwise_rows() {
  static const std::vector<const OpDefinition*> definitions = [] {
    std::vector<const OpDefinition*> list;
    for (const OpDefinition& d : kUnaryRecords) list.push_back(&d);
    for (const OpDefinition& d : kBinaryRecords) list.push_back(&d);
    for (const OpDefinition& d : kBinaryScalarRecords) list.push_back(&d);
    return list;
  }();
  return definitions;
}

}  // namespace tandem::nd::detail
