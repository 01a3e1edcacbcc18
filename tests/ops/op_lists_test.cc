// The op lists: the enums, names and rules generated from the rows agree with the rows.
#include <doctest/doctest.h>

#include <tandem/ops/op_kinds.h>

#include <set>
#include <string>

namespace ops = tandem::ops;

TEST_SUITE("ops.op_lists") {
  TEST_CASE("every row has its own name, in list order") {
    std::set<std::string> names;
    for (int i = 0; i < ops::kUnaryOpCount; ++i) {
      names.insert(ops::op_name(static_cast<ops::UnaryOp>(i)));
    }
    CHECK(names.size() == static_cast<std::size_t>(ops::kUnaryOpCount));
    CHECK(std::string(ops::op_name(ops::UnaryOp::negative)) == "negative");
    CHECK(std::string(ops::op_name(ops::UnaryOp::tanh)) == "tanh");
    CHECK(std::string(ops::op_name(ops::BinaryOp::greater_equal)) == "greater_equal");
    CHECK(std::string(ops::op_name(ops::ReduceOp::argmax)) == "argmax");
    // Every enumerator of a list is a row, whatever the order the rows are in.
    names.clear();
    for (int i = 0; i < ops::kBinaryOpCount; ++i) {
      names.insert(ops::op_name(static_cast<ops::BinaryOp>(i)));
    }
    CHECK(names.size() == static_cast<std::size_t>(ops::kBinaryOpCount));
    CHECK(names.count("binary") == 0);
  }

  TEST_CASE("a value outside the list has the family's name") {
    CHECK(std::string(ops::op_name(static_cast<ops::UnaryOp>(ops::kUnaryOpCount))) == "unary");
    CHECK(std::string(ops::op_name(static_cast<ops::BinaryOp>(99))) == "binary");
  }

  TEST_CASE("the dtype rules come from the rows") {
    static_assert(ops::needs_floating(ops::UnaryOp::exp));
    static_assert(!ops::needs_floating(ops::UnaryOp::relu));
    static_assert(ops::needs_floating(ops::BinaryOp::power));
    static_assert(!ops::needs_floating(ops::BinaryOp::divide));
    static_assert(ops::needs_floating(ops::ReduceOp::norm));
    CHECK(ops::supported(ops::UnaryOp::sqrt, ops::DType::float32));
    CHECK_FALSE(ops::supported(ops::UnaryOp::sqrt, ops::DType::int32));
    CHECK(ops::supported(ops::BinaryOp::add, ops::DType::int64));
    // The functors the backends instantiate follow the same rows.
    static_assert(ops::functor_defined_for<int, tandem::ops::functors::Add>());
    static_assert(!ops::functor_defined_for<int, tandem::ops::functors::Sigmoid>());
    static_assert(ops::functor_defined_for<float, tandem::ops::functors::Sigmoid>());
  }

  TEST_CASE("reductions: result dtype and empty inputs come from the rows") {
    static_assert(ops::result_dtype(ops::ReduceOp::argmax, ops::DType::float32) ==
                  ops::DType::int64);
    static_assert(ops::result_dtype(ops::ReduceOp::sum, ops::DType::int32) == ops::DType::int32);
    CHECK(ops::reduces_empty(ops::ReduceOp::sum));
    CHECK_FALSE(ops::reduces_empty(ops::ReduceOp::max));
  }

  TEST_CASE("the sim cost per element comes from the rows") {
    CHECK(ops::flops_per_element(ops::UnaryOp::exp) == 8.0);
    CHECK(ops::flops_per_element(ops::UnaryOp::abs) == 1.0);
    CHECK(ops::flops_per_element(ops::BinaryOp::add) == 1.0);
  }
}
