// Helpers shared by the front-end tests: host-side reference arrays ("Host") and the obvious
// reference implementations the tests compare NDArray results against.
#pragma once

#include <doctest/doctest.h>

#include <tandem/tandem.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace tandem::testing {

namespace nd = tandem::nd;
using nd::DType;
using nd::NDArray;
using nd::Shape;

// The message of the tandem::Error that `body` throws; fails the test when it throws none.
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("no tandem::Error was thrown");
  return {};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `call`, expects a tandem::Error whose message contains every one of `parts`.
template <class Call>
void check_error(Call&& call, std::initializer_list<std::string> parts) {
  try {
    call();
    FAIL("no tandem::Error was thrown; expected one mentioning " << *parts.begin());
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      INFO("message: " << message);
      CHECK_MESSAGE(message.find(part) != std::string::npos, "missing \"" << part << "\"");
    }
  }
}

// An op that writes `writes` and holds them until open(): nothing that reads or writes them runs
// before. Going out of scope opens it, so that a failed check leaves no engine op blocked.
class Gate {
 public:
  Gate(Engine& engine, VarList writes) {
    const std::shared_future<void> opened = opening_.get_future().share();
    engine.push([opened] { opened.wait(); }, cpu(), {}, writes, {.name = "gate"});
  }
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void open() {
    if (!opened_) opening_.set_value();
    opened_ = true;
  }

 private:
  std::promise<void> opening_;
  bool opened_ = false;
};

// TANDEM_TEST_SCALE (default 1) shrinks the large cases, e.g. 0.05 under sanitizers.
inline double test_scale() {
  const char* text = std::getenv("TANDEM_TEST_SCALE");
  const double scale = text != nullptr ? std::atof(text) : 1.0;
  return scale > 0 ? scale : 1.0;
}
inline std::int64_t scaled(std::int64_t n, std::int64_t at_least = 1) {
  return std::max(at_least, static_cast<std::int64_t>(static_cast<double>(n) * test_scale()));
}

// A row-major host array of doubles: the reference side of every comparison.
struct Host {
  Shape shape;
  std::vector<double> values;

  double at(std::int64_t i) const { return values[static_cast<std::size_t>(i)]; }
};

inline Host host_of(const NDArray& array) {
  return Host{array.shape(), array.to_vector<double>()};
}

inline std::vector<std::int64_t> unravel(std::int64_t index, const Shape& shape) {
  std::vector<std::int64_t> multi(static_cast<std::size_t>(shape.ndim()));
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    multi[static_cast<std::size_t>(i)] = index % shape[i];
    index /= shape[i];
  }
  return multi;
}

inline std::int64_t ravel(const std::vector<std::int64_t>& multi, const Shape& shape) {
  std::int64_t index = 0;
  for (int i = 0; i < shape.ndim(); ++i)
    index = index * shape[i] + multi[static_cast<std::size_t>(i)];
  return index;
}

// Random values; integral ones (as doubles) for integer dtypes.
inline Host random_host(const Shape& shape, std::mt19937_64& rng, double low = -2.0,
                        double high = 2.0, bool integral = false) {
  Host host{shape, std::vector<double>(static_cast<std::size_t>(shape.num_elements()))};
  std::uniform_real_distribution<double> real(low, high);
  std::uniform_int_distribution<int> integer(static_cast<int>(low), static_cast<int>(high));
  for (double& v : host.values) v = integral ? integer(rng) : real(rng);
  return host;
}

// An NDArray of `dtype` holding the host values (converted).
inline NDArray to_array(const Host& host, DType dtype) {
  switch (dtype) {
    case DType::float32:
      return nd::from_vector(std::vector<float>(host.values.begin(), host.values.end()),
                             host.shape);
    case DType::float64:
      return nd::from_vector(host.values, host.shape);
    case DType::int32: {
      std::vector<std::int32_t> v;
      for (double x : host.values) v.push_back(static_cast<std::int32_t>(x));
      return nd::from_vector(v, host.shape);
    }
    case DType::uint8: {
      std::vector<std::uint8_t> v;
      for (double x : host.values) v.push_back(static_cast<std::uint8_t>(x));
      return nd::from_vector(v, host.shape);
    }
    case DType::int64:
      break;
  }
  std::vector<std::int64_t> v;
  for (double x : host.values) v.push_back(static_cast<std::int64_t>(x));
  return nd::from_vector(v, host.shape);
}

