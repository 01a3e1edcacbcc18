#include "graph/graph_ops.h"

#include <unordered_map>

#include "core/op_dispatch.h"
#include "graph/graph_json.h"
#include "tandem/errors.h"
#include "tandem/nd/convolution.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/join.h"
#include "tandem/nd/linalg.h"
#include "tandem/nd/network.h"
#include "tandem/nd/pooling.h"

namespace tandem::nd::detail {

namespace {

using nlohmann::json;
using Table = std::unordered_map<std::string, GraphOp>;

Size2d size2d(const json& attrs, const char* key) {
  const json& value = attrs.at(key);
  return Size2d{value.at(0).get<std::int64_t>(), value.at(1).get<std::int64_t>()};
}

void add_kind_ops(Table& table) {
  for (int i = 0; i < ops::kUnaryOpCount; ++i) {
    const auto op = static_cast<ops::UnaryOp>(i);
    table[ops::op_name(op)] = {
        1, [op](const json&, const std::vector<NDArray>& in) { return unary_op(op, in[0]); }};
  }
  for (int i = 0; i < ops::kBinaryOpCount; ++i) {
    const auto op = static_cast<ops::BinaryOp>(i);
    table[ops::op_name(op)] = {2, [op](const json&, const std::vector<NDArray>& in) {
                                 return binary_op(op, in[0], in[1]);
                               }};
    table[std::string(ops::op_name(op)) + "_scalar"] = {
        1, [op](const json& attrs, const std::vector<NDArray>& in) {
          return binary_scalar_op(op, in[0], scalar_from_json(attrs.at("scalar"), "scalar"),
                                  attrs.at("scalar_first").get<bool>());
        }};
  }
  for (int i = 0; i < ops::kReduceOpCount; ++i) {
    const auto op = static_cast<ops::ReduceOp>(i);
    table[ops::op_name(op)] = {1, [op](const json& attrs, const std::vector<NDArray>& in) {
                                 if (!attrs.contains("axis")) return reduce_all_op(op, in[0]);
                                 return reduce_axis_op(op, in[0], attrs.at("axis").get<int>(),
                                                       attrs.at("keepdims").get<bool>());
                               }};
  }
}

void add_shape_ops(Table& table) {
  table["dot"] = {2, [](const json&, const std::vector<NDArray>& in) { return dot(in[0], in[1]); }};
  table["transpose"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                          return transpose(in[0], attrs.at("axes").get<std::vector<int>>());
                        }};
  // The recorded shape, with axis 0 taken from the input when the traced reshape kept it: a
  // batch of another size flattens as well.
  table["reshape"] = {
      1, [](const json& attrs, const std::vector<NDArray>& in) {
        Shape shape = shape_from_json(attrs.at("shape"), "reshape shape");
        if (attrs.at("keep_axis0").get<bool>() && in[0].ndim() > 0 && shape.ndim() > 0) {
          shape[0] = in[0].shape()[0];
        }
        return in[0].reshape(shape);
      }};
  table["slice"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                      return in[0].slice(attrs.at("begin").get<std::int64_t>(),
                                         attrs.at("end").get<std::int64_t>(),
                                         attrs.at("step").get<std::int64_t>());
                    }};
  table["index"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                      return in[0][attrs.at("index").get<std::int64_t>()];
                    }};
  table["copy"] = {1, [](const json&, const std::vector<NDArray>& in) { return in[0].copy(); }};
  table["astype"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                       return in[0].astype(dtype_from_json(attrs.at("dtype"), "astype dtype"));
                     }};
  table["concat"] = {-1, [](const json& attrs, const std::vector<NDArray>& in) {
                       return concat(in, attrs.at("axis").get<int>());
                     }};
}

void add_network_ops(Table& table) {
  table["conv2d"] = {-1, [](const json& attrs, const std::vector<NDArray>& in) {
                       if (in.size() != 2 && in.size() != 3) {
                         throw Error("tandem: conv2d takes 2 or 3 inputs (x, weight, bias), got " +
                                     std::to_string(in.size()));
                       }
                       const Conv2dOptions options{
                           .stride = size2d(attrs, "stride"),
                           .padding = size2d(attrs, "padding"),
                           .dilation = size2d(attrs, "dilation"),
                           .groups = attrs.at("groups").get<std::int64_t>()};
                       return in.size() == 3 ? conv2d(in[0], in[1], in[2], options)
                                             : conv2d(in[0], in[1], options);
                     }};
  const auto pool_options = [](const json& attrs) {
    return Pool2dOptions{.kernel = size2d(attrs, "kernel"),
                         .stride = size2d(attrs, "stride"),
                         .padding = size2d(attrs, "padding"),
                         .count_include_pad = attrs.at("count_include_pad").get<bool>()};
  };
  table["max_pool2d"] = {1, [pool_options](const json& attrs, const std::vector<NDArray>& in) {
                           return max_pool2d(in[0], pool_options(attrs));
                         }};
  table["avg_pool2d"] = {1, [pool_options](const json& attrs, const std::vector<NDArray>& in) {
                           return avg_pool2d(in[0], pool_options(attrs));
                         }};
  table["global_avg_pool2d"] = {
      1, [](const json&, const std::vector<NDArray>& in) { return global_avg_pool2d(in[0]); }};
  table["softmax"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                        return softmax(in[0], attrs.at("axis").get<int>());
                      }};
  table["log_softmax"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                            return log_softmax(in[0], attrs.at("axis").get<int>());
                          }};
  table["where"] = {
      3, [](const json&, const std::vector<NDArray>& in) { return where(in[0], in[1], in[2]); }};
  table["softmax_cross_entropy"] = {2, [](const json&, const std::vector<NDArray>& in) {
                                      return softmax_cross_entropy(in[0], in[1]);
                                    }};
}

Table make_table() {
  Table table;
  add_kind_ops(table);
  add_shape_ops(table);
  add_network_ops(table);
  return table;
}

}  // namespace

const GraphOp* find_graph_op(const std::string& name) {
  static const Table table = make_table();
  const auto found = table.find(name);
  return found == table.end() ? nullptr : &found->second;
}

}  // namespace tandem::nd::detail
