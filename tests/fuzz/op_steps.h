// The instructions of tandem_fuzz_ops' programs: what a run keeps between them, and the one
// function that prints and runs each (op_steps.cc). Internal to the fuzzer (op_program.cc).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "op_program.h"

namespace tandem::fuzz::detail {

inline std::string slot(int s) {
  return "s" + std::to_string(s);
}

// What running a program keeps between its instructions.
struct State {
  EngineSet* engines = nullptr;
  std::array<nd::NDArray, kSlots> slots;
  std::vector<std::unique_ptr<nd::EngineScope>> scopes;  // [0]: the base scope on engine 0
  std::string result;  // what the instruction observed, beside "ok" (values, a result's type)
};

// The opcode's name ("binary"), for the features.
const char* op_name(Opcode op);

// The instruction's statement ("s3 = nd::dot(s1, s2.T());"); with a state, it also runs it
// (throwing what the ops throw). `kind` gets the instruction's variant ("divide").
std::string step(const Instruction& instruction, State* state, std::string& kind);

// The array's shape, dtype, device and values, bit for bit (a hash of the bytes past 64
// elements). A sync point: throws what the array's ops threw.
std::string read_values(const nd::NDArray& array);

}  // namespace tandem::fuzz::detail