// Host versions of the views.
inline Host host_slice(const Host& h, std::int64_t begin, std::int64_t end, std::int64_t step) {
  Host out{h.shape, {}};
  const std::int64_t row = h.shape.num_elements() / std::max<std::int64_t>(1, h.shape[0]);
  std::int64_t rows = 0;
  for (std::int64_t r = begin; r < end; r += step, ++rows) {
    for (std::int64_t j = 0; j < row; ++j) out.values.push_back(h.at(r * row + j));
  }
  out.shape[0] = rows;
  return out;
}

inline Host host_transpose(const Host& h) {
  Shape shape;
  for (int i = h.shape.ndim() - 1; i >= 0; --i) shape.push_back(h.shape[i]);
  Host out{shape, std::vector<double>(h.values.size())};
  for (std::int64_t i = 0; i < shape.num_elements(); ++i) {
    auto multi = unravel(i, shape);
    std::reverse(multi.begin(), multi.end());
    out.values[static_cast<std::size_t>(i)] = h.at(ravel(multi, h.shape));
  }
  return out;
}

inline Shape host_broadcast_shape(const Shape& a, const Shape& b) {
  const int ndim = std::max(a.ndim(), b.ndim());
  Shape out;
  for (int i = 0; i < ndim; ++i) {
    const int ia = i - (ndim - a.ndim()), ib = i - (ndim - b.ndim());
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

// The element of `h` that broadcasting maps to multi-index `multi` of shape `to`.
inline double broadcast_at(const Host& h, const std::vector<std::int64_t>& multi, const Shape& to) {
  std::vector<std::int64_t> source(static_cast<std::size_t>(h.shape.ndim()));
  const int pad = to.ndim() - h.shape.ndim();
  for (int i = 0; i < h.shape.ndim(); ++i) {
    source[static_cast<std::size_t>(i)] =
        h.shape[i] == 1 ? 0 : multi[static_cast<std::size_t>(i + pad)];
  }
  return h.at(ravel(source, h.shape));
}

inline Host host_binary(const Host& a, const Host& b,
                        const std::function<double(double, double)>& f) {
  const Shape shape = host_broadcast_shape(a.shape, b.shape);
  Host out{shape, std::vector<double>(static_cast<std::size_t>(shape.num_elements()))};
  for (std::int64_t i = 0; i < shape.num_elements(); ++i) {
    const auto multi = unravel(i, shape);
    out.values[static_cast<std::size_t>(i)] =
        f(broadcast_at(a, multi, shape), broadcast_at(b, multi, shape));
  }
  return out;
}

inline Host host_unary(const Host& a, const std::function<double(double)>& f) {
  Host out = a;
  for (double& v : out.values) v = f(v);
  return out;
}

// Values to the precision of `dtype`, as the array would hold them.
inline double round_to(double v, DType dtype) {
  switch (dtype) {
    case DType::float32:
      return static_cast<float>(v);
    case DType::float64:
      return v;
    case DType::int32:
      return static_cast<double>(static_cast<std::int32_t>(v));
    case DType::uint8:
      return static_cast<double>(static_cast<std::uint8_t>(v));
    case DType::int64:
      break;
  }
  return static_cast<double>(static_cast<std::int64_t>(v));
}

inline bool close(double actual, double expected, DType dtype) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  if (!ops::is_floating(dtype)) return actual == expected;
  const double tolerance = dtype == DType::float32 ? 2e-5 : 1e-12;
  return std::fabs(actual - expected) <= tolerance * std::max(1.0, std::fabs(expected));
}

// CHECKs shape and every value of `actual` against `expected`.
inline void check_matches(const NDArray& actual, const Host& expected, const std::string& what) {
  INFO(what);
  REQUIRE(actual.shape().to_string() == expected.shape.to_string());
  const auto values = actual.to_vector<double>();
  int reported = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!close(values[i], expected.values[i], actual.dtype())) {
      if (reported++ < 5) {
        FAIL_CHECK("element " << i << ": got " << values[i] << ", expected " << expected.values[i]);
      }
    }
  }
  CHECK(reported == 0);
}

}  // namespace tandem::testing
