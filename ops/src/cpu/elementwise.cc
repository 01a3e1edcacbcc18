// Element-wise CPU kernels. Each public function resolves (op, dtype) to a functor and a C++
// type once, then walks the operands with for_each_run in parallel blocks; the innermost loops
// below have stride-1 and stride-0 fast paths that the compiler vectorizes.
#include "tandem/ops/cpu/elementwise.h"

#include <string>
#include <type_traits>

#include "common/functor_dispatch.h"
#include "common/strided_loop.h"
#include "parallel.h"
#include "tandem/errors.h"
#include "tandem/ops/convert.h"

namespace tandem::ops::cpu {

namespace {

template <class T, class F>
void unary_run(F f, const T* in, std::int64_t si, T* out, std::int64_t so, std::int64_t n) {
  if (si == 1 && so == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i * so] = f(in[i * si]);
  }
}

template <class T, class F>
void binary_run(F f, const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* out,
                std::int64_t so, std::int64_t n) {
  if (so == 1 && sa == 1 && sb == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (so == 1 && sa == 1 && sb == 0) {
    const T bv = *b;
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (so == 1 && sa == 0 && sb == 1) {
    const T av = *a;
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i * so] = f(a[i * sa], b[i * sb]);
  }
}

template <class T, class F>
void unary_typed(F f, const ArrayView& in, const ArrayView& out) {
  const auto layout = make_layout<2>(out.shape, {&in.strides, &out.strides});
  const T* src = in.typed<const T>();
  T* dst = out.typed<T>();
  const std::int64_t si = layout.inner_stride(0), so = layout.inner_stride(1);
  parallel_blocks(layout.num_elements(), kElementwiseBlock,
                  [&](std::int64_t, std::int64_t begin, std::int64_t end) {
                    for_each_run(layout, begin, end, [&](const auto& off, std::int64_t n) {
                      unary_run(f, src + off[0], si, dst + off[1], so, n);
                    });
                  });
}

template <class T, class F>
void binary_typed(F f, const ArrayView& a, const ArrayView& b, const ArrayView& out) {
  const auto layout = make_layout<3>(out.shape, {&a.strides, &b.strides, &out.strides});
  const T* pa = a.typed<const T>();
  const T* pb = b.typed<const T>();
  T* dst = out.typed<T>();
  const std::int64_t sa = layout.inner_stride(0), sb = layout.inner_stride(1),
                     so = layout.inner_stride(2);
  parallel_blocks(layout.num_elements(), kElementwiseBlock,
                  [&](std::int64_t, std::int64_t begin, std::int64_t end) {
                    for_each_run(layout, begin, end, [&](const auto& off, std::int64_t n) {
                      binary_run(f, pa + off[0], sa, pb + off[1], sb, dst + off[2], so, n);
                    });
                  });
}

// Integer division: a zero divisor is an error of the op, reported at the next sync point.
template <class T>
void check_no_zero_divisor(const ArrayView& divisor) {
  if constexpr (std::is_integral_v<T>) {
    const auto layout = make_layout<1>(divisor.shape, {&divisor.strides});
    const T* p = divisor.typed<const T>();
    const std::int64_t s = layout.inner_stride(0);
    bool zero = false;
    for_each_run(layout, 0, layout.num_elements(), [&](const auto& off, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) zero = zero || p[off[0] + i * s] == T(0);
    });
    if (zero) {
      throw Error(std::string("tandem: divide: integer division by zero (") +
                  dtype_name(divisor.dtype) + " divisor of shape " + divisor.shape.to_string() +
                  " holds a 0)");
    }
  }
}

}  // namespace

void unary(UnaryOp op, const ArrayView& in, const ArrayView& out) {
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    dispatch_unary(op, [&]<class F>(F f) {
      if constexpr (functor_defined_for<T, F>()) {
        unary_typed<T>(f, in, out);
      } else {
        unsupported_dtype(op_name(op), out.dtype);
      }
    });
  });
}

void binary(BinaryOp op, const ArrayView& a, const ArrayView& b, const ArrayView& out) {
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    if (op == BinaryOp::divide) check_no_zero_divisor<T>(b);
    dispatch_binary(op, [&]<class F>(F f) {
      if constexpr (functor_defined_for<T, F>()) {
        binary_typed<T>(f, a, b, out);
      } else {
        unsupported_dtype(op_name(op), out.dtype);
      }
    });
  });
}

void binary_scalar(BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
                   const ArrayView& out) {
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    // The scalar is a broadcast 0-d operand: stride 0 everywhere.
    T value = convert<T>(scalar);
    ArrayView s{&value, out.dtype, out.shape, {}};
    if (op == BinaryOp::divide && !scalar_first) check_no_zero_divisor<T>(s);
    if (op == BinaryOp::divide && scalar_first) check_no_zero_divisor<T>(a);
    dispatch_binary(op, [&]<class F>(F f) {
      if constexpr (functor_defined_for<T, F>()) {
        if (scalar_first) {
          binary_typed<T>(f, s, a, out);
        } else {
          binary_typed<T>(f, a, s, out);
        }
      } else {
        unsupported_dtype(op_name(op), out.dtype);
      }
    });
  });
}

void unary_dense(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n) {
  const Shape shape{n};
  unary(op, contiguous_view(const_cast<void*>(in), dtype, shape),
        contiguous_view(out, dtype, shape));
}

void binary_dense(BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                  std::int64_t n) {
  const Shape shape{n};
  binary(op, contiguous_view(const_cast<void*>(a), dtype, shape),
         contiguous_view(const_cast<void*>(b), dtype, shape), contiguous_view(out, dtype, shape));
}

void binary_scalar_dense(BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first,
                         void* out, std::int64_t n) {
  const Shape shape{n};
  binary_scalar(op, contiguous_view(const_cast<void*>(a), dtype, shape), scalar, scalar_first,
                contiguous_view(out, dtype, shape));
}

}  // namespace tandem::ops::cpu
