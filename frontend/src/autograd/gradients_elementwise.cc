// Gradient rules of the element-wise ops, expanded from the rows of TANDEM_UNARY_OPS and
// TANDEM_BINARY_OPS (tandem/ops/unary_ops.h, binary_ops.h): each row carries its gradient
// expression and the arrays that expression reads. Broadcast inputs get the output gradient
// summed over the axes they were broadcast along.
//
// What a rule reads is checked at compile time: an array its row does not list in `saves` is
// passed to the expression as a NotSaved, which no nd:: function or operator takes.
#include <cmath>
#include <type_traits>

#include "autograd/record.h"
#include "autograd/tape.h"
#include "core/access.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/reduce.h"

namespace tandem::autograd::detail {

using nd::NDArray;
using ops::BinaryOp;
using ops::UnaryOp;

namespace {

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

// Each row's `saves` columns as masks (at namespace scope, where x, a, b and y name the bits).
template <UnaryOp op>
constexpr unsigned unary_saves = 0;
template <BinaryOp op>
constexpr unsigned binary_saves_a = 0;
template <BinaryOp op>
constexpr unsigned binary_saves_b = 0;
#define TANDEM_UNARY_SAVES(name, Functor, dtypes, flops, saves, ...) \
  template <>                                                        \
  constexpr unsigned unary_saves<UnaryOp::name> = TANDEM_SAVED_MASK(saves);
#define TANDEM_BINARY_SAVES(name, Functor, dtypes, flops, saves_a, gradient_a, saves_b, ...) \
  template <>                                                                                \
  constexpr unsigned binary_saves_a<BinaryOp::name> = TANDEM_SAVED_MASK(saves_a);            \
  template <>                                                                                \
  constexpr unsigned binary_saves_b<BinaryOp::name> = TANDEM_SAVED_MASK(saves_b);
TANDEM_UNARY_OPS(TANDEM_UNARY_SAVES)
TANDEM_BINARY_OPS(TANDEM_BINARY_SAVES)
#undef TANDEM_UNARY_SAVES
#undef TANDEM_BINARY_SAVES

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

// The expressions see nd:: functions by argument-dependent lookup, and std::log for the scalar
// of op(scalar, b).
using std::log;

template <unsigned Saves, class Rule>
void record_unary_rule(UnaryOp op, const NDArray& x, NDArray& out, Rule rule) {
  if constexpr (has_gradient<Rule, const NDArray&, Saved<Saves, saved_names::x>,
                             Saved<Saves, saved_names::y>>) {
    if (!ops::is_floating(x.dtype()) || !needs_grad(x)) return;
    Saver save;
    const NDArray saved_x = (Saves & saved_names::x) != 0 ? save(x) : NDArray();
    const NDArray saved_y = (Saves & saved_names::y) != 0 ? save(out) : NDArray();
    record_node(ops::op_name(op), {x}, {&out}, save.take(),
                [rule, saved_x, saved_y](const std::vector<NDArray>& g) {
                  return std::vector<NDArray>{rule(g[0], saved_if<Saves, saved_names::x>(saved_x),
                                                   saved_if<Saves, saved_names::y>(saved_y))};
                });
  }
}

template <unsigned SavesA, unsigned SavesB, class RuleA, class RuleB>
void record_binary_rule(BinaryOp op, const NDArray& a, const NDArray& b, NDArray& out, RuleA rule_a,
                        RuleB rule_b) {
  if constexpr (has_gradient<RuleA, const NDArray&, Saved<SavesA, saved_names::a>,
                             Saved<SavesA, saved_names::b>, Saved<SavesA, saved_names::y>>) {
    if (!ops::is_floating(out.dtype())) return;
    const bool need_a = needs_grad(a), need_b = needs_grad(b);
    if (!need_a && !need_b) return;
    const unsigned saves = (need_a ? SavesA : 0) | (need_b ? SavesB : 0);
    Saver save;
    const NDArray sa = (saves & saved_names::a) != 0 ? save(a) : NDArray();
    const NDArray sb = (saves & saved_names::b) != 0 ? save(b) : NDArray();
    const NDArray sy = (saves & saved_names::y) != 0 ? save(out) : NDArray();
    const nd::Shape shape_a = a.shape(), shape_b = b.shape();
    record_node(ops::op_name(op), {a, b}, {&out}, save.take(),
                [rule_a, rule_b, need_a, need_b, sa, sb, sy, shape_a,
                 shape_b](const std::vector<NDArray>& grads) {
                  const NDArray& g = grads[0];
                  std::vector<NDArray> result(2);
                  if (need_a) {
                    result[0] = sum_to_shape(rule_a(g, saved_if<SavesA, saved_names::a>(sa),
                                                    saved_if<SavesA, saved_names::b>(sb),
                                                    saved_if<SavesA, saved_names::y>(sy)),
                                             shape_a);
                  }
                  if (need_b) {
                    result[1] = sum_to_shape(rule_b(g, saved_if<SavesB, saved_names::a>(sa),
                                                    saved_if<SavesB, saved_names::b>(sb),
                                                    saved_if<SavesB, saved_names::y>(sy)),
                                             shape_b);
                  }
                  return result;
                });
  }
}

// op(a, scalar) takes rule_a with b = scalar; op(scalar, a) takes rule_b with a = scalar (the
// array is then the rule's b).
template <unsigned SavesA, unsigned SavesB, class RuleA, class RuleB>
void record_binary_scalar_rule(BinaryOp op, const NDArray& array, double scalar, bool scalar_first,
                               NDArray& out, RuleA rule_a, RuleB rule_b) {
  if constexpr (has_gradient<RuleA, const NDArray&, Saved<SavesA, saved_names::a>,
                             Saved<SavesA, saved_names::b>, Saved<SavesA, saved_names::y>>) {
    if (!ops::is_floating(out.dtype()) || !needs_grad(array)) return;
    const unsigned array_bit = scalar_first ? saved_names::b : saved_names::a;
    const unsigned saves = scalar_first ? SavesB : SavesA;
    Saver save;
    const NDArray saved = (saves & array_bit) != 0 ? save(array) : NDArray();
    const NDArray sy = (saves & saved_names::y) != 0 ? save(out) : NDArray();
    record_node(ops::op_name(op), {array}, {&out}, save.take(),
                [rule_a, rule_b, scalar, scalar_first, saved, sy](const std::vector<NDArray>& g) {
                  if (scalar_first) {
                    return std::vector<NDArray>{rule_b(g[0], scalar,
                                                       saved_if<SavesB, saved_names::b>(saved),
                                                       saved_if<SavesB, saved_names::y>(sy))};
                  }
                  return std::vector<NDArray>{rule_a(g[0], saved_if<SavesA, saved_names::a>(saved),
                                                     scalar, saved_if<SavesA, saved_names::y>(sy))};
                });
  }
}

}  // namespace

// One case per row: the row's expression becomes a generic lambda over (g, x, y) or
// (g, a, b, y), called with the saved arrays it declared and NotSaved for the others.
void record_unary(UnaryOp op, const NDArray& x, NDArray& out) {
  switch (op) {
#define TANDEM_UNARY_GRADIENT(name, Functor, dtypes, flops, saves, gradient)  \
  case UnaryOp::name: {                                                       \
    constexpr unsigned mask = unary_saves<UnaryOp::name>;                     \
    return record_unary_rule<mask>(                                           \
        op, x, out,                                                           \
        []([[maybe_unused]] const NDArray& g, [[maybe_unused]] const auto& x, \
           [[maybe_unused]] const auto& y) { return gradient; });             \
  }
    TANDEM_UNARY_OPS(TANDEM_UNARY_GRADIENT)
#undef TANDEM_UNARY_GRADIENT
  }
}

#define TANDEM_BINARY_RULES(name, gradient_a, gradient_b)                             \
  constexpr unsigned mask_a = binary_saves_a<BinaryOp::name>;                         \
  constexpr unsigned mask_b = binary_saves_b<BinaryOp::name>;                         \
  auto rule_a = []([[maybe_unused]] const NDArray& g, [[maybe_unused]] const auto& a, \
                   [[maybe_unused]] const auto& b,                                    \
                   [[maybe_unused]] const auto& y) { return gradient_a; };            \
  auto rule_b = []([[maybe_unused]] const NDArray& g, [[maybe_unused]] const auto& a, \
                   [[maybe_unused]] const auto& b,                                    \
                   [[maybe_unused]] const auto& y) { return gradient_b; };

void record_binary(BinaryOp op, const NDArray& a, const NDArray& b, NDArray& out) {
  switch (op) {
#define TANDEM_BINARY_GRADIENT(name, Functor, dtypes, flops, saves_a, gradient_a, saves_b, \
                               gradient_b)                                                 \
  case BinaryOp::name: {                                                                   \
    TANDEM_BINARY_RULES(name, gradient_a, gradient_b)                                      \
    return record_binary_rule<mask_a, mask_b>(op, a, b, out, rule_a, rule_b);              \
  }
    TANDEM_BINARY_OPS(TANDEM_BINARY_GRADIENT)
#undef TANDEM_BINARY_GRADIENT
  }
}

void record_binary_scalar(BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                          NDArray& out) {
  switch (op) {
#define TANDEM_BINARY_GRADIENT(name, Functor, dtypes, flops, saves_a, gradient_a, saves_b,     \
                               gradient_b)                                                     \
  case BinaryOp::name: {                                                                       \
    TANDEM_BINARY_RULES(name, gradient_a, gradient_b)                                          \
    return record_binary_scalar_rule<mask_a, mask_b>(op, a, scalar, scalar_first, out, rule_a, \
                                                     rule_b);                                  \
  }
    TANDEM_BINARY_OPS(TANDEM_BINARY_GRADIENT)
#undef TANDEM_BINARY_GRADIENT
  }
}

#undef TANDEM_BINARY_RULES
#undef TANDEM_SAVED_MASK

}  // namespace tandem::autograd::detail
