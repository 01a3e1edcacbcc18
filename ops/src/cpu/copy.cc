// Copy, fill and arange on the CPU. A copy converts between any two dtypes element by element
// (see tandem/ops/convert.h); a dense same-dtype copy is a memcpy per block.
#include "tandem/ops/cpu/copy.h"

#include <cstring>

#include "common/strided_loop.h"
#include "parallel.h"
#include "tandem/ops/convert.h"

namespace tandem::ops::cpu {

namespace {

template <class To, class From>
void copy_typed(const ArrayView& in, const ArrayView& out) {
  const auto layout = make_layout<2>(out.shape, {&in.strides, &out.strides});
  const From* src = in.typed<const From>();
  To* dst = out.typed<To>();
  const std::int64_t si = layout.inner_stride(0), so = layout.inner_stride(1);
  parallel_blocks(layout.num_elements(), kElementwiseBlock,
                  [&](std::int64_t, std::int64_t begin, std::int64_t end) {
                    for_each_run(layout, begin, end, [&](const auto& off, std::int64_t n) {
                      const From* s = src + off[0];
                      To* d = dst + off[1];
                      if constexpr (std::is_same_v<To, From>) {
                        if (si == 1 && so == 1) {
                          std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(To));
                          return;
                        }
                      }
                      if (si == 1 && so == 1) {
                        for (std::int64_t i = 0; i < n; ++i) d[i] = convert<To>(s[i]);
                      } else {
                        for (std::int64_t i = 0; i < n; ++i) d[i * so] = convert<To>(s[i * si]);
                      }
                    });
                  });
}

}  // namespace

void copy(const ArrayView& in, const ArrayView& out) {
  dispatch_storage_dtype(out.dtype, [&]<class To>(To) {
    dispatch_storage_dtype(in.dtype, [&]<class From>(From) { copy_typed<To, From>(in, out); });
  });
}

void fill(const ArrayView& out, double value) {
  dispatch_storage_dtype(out.dtype, [&]<class T>(T) {
    T v = convert<T>(value);
    copy_typed<T, T>(ArrayView{&v, out.dtype, out.shape, {}}, out);
  });
}

void arange(const ArrayView& out, double start, double step) {
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    const auto layout = make_layout<1>(out.shape, {&out.strides});
    T* dst = out.typed<T>();
    const std::int64_t so = layout.inner_stride(0);
    parallel_blocks(layout.num_elements(), kElementwiseBlock,
                    [&](std::int64_t, std::int64_t begin, std::int64_t end) {
                      std::int64_t index = begin;
                      for_each_run(layout, begin, end, [&](const auto& off, std::int64_t n) {
                        for (std::int64_t i = 0; i < n; ++i, ++index) {
                          dst[off[0] + i * so] =
                              convert<T>(start + static_cast<double>(index) * step);
                        }
                      });
                    });
  });
}

void where(const ArrayView& condition, const ArrayView& a, const ArrayView& b,
           const ArrayView& out) {
  const auto layout =
      make_layout<4>(out.shape, {&condition.strides, &a.strides, &b.strides, &out.strides});
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    dispatch_dtype(condition.dtype, [&]<class C>(C) {
      const C* pc = condition.typed<const C>();
      const T* pa = a.typed<const T>();
      const T* pb = b.typed<const T>();
      T* po = out.typed<T>();
      const std::int64_t sc = layout.inner_stride(0), sa = layout.inner_stride(1),
                         sb = layout.inner_stride(2), so = layout.inner_stride(3);
      parallel_blocks(layout.num_elements(), kElementwiseBlock,
                      [&](std::int64_t, std::int64_t begin, std::int64_t end) {
                        for_each_run(layout, begin, end, [&](const auto& off, std::int64_t n) {
                          for (std::int64_t i = 0; i < n; ++i) {
                            po[off[3] + i * so] = convert<double>(pc[off[0] + i * sc]) != 0.0
                                                      ? pa[off[1] + i * sa]
                                                      : pb[off[2] + i * sb];
                          }
                        });
                      });
    });
  });
}

}  // namespace tandem::ops::cpu
