// The instructions of tandem_fuzz_ops' programs (op_steps.h): each one printed and run by one
// function, `step`, which works out the instruction's arguments once, writes the statement, and
// runs it when given a state. So the text printed for a failure is the program that ran.
#include "op_steps.h"

#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace tandem::fuzz::detail {

namespace nd = tandem::nd;
using nd::NDArray;

namespace {

const Device kDevices[] = {cpu(), sim(0), sim(1)};
const char* const kDeviceText[] = {"cpu()", "sim(0)", "sim(1)"};
const nd::DType kDTypes[] = {nd::float32, nd::float64, nd::int32, nd::int64, nd::uint8};
const char* const kDTypeText[] = {"nd::float32", "nd::float64", "nd::int32", "nd::int64",
                                  "nd::uint8"};
// Small shapes that broadcast with each other now and then, an empty one, and a big one whose
// ops take the kernels' parallel paths (and are still running when the next op is pushed).
const nd::Shape kShapes[] = {{6},    {2, 3}, {3, 2},     {3},   {1},    {2, 1, 3}, {3, 4}, {4, 3},
                             {0, 3}, {2, 3}, {256, 160}, {160}, {1, 6}, {6},       {3},    {2, 3}};
const double kValues[] = {0, 1, -1, 0.5, 2, 3, -2.5, 1e30};
const std::int64_t kIndices[] = {0, 1, -1, 2, 5, -7, 100};

std::string shape_text(const nd::Shape& shape) {
  std::string text = "{";
  for (int i = 0; i < shape.ndim(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "}";
}

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

std::string describe(const NDArray& array) {
  if (!array.defined()) return "null";
  return array.shape().to_string() + " " + nd::dtype_name(array.dtype()) + " @" +
         to_string(array.device());
}

std::uint64_t fnv1a(const unsigned char* bytes, std::size_t n) {
  std::uint64_t hash = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

template <class T>
std::string element_text(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    char buffer[48];
    if (std::isnan(value)) {
      // The bits, so two NaNs that differ are told apart.
      std::uint64_t bits = 0;
      std::memcpy(&bits, &value, sizeof value);
      std::snprintf(buffer, sizeof buffer, "nan:%" PRIx64, bits);
    } else {
      std::snprintf(buffer, sizeof buffer, "%a", static_cast<double>(value));
    }
    return buffer;
  } else {
    return std::to_string(static_cast<std::int64_t>(value));
  }
}

// The values bit for bit: each element for small arrays, a hash of the bytes and the first
// elements for big ones.
template <class T>
std::string values_text(const NDArray& array) {
  const std::vector<T> values = array.to_vector<T>();
  std::string text = describe(array) + ":";
  const std::size_t shown = values.size() <= 64 ? values.size() : 4;
  for (std::size_t i = 0; i < shown; ++i) text += " " + element_text(values[i]);
  if (shown < values.size()) {
    char buffer[64];
    std::snprintf(
        buffer, sizeof buffer, " ... (fnv1a %016" PRIx64 ")",
        fnv1a(reinterpret_cast<const unsigned char*>(values.data()), values.size() * sizeof(T)));
    text += buffer;
  }
  return text;
}

}  // namespace

std::string read_values(const NDArray& array) {
  switch (array.dtype()) {
    case nd::DType::float32:
      return values_text<float>(array);
    case nd::DType::float64:
      return values_text<double>(array);
    case nd::DType::int32:
      return values_text<std::int32_t>(array);
    case nd::DType::int64:
      return values_text<std::int64_t>(array);
    case nd::DType::uint8:
      return values_text<std::uint8_t>(array);
  }
  return "?";
}

const char* op_name(Opcode op) {
  static const char* const kNames[] = {"create", "unary",  "binary",    "scalar",    "dot",
                                       "reduce", "view",   "to_device", "copy_into", "in_place",
                                       "take",   "astype", "join",      "where",     "wait",
                                       "read",   "drop",   "engine",    "random"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(Opcode::count));
  return kNames[static_cast<std::size_t>(op)];
}

// Prints the instruction and, with a state, runs it. Returns the statement and, in `kind`, the
// instruction's variant (for the corpus' features).
std::string step(const Instruction& in, State* state, std::string& kind) {
  const int d = in.args[0] % kSlots, x = in.args[1] % kSlots, y = in.args[2] % kSlots;
  const std::uint8_t k = in.args[3], p = in.args[4];
  const std::string D = slot(d), X = slot(x), Y = slot(y);
  NDArray* s = state ? state->slots.data() : nullptr;
  // Assigns a new array to slot d and notes its type.
  const auto put = [&](NDArray array) {
    state->result = describe(array);
    s[d] = std::move(array);
  };
  switch (in.op) {
    case Opcode::create: {
      const int device = in.args[1] % 3, dtype = in.args[2] % 4, fill = k % 6;
      const nd::Shape& shape = kShapes[p % std::size(kShapes)];
      const double value = kValues[(k / 6) % std::size(kValues)];
      const auto start = -static_cast<double>((k / 6) % 8);
      const std::string args =
          shape_text(shape) + ", " + kDTypeText[dtype] + ", " + kDeviceText[device];
      static const char* const kFills[] = {"zeros", "ones", "full", "arange", "uniform", "normal"};
      kind = kFills[fill];
      std::string text;
      switch (fill) {
        case 0:
        case 1:
          text = std::string("nd::") + kind + "(" + args + ")";
          break;
        case 2:
          text = "nd::full(" + shape_text(shape) + ", " + number_text(value) + ", " +
                 kDTypeText[dtype] + ", " + kDeviceText[device] + ")";
          break;
        case 3:
          text = "nd::arange(" + number_text(start) + ", " +
                 number_text(start + static_cast<double>(shape.num_elements())) + ", 1, " +
                 kDTypeText[dtype] + ", " + kDeviceText[device] + ").reshape(" + shape_text(shape) +
                 ")";
          break;
        default:
          text = std::string("nd::random::") + kind + "(" + shape_text(shape) +
                 ", {.dtype = " + kDTypeText[dtype] + ", .device = " + kDeviceText[device] + "})";
      }
      if (state) {
        const Device where = kDevices[device];
        const nd::DType type = kDTypes[dtype];
        switch (fill) {
          case 0:
            put(nd::zeros(shape, type, where));
            break;
          case 1:
            put(nd::ones(shape, type, where));
            break;
          case 2:
            put(nd::full(shape, value, type, where));
            break;
          case 3:
            put(nd::arange(start, start + static_cast<double>(shape.num_elements()), 1, type, where)
                    .reshape(shape));
            break;
          case 4:
            put(nd::random::uniform(shape, {.dtype = type, .device = where}));
            break;
          default:
            put(nd::random::normal(shape, {.dtype = type, .device = where}));
        }
      }
      return D + " = " + text + ";";
    }
    case Opcode::unary: {
      static const char* const kNames[] = {"negative", "abs",  "square",  "relu", "exp",
                                           "log",      "sqrt", "sigmoid", "tanh", "log1p"};
      using Fn = NDArray (*)(const NDArray&);
      static const Fn kFns[] = {nd::negative, nd::abs,  nd::square,  nd::relu, nd::exp,
                                nd::log,      nd::sqrt, nd::sigmoid, nd::tanh, nd::log1p};
      const int f = k % 10;
      kind = kNames[f];
      if (state) put(kFns[f](s[x]));
      return D + " = nd::" + kind + "(" + X + ");";
    }
    case Opcode::binary: {
      static const char* const kNames[] = {"add",     "subtract", "multiply", "divide",
                                           "maximum", "minimum",  "power",    "equal",
                                           "greater", "less",     "not_equal"};
      using Fn = NDArray (*)(const NDArray&, const NDArray&);
      static const Fn kFns[] = {nd::add,     nd::subtract, nd::multiply, nd::divide,
                                nd::maximum, nd::minimum,  nd::power,    nd::equal,
                                nd::greater, nd::less,     nd::not_equal};
      const int f = k % 11;
      kind = kNames[f];
      if (state) put(kFns[f](s[x], s[y]));
      return D + " = nd::" + kind + "(" + X + ", " + Y + ");";
    }
    case Opcode::scalar: {
      const double v = kValues[p % std::size(kValues)];
      const std::string V = number_text(v);
      static const char* const kNames[] = {"x+v", "x-v", "x*v",  "x/v", "v-x",
                                           "max", "min", "clip", "x>v"};
      const int f = k % 9;
      kind = kNames[f];
      if (state) {
        switch (f) {
          case 0:
            put(s[x] + v);
            break;
          case 1:
            put(s[x] - v);
            break;
          case 2:
            put(s[x] * v);
            break;
          case 3:
            put(s[x] / v);
            break;
          case 4:
            put(v - s[x]);
            break;
          case 5:
            put(nd::maximum(s[x], v));
            break;
          case 6:
            put(nd::minimum(s[x], v));
            break;
          case 7:
            put(nd::clip(s[x], v, 1.0));
            break;
          default:
            put(s[x] > v);
        }
      }
      static const char* const kText[] = {"X + V",
                                          "X - V",
                                          "X * V",
                                          "X / V",
                                          "V - X",
                                          "nd::maximum(X, V)",
                                          "nd::minimum(X, V)",
                                          "nd::clip(X, V, 1)",
                                          "X > V"};
      std::string text = kText[f];
      text.replace(text.find('X'), 1, X);
      text.replace(text.find('V'), 1, V);
      return D + " = " + text + ";";
    }
    case Opcode::dot: {
      const bool tx = k & 1, ty = k & 2;
      kind = std::string(tx ? "T" : "") + "x" + (ty ? "T" : "");
      if (state) put(nd::dot(tx ? s[x].T() : s[x], ty ? s[y].T() : s[y]));
      return D + " = nd::dot(" + X + (tx ? ".T()" : "") + ", " + Y + (ty ? ".T()" : "") + ");";
    }
    case Opcode::reduce: {
      static const char* const kNames[] = {"sum", "mean", "max", "min", "argmax", "norm"};
      using Whole = NDArray (*)(const NDArray&);
      using Axis = NDArray (*)(const NDArray&, int, bool);
      static const Whole kWhole[] = {nd::sum, nd::mean, nd::max, nd::min, nd::argmax, nd::norm};
      static const Axis kAxis[] = {nd::sum, nd::mean, nd::max, nd::min, nd::argmax, nd::norm};
      const int f = k % 6;
      const int axes[] = {-100, 0, 1, 2, -1};  // -100: the whole array
      const int axis = axes[p % 5];
      const bool keepdims = (p / 5) % 2;
      kind = kNames[f] + std::string(axis == -100 ? "" : "(axis)");
      if (state) put(axis == -100 ? kWhole[f](s[x]) : kAxis[f](s[x], axis, keepdims));
      return D + " = nd::" + kNames[f] + "(" + X +
             (axis == -100 ? "" : ", " + std::to_string(axis) + (keepdims ? ", true" : ", false")) +
             ");";
    }
    case Opcode::view: {
      const int f = k % 6;
      const std::int64_t begin = p % 4 - 1, step = 1 + (p / 16) % 3;
      const std::int64_t ends[] = {-1, 2, 100, 0};
      const std::int64_t end = ends[(p / 4) % 4];
      static const std::vector<int> kAxes[] = {{1, 0}, {0, 1}, {2, 0, 1}, {0, 0}};
      const std::vector<int>& axes = kAxes[p % 4];
      const nd::Shape& shape = kShapes[p % std::size(kShapes)];
      static const char* const kNames[] = {"T",     "reshape(-1)", "reshape",
                                           "slice", "[i]",         "transpose(axes)"};
      kind = kNames[f];
      if (state) {
        switch (f) {
          case 0:
            put(s[x].T());
            break;
          case 1:
            put(s[x].reshape({-1}));
            break;
          case 2:
            put(s[x].reshape(shape));
            break;
          case 3:
            put(s[x].slice(begin, end, step));
            break;
          case 4:
            put(s[x][begin]);
            break;
          default:
            put(nd::transpose(s[x], axes));
        }
      }
      switch (f) {
        case 0:
          return D + " = " + X + ".T();";
        case 1:
          return D + " = " + X + ".reshape({-1});";
        case 2:
          return D + " = " + X + ".reshape(" + shape_text(shape) + ");";
        case 3:
          return D + " = " + X + ".slice(" + std::to_string(begin) + ", " + std::to_string(end) +
                 ", " + std::to_string(step) + ");";
        case 4:
          return D + " = " + X + "[" + std::to_string(begin) + "];";
        default: {
          std::string list;
          for (int a : axes) list += (list.empty() ? "" : ", ") + std::to_string(a);
          return D + " = nd::transpose(" + X + ", {" + list + "});";
        }
      }
    }
    case Opcode::to_device: {
      const int f = k % 3, device = p % 3;
      static const char* const kNames[] = {"copyto", "as_in_context", "copy"};
      kind = kNames[f];
      if (state) {
        put(f == 0   ? s[x].copyto(kDevices[device])
            : f == 1 ? s[x].as_in_context(kDevices[device])
                     : s[x].copy());
      }
      return D + " = " + X + "." + kind + "(" + (f == 2 ? "" : kDeviceText[device]) + ");";
    }
    case Opcode::copy_into: {
      const bool halves = k % 2;
      kind = halves ? "half into half" : "whole";
      if (!halves) {
        if (state) s[x].copyto(s[y]);
        return X + ".copyto(" + Y + ");";
      }
      if (state) {
        const std::int64_t h = s[y].ndim() > 0 ? s[y].shape()[0] / 2 : 0;
        s[x].slice(0, h).copyto(s[y].slice(h, 2 * h));
      }
      return "{ auto h = " + Y + ".shape()[0] / 2; " + X + ".slice(0, h).copyto(" + Y +
             ".slice(h, 2 * h)); }";
    }
    case Opcode::in_place: {
      const double v = kValues[p % std::size(kValues)];
      const std::string V = number_text(v);
      const int f = k % 10;
      static const char* const kText[] = {
          "D += Y", "D -= Y", "D *= Y",      "D /= Y",      "D += V",
          "D *= V", "D /= V", "D.assign(Y)", "D.assign(V)", "D.slice(1, -1).assign(Y)"};
      kind = kText[f];
      if (state) {
        NDArray& a = s[d];
        switch (f) {
          case 0:
            a += s[y];
            break;
          case 1:
            a -= s[y];
            break;
          case 2:
            a *= s[y];
            break;
          case 3:
            a /= s[y];
            break;
          case 4:
            a += v;
            break;
          case 5:
            a *= v;
            break;
          case 6:
            a /= v;
            break;
          case 7:
            a.assign(s[y]);
            break;
          case 8:
            a.assign(v);
            break;
          default:
            a.slice(1, -1).assign(s[y]);
        }
        state->result = describe(a);
      }
      std::string text = kText[f];
      text.replace(text.find('D'), 1, D);
      if (text.find('Y') != std::string::npos) text.replace(text.find('Y'), 1, Y);
      if (text.find('V') != std::string::npos) text.replace(text.find('V'), 1, V);
      return text + ";";
    }
    case Opcode::take: {
      const bool int32 = k % 2, on_cpu = (k / 6) % 2;
      const int axes[] = {0, 1, -1};
      const int axis = axes[(k / 2) % 3];
      const std::int64_t i0 = kIndices[p % 7], i1 = kIndices[(p / 7) % 7];
      kind = std::string(int32 ? "int32" : "int64") + (on_cpu ? " on cpu" : "");
      if (state) {
        const Device where = on_cpu || !s[x].defined() ? cpu() : s[x].device();
        const NDArray indices =
            int32 ? nd::from_vector(std::vector<std::int32_t>{static_cast<std::int32_t>(i0),
                                                              static_cast<std::int32_t>(i1)},
                                    where)
                  : nd::from_vector(std::vector<std::int64_t>{i0, i1}, where);
        put(nd::take(s[x], indices, axis));
      }
      return D + " = nd::take(" + X + ", nd::from_vector(std::vector<" +
             (int32 ? "std::int32_t" : "std::int64_t") + ">{" + std::to_string(i0) + ", " +
             std::to_string(i1) + "}, " + (on_cpu ? "cpu()" : X + ".device()") + "), " +
             std::to_string(axis) + ");";
    }
    case Opcode::astype: {
      const int dtype = p % 5;
      kind = kDTypeText[dtype];
      if (state) put(s[x].astype(kDTypes[dtype]));
      return D + " = " + X + ".astype(" + kDTypeText[dtype] + ");";
    }
    case Opcode::join: {
      const int f = k % 3, axis = p % 3 - 1, sections = 1 + (p / 3) % 3;
      static const char* const kNames[] = {"concat", "stack", "split"};
      kind = kNames[f];
      if (state) {
        if (f == 0) put(nd::concat({s[x], s[y]}, axis));
        if (f == 1) put(nd::stack({s[x], s[y]}, axis));
        if (f == 2) put(nd::split(s[x], sections, axis).back());
      }
      if (f == 2) {
        return D + " = nd::split(" + X + ", " + std::to_string(sections) + ", " +
               std::to_string(axis) + ").back();";
      }
      return D + " = nd::" + kind + "({" + X + ", " + Y + "}, " + std::to_string(axis) + ");";
    }
    case Opcode::where: {
      const int z = k % kSlots;
      const bool scalar = (k / kSlots) % 2;
      const double v = kValues[p % std::size(kValues)];
      kind = scalar ? "scalar" : "arrays";
      if (state) put(scalar ? nd::where(s[x], s[y], v) : nd::where(s[x], s[y], s[z]));
      return D + " = nd::where(" + X + ", " + Y + ", " + (scalar ? number_text(v) : slot(z)) + ");";
    }
    case Opcode::wait: {
      const int f = k % 4;
      static const char* const kText[] = {".wait_to_read()", ".wait_to_write()", "nd::waitall()",
                                          ".wait_to_read(std::chrono::seconds(60))"};
      static const char* const kNames[] = {"wait_to_read", "wait_to_write", "waitall",
                                           "wait_to_read(timeout)"};
      kind = kNames[f];
      if (state) {
        if (f == 0) s[x].wait_to_read();
        if (f == 1) s[x].wait_to_write();
        if (f == 2) nd::waitall();
        if (f == 3) s[x].wait_to_read(std::chrono::seconds(60));
      }
      return f == 2 ? "nd::waitall();" : X + kText[f] + ";";
    }
    case Opcode::read: {
      const int f = k % 3;
      static const char* const kText[] = {"read(X);  // to_vector", "X.scalar<double>();",
                                          "std::cout << X;"};
      kind = f == 0 ? "to_vector" : f == 1 ? "scalar" : "print";
      if (state) {
        if (f == 0) state->result = read_values(s[x]);
        if (f == 1) state->result = element_text(s[x].scalar<double>());
        if (f == 2) {
          std::ostringstream out;
          out << s[x];
          state->result = out.str();
        }
      }
      std::string text = kText[f];
      text.replace(text.find('X'), 1, X);
      return text;
    }
    case Opcode::drop:
      kind = "drop";
      if (state) s[d] = NDArray();
      return D + " = NDArray();  // drops the handle; ops on it may be pending";
    case Opcode::engine: {
      const bool close = k % 2;
      const int engine = p % kEngines;
      kind = close ? "close" : "open";
      if (state) {
        if (close && state->scopes.size() > 1) state->scopes.pop_back();
        if (!close && state->scopes.size() < 8) {
          state->scopes.push_back(
              std::make_unique<nd::EngineScope>(*state->engines->engines[engine]));
        }
      }
      return close ? "scopes.pop_back();  // closes the innermost scope (never the base one)"
                   : "scopes.push_back(nd::EngineScope(E" + std::to_string(engine) + "));";
    }
    case Opcode::random: {
      const int f = k % 3, device = in.args[1] % 3;
      const nd::DType dtype = in.args[2] % 2 ? nd::float64 : nd::float32;
      const std::string type = in.args[2] % 2 ? "nd::float64" : "nd::float32";
      const nd::Shape& shape = kShapes[p % std::size(kShapes)];
      static const char* const kNames[] = {"seed", "uniform", "normal"};
      kind = kNames[f];
      if (state) {
        if (f == 0) nd::random::seed(p);
        if (f == 1) put(nd::random::uniform(shape, {.dtype = dtype, .device = kDevices[device]}));
        if (f == 2) put(nd::random::normal(shape, {.dtype = dtype, .device = kDevices[device]}));
      }
      if (f == 0) return "nd::random::seed(" + std::to_string(p) + ");";
      return D + " = nd::random::" + kind + "(" + shape_text(shape) + ", {.dtype = " + type +
             ", .device = " + kDeviceText[device] + "});";
    }
    case Opcode::count:
      break;
  }
  return "?";
}

}  // namespace tandem::fuzz::detail
