// Random programs for the capture tests (capture and replay, automatic capture): ops on a few
// vars that mix what they read into what they write, and may throw, fail their completion, be
// no_skip or push a follow-up op. A test runs one program eagerly on the naive engine and through
// the mechanism under test, and compares the two Outcomes: values, errors and follow-ups.
#pragma once

#include <tandem/engine.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.h"

namespace tandem_test {

// The name of the op at `index` of a program whose ops take `distinct` names (at most 16) in
// turn.
inline const char* op_name(int index, int distinct = 16) {
  static constexpr std::array<const char*, 16> kNames = {
      "op0", "op1", "op2",  "op3",  "op4",  "op5",  "op6",  "op7",
      "op8", "op9", "op10", "op11", "op12", "op13", "op14", "op15"};
  return kNames[static_cast<std::size_t>(index % distinct)];
}

// One op of a program: indices into ProgramState::vars.
struct OpSpec {
  std::vector<int> reads, writes;
  enum Kind { plain, throws, async_ok, async_fails, pushes } kind = plain;
  bool no_skip = false;
  int throw_every = 1;  // throws: in the rounds that are a multiple of this
  const char* name = "op";
};

// How random_program draws a program: how many vars, and one chance in how many for each
// feature of an op.
struct ProgramShape {
  int vars = 6;
  int distinct_names = 16;
  int access_odds = 10;   // per var: read in 2 chances, written in 1, read and written in 1
  int kind_odds = 20;     // throws, async_ok, async_fails, pushes: 1 chance each
  int no_skip_odds = 12;  // no_skip: 1 chance
  bool throws_some_rounds = false;  // a throwing op throws every 1..7 rounds (drawn), not always
};

inline std::vector<OpSpec> random_program(std::mt19937& random, int ops,
                                          const ProgramShape& shape) {
  auto pick = [&](int max) { return static_cast<int>(random() % static_cast<unsigned>(max)); };
  std::vector<OpSpec> program;
  for (int i = 0; i < ops; ++i) {
    OpSpec op;
    for (int v = 0; v < shape.vars; ++v) {
      const int roll = pick(shape.access_odds);
      if (roll < 2) op.reads.push_back(v);
      if (roll == 2) op.writes.push_back(v);
      if (roll == 3) {
        op.reads.push_back(v);
        op.writes.push_back(v);
      }
    }
    const int kind = pick(shape.kind_odds);
    if (kind == 0) op.kind = OpSpec::throws;
    if (kind == 1) op.kind = OpSpec::async_ok;
    if (kind == 2) op.kind = OpSpec::async_fails;
    if (kind == 3) op.kind = OpSpec::pushes;
    if (shape.throws_some_rounds) op.throw_every = 1 + pick(7);
    op.no_skip = pick(shape.no_skip_odds) == 0;
    op.name = op_name(i, shape.distinct_names);
    program.push_back(std::move(op));
  }
  return program;
}

// The vars of one run of a program and what its ops computed. The vars are made on
// construction; release() deletes them and waits for every op.
struct ProgramState {
  ProgramState(tandem::Engine& engine, int var_count) : values(var_count) {
    for (int v = 0; v < var_count; ++v) vars.push_back(engine.new_var());
    nested = engine.new_var();
  }
  void release(tandem::Engine& engine) {
    for (tandem::Var var : vars) engine.delete_var(var);
    engine.delete_var(nested);
    engine.wait_all();
  }

  std::vector<std::uint64_t> values;
  std::vector<tandem::Var> vars;
  tandem::Var nested;  // written by the follow-ups of `pushes` ops only
  std::int64_t nested_count = 0;
};

// Pushes op `index` of a program for `round`: the closure captures the round, as a loop's
// closures capture what changes per iteration (a captured graph replays round 0's closures).
inline void push_op(tandem::Engine& engine, ProgramState& state, const OpSpec& spec, int index,
                    int round = 0) {
  std::vector<tandem::Var> reads, writes;
  for (int v : spec.reads) reads.push_back(state.vars[static_cast<std::size_t>(v)]);
  for (int v : spec.writes) writes.push_back(state.vars[static_cast<std::size_t>(v)]);
  const bool async = spec.kind == OpSpec::async_ok || spec.kind == OpSpec::async_fails;
  engine.push(
      [&engine, &state, &spec, index, round](tandem::RunContext& ctx) {
        // Wraps: unsigned.
        std::uint64_t mix = static_cast<std::uint64_t>(index) * 1000 + static_cast<unsigned>(round);
        for (int v : spec.reads) mix = mix * 31 + state.values[static_cast<std::size_t>(v)];
        if (spec.kind == OpSpec::throws && round % spec.throw_every == 0) {
          std::string message = "op ";  // appended: GCC 12 -Wrestrict misfires on "lit" + string
          message += std::to_string(index);
          message += " threw in round ";
          message += std::to_string(round);
          throw std::runtime_error(message);
        }
        for (int v : spec.writes)
          state.values[static_cast<std::size_t>(v)] = mix + static_cast<unsigned>(v);
        if (spec.kind == OpSpec::async_ok) ctx.take_completion()();
        if (spec.kind == OpSpec::async_fails) {
          ctx.take_completion().fail(std::make_exception_ptr(std::runtime_error("async failed")));
        }
        if (spec.kind == OpSpec::pushes) {
          engine.push([&state] { ++state.nested_count; }, tandem::cpu(), {}, {state.nested},
                      {.name = "nested"});
        }
      },
      tandem::cpu(), reads, writes,
      {.name = spec.name, .async_completion = async, .no_skip = spec.no_skip});
}

// What a run of a program leaves: the errors wait_all throws, the error of each var, the values
// and how many follow-ups ran.
struct Outcome {
  std::vector<std::string> wait_all_errors;
  std::vector<std::string> var_errors;
  std::vector<std::uint64_t> values;
  std::int64_t nested_count = 0;
  bool operator==(const Outcome&) const = default;
};

// Waits for every op of the run and collects its Outcome.
inline Outcome outcome_of(tandem::Engine& engine, const ProgramState& state) {
  Outcome outcome;
  outcome.wait_all_errors = errors_of_wait_all(engine);
  for (tandem::Var var : state.vars) outcome.var_errors.push_back(error_of(engine, var));
  (void)error_of(engine, state.nested);
  outcome.values = state.values;
  outcome.nested_count = state.nested_count;
  return outcome;
}

}  // namespace tandem_test
