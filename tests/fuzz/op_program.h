// An op-sequence program for tandem_fuzz_ops: bytes decoded into NDArray ops over eight array
// slots on cpu, sim(0) and sim(1), run on a set of engines, and what the run observed.
//
// Encoding: each instruction is 6 bytes, an opcode byte (taken modulo the number of opcodes) and
// five argument bytes that every opcode reads its own way (slots modulo 8, devices modulo 3, ...),
// so every byte string is a valid program and a mutation of one stays one. A trailing partial
// instruction is ignored; at most kMaxInstructions are read.
//
// Running: a fixed prologue fills the slots (see prologue_text()); the program's ops then
// create, compute on, view, copy, write into, wait for, read back and drop the slots, and switch
// the engine new arrays go to (nd::EngineScope on one of three engines). Everything a run can
// observe goes into its Outcome, in order: each op's error thrown at the call, each wait's error,
// each read's values (bit for bit), then the errors of the closing waitall calls and the final
// value (or error) of every slot. Two runs of one program must give the same Outcome whatever
// the engines are: the fuzzer runs it on naive engines and on threaded ones and compares.
#pragma once

#include <tandem/tandem.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem::fuzz {

inline constexpr std::size_t kInstructionBytes = 6;
inline constexpr std::size_t kMaxInstructions = 96;
inline constexpr int kSlots = 8;
inline constexpr int kEngines = 3;

enum class Opcode : std::uint8_t {
  create,     // slot = a new array (device, dtype, shape, fill)
  unary,      // slot = f(x)
  binary,     // slot = x (op) y
  scalar,     // slot = x (op) value
  dot,        // slot = dot(x or x.T, y or y.T)
  reduce,     // slot = sum/mean/max/min/argmax/norm of x (whole, or along an axis)
  view,       // slot = a view of x: T, reshape, slice, [i], transpose(axes)
  to_device,  // slot = x.copyto(device) / as_in_context(device) / copy()
  copy_into,  // x.copyto(y), whole or half into half
  in_place,   // x op= y or value; x.assign(...); x.slice(...).assign(...)
  take,       // slot = take(x, indices, axis): indices may be out of range (an op error)
  astype,     // slot = x.astype(dtype)
  join,       // slot = concat / stack / split part of x and y
  where,      // slot = where(x, y, z)
  wait,       // x.wait_to_read / wait_to_write / waitall
  read,       // x.to_vector / scalar / operator<< (recorded)
  drop,       // slot = NDArray(): the last handle may go while ops on it are pending
  engine,     // open a scope on engine k, or close the innermost one
  random,     // nd::random::seed(v) / slot = uniform / normal
  count
};

struct Instruction {
  Opcode op = Opcode::create;
  std::uint8_t args[kInstructionBytes - 1] = {};
};

struct Program {
  std::vector<Instruction> instructions;
};

Program decode(const std::vector<unsigned char>& bytes);
std::vector<unsigned char> encode(const Program& program);

// The program as C++-like text, one statement per line (the prologue first when asked).
std::string to_text(const Program& program, bool with_prologue = true);
std::string prologue_text();
// One instruction as one statement ("s3 = nd::dot(s1, s2.T());").
std::string to_text(const Instruction& instruction);

// Everything a run observed, in order. Two runs of one program must give equal `events`.
struct Outcome {
  std::vector<std::string> events;
  std::vector<std::size_t> instruction;  // events[i] came from instructions[instruction[i]]
                                         // (instructions.size(): the closing checks)
  // Per event, what kind of result which variant of which opcode gave (a value, an error at
  // the call or at a sync point with its message's words, numbers left out): the features the
  // corpus is chosen by. A program that adds one is worth keeping.
  std::vector<std::string> features;
  // Exceptions that are not a tandem::Error, or whose message does not start with "tandem":
  // a failure whatever the other run did.
  std::vector<std::string> unclear;
  // Instructions that gave an array or nothing, read values, errors at the call, at a sync point.
  std::size_t oks = 0, values = 0, call_errors = 0, sync_errors = 0;
};

// The engines a program's "engine k" means. Program runs on one set must not overlap in time.
struct EngineSet {
  std::vector<std::unique_ptr<Engine>> engines;  // kEngines of them
  std::string name;
};
EngineSet naive_engines();
// Engine 0: threaded (default workers); 1: threaded with one CPU worker and at most 4 ops in
// flight (pushes block on backpressure); 2: naive (a naive engine beside threaded ones).
EngineSet threaded_engines();

Outcome run(const Program& program, EngineSet& engines);

}  // namespace tandem::fuzz
