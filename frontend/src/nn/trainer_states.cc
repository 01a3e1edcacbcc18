// Trainer::save_states / load_states: a checkpoint of the optimizer's side of training, as an
// nd::save file (written to a temporary file, fsync'ed and renamed, so a crash mid-write keeps the
// old one).
//
// Entries: "trainer/steps" and "trainer/random" (int64: the step count; the default generator's
// seed and counter, bit for bit), "trainer/learning_rate" (float64), an empty array named
// "trainer/optimizer/<name>" (so that an Adam checkpoint does not load into SGD), and
// "state/<parameter>/<copy>/<index>" for each optimizer state array.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <string>

#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/random.h"
#include "tandem/nd/save_load.h"
#include "tandem/nn/trainer.h"

namespace tandem::nn {

namespace {

constexpr const char* kSteps = "trainer/steps";
constexpr const char* kRandom = "trainer/random";
constexpr const char* kLearningRate = "trainer/learning_rate";
constexpr const char* kOptimizerPrefix = "trainer/optimizer/";

std::string state_name(const std::string& parameter, std::size_t copy, std::size_t index) {
  return "state/" + parameter + "/" + std::to_string(copy) + "/" + std::to_string(index);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("tandem: Trainer::load_states('" + path + "'): " + what);
}

}  // namespace

void Trainer::save_states(const std::string& path) const {
  nd::NamedArrays arrays;
  const nd::random::GeneratorSnapshot random = nd::random::default_generator().snapshot();
  arrays.emplace_back(kSteps, nd::from_vector(std::vector<std::int64_t>{steps_}));
  arrays.emplace_back(kRandom, nd::from_vector(std::vector<std::int64_t>{
                                   std::bit_cast<std::int64_t>(random.seed),
                                   std::bit_cast<std::int64_t>(random.counter)}));
  arrays.emplace_back(kLearningRate,
                      nd::from_vector(std::vector<double>{optimizer_->learning_rate()}));
  arrays.emplace_back(kOptimizerPrefix + optimizer_->name(), nd::zeros({0}));
  for (const Slot& slot : slots_) {
    for (std::size_t copy = 0; copy < slot.states.size(); ++copy) {
      for (std::size_t index = 0; index < slot.states[copy].size(); ++index) {
        arrays.emplace_back(state_name(slot.parameter->name(), copy, index),
                            slot.states[copy][index]);
      }
    }
  }
  nd::save(path, arrays);
}

void Trainer::load_states(const std::string& path) {
  const nd::NamedArrays file = nd::load(path);
  std::map<std::string, nd::NDArray> entries(file.begin(), file.end());
  const auto take = [&](const std::string& name, nd::DType dtype, std::int64_t size) {
    const auto found = entries.find(name);
    if (found == entries.end()) fail(path, "no entry '" + name + "' (not a save_states file?)");
    const nd::NDArray array = found->second;
    if (array.dtype() != dtype || array.size() != size) {
      fail(path, "entry '" + name + "' should hold " + std::to_string(size) + " " +
                     nd::dtype_name(dtype) + ", holds " + array.shape().to_string() + " " +
                     nd::dtype_name(array.dtype()));
    }
    entries.erase(found);
    return array;
  };
  const std::string optimizer_entry = kOptimizerPrefix + optimizer_->name();
  if (!entries.contains(optimizer_entry)) {
    std::string saved = "none";
    for (const auto& [name, array] : entries) {
      if (name.starts_with(kOptimizerPrefix))
        saved = name.substr(std::string(kOptimizerPrefix).size());
    }
    fail(path, "it was written for the optimizer '" + saved + "', this Trainer's is '" +
                   optimizer_->name() + "'");
  }
  entries.erase(optimizer_entry);
  const std::vector<std::int64_t> steps = take(kSteps, nd::int64, 1).to_vector<std::int64_t>();
  const std::vector<std::int64_t> random = take(kRandom, nd::int64, 2).to_vector<std::int64_t>();
  const double learning_rate = take(kLearningRate, nd::float64, 1).to_vector<double>()[0];

  // The optimizer states, made like the ones step() makes and checked before any is kept.
  auto paused = autograd::pause();
  std::vector<std::vector<std::vector<nd::NDArray>>> states(slots_.size());
  nd::NamedArrays targets;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Parameter& parameter = *slots_[s].parameter;
    if (!entries.contains(state_name(parameter.name(), 0, 0))) continue;  // not updated yet
    if (!parameter.initialized()) {
      fail(path, "the parameter '" + parameter.name() +
                     "' has saved optimizer state but is not initialized here (initialize or "
                     "load the parameters first)");
    }
    const std::vector<nd::NDArray> weights = parameter.list_data();
    for (std::size_t copy = 0; copy < weights.size(); ++copy) {
      states[s].push_back(optimizer_->create_state(weights[copy]));
      for (std::size_t index = 0; index < states[s][copy].size(); ++index) {
        const std::string name = state_name(parameter.name(), copy, index);
        if (!entries.contains(name)) {
          fail(path, "no entry '" + name + "': the parameter '" + parameter.name() + "' has " +
                         std::to_string(weights.size()) +
                         " copies here; were the states saved with as many devices?");
        }
        targets.emplace_back(name, states[s][copy][index]);
        entries.erase(name);
      }
    }
  }
  if (!entries.empty()) {
    fail(path, "entry '" + entries.begin()->first +
                   "' matches no parameter copy of this Trainer (another network, or more "
                   "devices?)");
  }
  // Shapes and dtypes are checked by load_into before it writes anything.
  try {
    nd::load_into(path, targets, {.ignore_extra = true});
  } catch (const Error& e) {
    fail(path,
         std::string("the optimizer state does not fit this Trainer's parameters: ") + e.what());
  }

  // A parameter the file has no state for had not been updated when it was saved: its state
  // is dropped here and made afresh at its next update, as it was then.
  for (std::size_t s = 0; s < slots_.size(); ++s) slots_[s].states = std::move(states[s]);
  steps_ = static_cast<long>(steps[0]);
  optimizer_->set_learning_rate(learning_rate);
  nd::random::default_generator().restore(
      {std::bit_cast<std::uint64_t>(random[0]), std::bit_cast<std::uint64_t>(random[1])});
}

}  // namespace tandem::nn
