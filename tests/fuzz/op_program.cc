// The op-sequence programs of tandem_fuzz_ops: decoding, printing and running (op_program.h).
// The instructions themselves are in op_steps.cc.
#include "op_program.h"

#include "corpus.h"
#include "op_steps.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <typeinfo>

namespace tandem::fuzz {

namespace nd = tandem::nd;
using detail::slot;
using detail::State;
using nd::NDArray;

namespace {

// An error's kind for the features: its message without the exception's type, an op error's
// wrapping ("tandem: op 'take' on cpu(0) failed: ") or the op's name ("tandem: add: "), up to
// its first ':' or ';', cut short.
std::string error_kind(const std::string& text) {
  std::string message = text.substr(std::min(text.size(), text.find(": ") + 2));
  if (const std::size_t failed = message.find(" failed: "); failed != std::string::npos) {
    message = message.substr(failed + 9);
  }
  if (message.rfind("tandem: ", 0) == 0) {
    const std::size_t colon = message.find(": ", 8);
    const std::size_t space = message.find(' ', 8);
    message = message.substr(colon != std::string::npos && colon <= space ? colon + 2 : 8);
  }
  return message_kind(message.substr(0, message.find_first_of(":;")), "", 40);
}

struct Caught {
  std::string text;  // "" when nothing was thrown
  bool unclear = false;
};

template <class Fn>
Caught catch_error(Fn&& fn) {
  try {
    fn();
    return {};
  } catch (const tandem::Error& e) {
    const bool clear = std::strncmp(e.what(), "tandem", 6) == 0;
    return {std::string(typeid(e).name()) + ": " + e.what(), !clear};
  } catch (const std::exception& e) {
    return {std::string("not a tandem::Error, ") + typeid(e).name() + ": " + e.what(), true};
  }
}

const char* const kPrologue[] = {
    "s0 = nd::arange(0, 6, 1, nd::float32, cpu()).reshape({2, 3});",
    "s1 = nd::arange(-2, 4, 1, nd::int32, sim(0));  // holds a 0: a divisor that fails",
    "s2 = nd::full({3}, 0.5, nd::float64, sim(1));",
    "s3 = nd::arange(0, 6, 1, nd::int64, cpu());",
    "s4 = nd::ones({3, 2}, nd::float32, sim(0));",
    "s5 = nd::arange(0, 40960, 1, nd::float32, cpu()).reshape({256, 160}) / 40960;",
    "s6 = nd::full({2, 3}, -1.5, nd::float32, sim(1));",
    "s7 = nd::arange(0, 3, 1, nd::float64, cpu());",
};

void run_prologue(State& state) {
  NDArray* s = state.slots.data();
  s[0] = nd::arange(0, 6, 1, nd::float32, cpu()).reshape({2, 3});
  s[1] = nd::arange(-2, 4, 1, nd::int32, sim(0));
  s[2] = nd::full({3}, 0.5, nd::float64, sim(1));
  s[3] = nd::arange(0, 6, 1, nd::int64, cpu());
  s[4] = nd::ones({3, 2}, nd::float32, sim(0));
  s[5] = nd::arange(0, 40960, 1, nd::float32, cpu()).reshape({256, 160}) / 40960;
  s[6] = nd::full({2, 3}, -1.5, nd::float32, sim(1));
  s[7] = nd::arange(0, 3, 1, nd::float64, cpu());
}

}  // namespace

Program decode(const std::vector<unsigned char>& bytes) {
  Program program;
  for (std::size_t at = 0;
       at + kInstructionBytes <= bytes.size() && program.instructions.size() < kMaxInstructions;
       at += kInstructionBytes) {
    Instruction in;
    in.op = static_cast<Opcode>(bytes[at] % static_cast<unsigned>(Opcode::count));
    std::memcpy(in.args, &bytes[at + 1], kInstructionBytes - 1);
    program.instructions.push_back(in);
  }
  return program;
}

std::vector<unsigned char> encode(const Program& program) {
  std::vector<unsigned char> bytes;
  for (const Instruction& in : program.instructions) {
    bytes.push_back(static_cast<unsigned char>(in.op));
    bytes.insert(bytes.end(), std::begin(in.args), std::end(in.args));
  }
  return bytes;
}

std::string prologue_text() {
  std::string text;
  for (const char* line : kPrologue) text += std::string(line) + "\n";
  return text;
}

std::string to_text(const Instruction& instruction) {
  std::string kind;
  return detail::step(instruction, nullptr, kind);
}

std::string to_text(const Program& program, bool with_prologue) {
  std::string text = with_prologue ? "// engine E0 (the base scope)\n" + prologue_text() : "";
  for (std::size_t i = 0; i < program.instructions.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "/*%2zu*/ ", i);
    text += number + to_text(program.instructions[i]) + "\n";
  }
  return text;
}

