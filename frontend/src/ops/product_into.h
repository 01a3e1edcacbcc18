// A matrix product written into an existing array: what lets a gradient rule put a weight
// gradient straight into the parameter's gradient buffer (autograd/backward.cc) instead of
// forming it in a fresh array and copying or adding it there afterwards.
#pragma once

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// Queues out = a . b, or out += a . b when `accumulate` (one gemm with beta = 1: no temporary
// of out's size, no separate add), for 2-D a (m x k), b (k x n) and out (m x n) of one dtype on
// one device and engine. out must be dense, or the transpose of a dense array (the gradient
// buffer of a weight used as w.T()): then the product is formed transposed, out^T = b^T . a^T.
// Returns false and queues nothing when out has another layout or the arrays do not fit these
// terms, so that the caller can take the ordinary path. Not recorded by autograd.
bool push_product_into(const NDArray& a, const NDArray& b, const NDArray& out, bool accumulate);

}  // namespace tandem::nd::detail
