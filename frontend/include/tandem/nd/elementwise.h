// Element-wise arithmetic with NumPy broadcasting, clip and where.
//
//   auto x = nd::ones({2, 3});
//   auto b = nd::arange(3);                 // shape 3, broadcast along the rows
//   auto y = nd::exp(x * 2 + b) / 4;
//   auto m = nd::maximum(y, 0.5);           // element-wise max with a scalar
//   auto g = y > 1.0;                       // comparisons give 1 or 0 in y's dtype
//   x += b;                                 // in place: an op that writes x
//
// Inputs must share device and dtype (tandem::Error at the call otherwise, naming both); the
// result has their dtype. A scalar is converted to the array's dtype. Integer arithmetic wraps
// around and integer division truncates toward zero; dividing an integer array by a zero
// element is an error of the op, thrown at the next sync point on the result. exp, log, log1p,
// sqrt, sigmoid, tanh and power need floating-point arrays.
#pragma once

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

NDArray add(const NDArray& a, const NDArray& b);
NDArray subtract(const NDArray& a, const NDArray& b);
NDArray multiply(const NDArray& a, const NDArray& b);
NDArray divide(const NDArray& a, const NDArray& b);
NDArray maximum(const NDArray& a, const NDArray& b);
NDArray minimum(const NDArray& a, const NDArray& b);
NDArray power(const NDArray& a, const NDArray& b);
NDArray maximum(const NDArray& a, double b);
NDArray minimum(const NDArray& a, double b);
// Each element bounded to [lo, hi]: minimum(maximum(x, lo), hi), with that gradient (1 inside
// the bounds and on them, 0 outside). tandem::Error when lo > hi.
NDArray clip(const NDArray& x, double lo, double hi);
// a where condition is nonzero, else b: condition, a and b broadcast together; a and b share
// dtype (the result's), condition may have any other compute dtype (none of the three uint8:
// tandem::Error at the call); all on one device. Differentiable in a
// and b (the gradient goes to the branch taken), exportable; values of the branch not taken
// never reach the result (where(x > 0, log(x), 0) has no NaN).
NDArray where(const NDArray& condition, const NDArray& a, const NDArray& b);
NDArray where(const NDArray& condition, const NDArray& a, double b);
NDArray power(const NDArray& a, double b);
NDArray equal(const NDArray& a, const NDArray& b);
NDArray not_equal(const NDArray& a, const NDArray& b);
NDArray greater(const NDArray& a, const NDArray& b);
NDArray greater_equal(const NDArray& a, const NDArray& b);
NDArray less(const NDArray& a, const NDArray& b);
NDArray less_equal(const NDArray& a, const NDArray& b);

NDArray negative(const NDArray& x);
NDArray abs(const NDArray& x);
NDArray square(const NDArray& x);
NDArray relu(const NDArray& x);
// relu's gradient as one op: dy where x > 0, else 0 (dy * (x > 0), the same bits), as
// MXNet's _backward_relu. What relu's gradient rule queues.
NDArray relu_backward(const NDArray& dy, const NDArray& x);
NDArray exp(const NDArray& x);
NDArray log(const NDArray& x);
NDArray log1p(const NDArray& x);  // log(1 + x), accurate for small x
NDArray sqrt(const NDArray& x);
NDArray sigmoid(const NDArray& x);
NDArray tanh(const NDArray& x);

NDArray operator+(const NDArray& a, const NDArray& b);
NDArray operator-(const NDArray& a, const NDArray& b);
NDArray operator*(const NDArray& a, const NDArray& b);
NDArray operator/(const NDArray& a, const NDArray& b);
NDArray operator+(const NDArray& a, double b);
NDArray operator-(const NDArray& a, double b);
NDArray operator*(const NDArray& a, double b);
NDArray operator/(const NDArray& a, double b);
NDArray operator+(double a, const NDArray& b);
NDArray operator-(double a, const NDArray& b);
NDArray operator*(double a, const NDArray& b);
NDArray operator/(double a, const NDArray& b);
NDArray operator-(const NDArray& x);

// Comparisons return arrays of 1 and 0 (not bool): nd::sum(x > 0) counts positives.
NDArray operator==(const NDArray& a, const NDArray& b);
NDArray operator!=(const NDArray& a, const NDArray& b);
NDArray operator<(const NDArray& a, const NDArray& b);
NDArray operator<=(const NDArray& a, const NDArray& b);
NDArray operator>(const NDArray& a, const NDArray& b);
NDArray operator>=(const NDArray& a, const NDArray& b);
NDArray operator==(const NDArray& a, double b);
NDArray operator!=(const NDArray& a, double b);
NDArray operator<(const NDArray& a, double b);
NDArray operator<=(const NDArray& a, double b);
NDArray operator>(const NDArray& a, double b);
NDArray operator>=(const NDArray& a, double b);

}  // namespace tandem::nd