EngineSet naive_engines() {
  EngineSet set;
  set.name = "naive, naive, naive";
  for (int i = 0; i < kEngines; ++i) {
    set.engines.push_back(Engine::create(EngineConfig{.kind = EngineKind::naive}));
  }
  return set;
}

EngineSet threaded_engines() {
  EngineSet set;
  set.name = "threaded, threaded (1 worker, 4 ops in flight), naive";
  set.engines.push_back(Engine::create(EngineConfig{}));
  set.engines.push_back(Engine::create(EngineConfig{.cpu_workers = 1, .max_ops_in_flight = 4}));
  set.engines.push_back(Engine::create(EngineConfig{.kind = EngineKind::naive}));
  return set;
}

Outcome run(const Program& program, EngineSet& engines) {
  Outcome outcome;
  State state;
  state.engines = &engines;
  state.scopes.push_back(std::make_unique<nd::EngineScope>(*engines.engines[0]));
  const std::size_t end = program.instructions.size();
  const auto note = [&](std::size_t instruction, std::string event, const std::string& feature) {
    outcome.events.push_back(std::move(event));
    outcome.instruction.push_back(instruction);
    outcome.features.push_back(feature);
  };
  run_prologue(state);
  for (std::size_t i = 0; i < end; ++i) {
    const Instruction& in = program.instructions[i];
    std::string kind;
    state.result.clear();
    const Caught caught = catch_error([&] { detail::step(in, &state, kind); });
    const bool sync = in.op == Opcode::wait || in.op == Opcode::read;
    // Errors at the call by opcode (the variants share their checks), the rest by variant.
    const std::string feature = std::string(detail::op_name(in.op)) +
                                (caught.text.empty() || sync ? "." + kind : std::string());
    if (caught.unclear) outcome.unclear.push_back(caught.text);
    if (caught.text.empty()) {
      note(i, "ok " + state.result, feature + ": ok");
      ++(in.op == Opcode::read ? outcome.values : outcome.oks);
    } else {
      note(i, (sync ? "sync error " : "call error ") + caught.text,
           feature + (sync ? ": sync error " : ": call error ") + error_kind(caught.text));
      ++(sync ? outcome.sync_errors : outcome.call_errors);
    }
  }
  // The closing checks: back to the base scope, every engine's pending errors in order, then
  // every slot's value or error.
  state.scopes.resize(1);
  for (int e = 0; e < kEngines; ++e) {
    for (int n = 0; n < 1000; ++n) {
      const Caught caught = catch_error([&] { engines.engines[e]->wait_all(); });
      if (caught.text.empty()) break;
      if (caught.unclear) outcome.unclear.push_back(caught.text);
      note(end, "E" + std::to_string(e) + ".wait_all() threw " + caught.text,
           "closing wait_all: " + error_kind(caught.text));
      ++outcome.sync_errors;
    }
  }
  for (int s = 0; s < kSlots; ++s) {
    std::string values;
    const NDArray& array = state.slots[static_cast<std::size_t>(s)];
    if (!array.defined()) continue;
    const Caught caught = catch_error([&] { values = detail::read_values(array); });
    if (caught.unclear) outcome.unclear.push_back(caught.text);
    note(end, slot(s) + " = " + (caught.text.empty() ? values : "error " + caught.text),
         caught.text.empty() ? "final read: ok" : "final read: " + error_kind(caught.text));
  }
  // Nothing left behind for the next program on these engines.
  state.slots = {};
  for (int e = 0; e < kEngines; ++e) {
    for (int n = 0; n < 1000; ++n) {
      if (catch_error([&] { engines.engines[e]->wait_all(); }).text.empty()) break;
    }
  }
  state.scopes.clear();
  return outcome;
}

}  // namespace tandem::fuzz
