// The reductions: TANDEM_REDUCE_OPS, the list the ReduceOp enum, names, dtype rules and sim
// cost are generated from (op_kinds.h). The reducers themselves are per backend
// (ops/src/cpu/reducers.h, ops/cuda/reduce.cu): a reduction's accumulator, merge order and
// index tracking differ between a oneTBB tree and a CUB block reduction.
//
// A row is X(name, dtypes, result, empty_ok): `dtypes` is `any` or `floating`; `result` is
// `same` (the input's dtype) or `int64` (argmax's indices); `empty_ok` says whether zero
// elements reduce to a value (sum: 0, norm: 0) or are an error (mean, max, ...).
#pragma once

// clang-format off
#define TANDEM_REDUCE_OPS(X)               \
  X(sum,    any,      same,  true)         \
  X(mean,   any,      same,  false)        \
  X(max,    any,      same,  false)        \
  X(min,    any,      same,  false)        \
  X(argmax, any,      int64, false)        \
  X(norm,   floating, same,  true)
// clang-format on
