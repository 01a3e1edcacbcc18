// hybridize: entries by signature, each a captured graph between static input and output
// arrays (see tandem/nd/hybridize.h).
//
// Invariants of an entry:
// - `inputs` are the arrays the recorded function was called with: contiguous, created before
//   the capture, so the graph reads their vars (external reads) and every call writes them
//   first (an op ordered before the replay by their vars).
// - `outputs` are what the function returned; created inside the window and kept alive, or
//   arrays from outside: either way vars the graph refers to, so a replay writes them again.
// - `graph` is destroyed before the static arrays (members are destroyed in reverse order),
//   which keeps the vars it refers to alive until it is gone.
#include "tandem/nd/hybridize.h"

#include <string>
#include <utility>

#include "capture_window.h"
#include "tandem/errors.h"
#include "tandem/graph.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/engine_scope.h"

namespace tandem::nd {

namespace {

struct InputSignature {
  Shape shape;
  DType dtype = float32;
  Device device;
};

struct Signature {
  const Engine* engine = nullptr;
  bool training = false;
  std::vector<InputSignature> inputs;
};

bool same_signature(const Signature& signature, const Engine& engine, bool training,
                    const std::vector<NDArray>& inputs) {
  if (signature.engine != &engine || signature.training != training ||
      signature.inputs.size() != inputs.size()) {
    return false;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputSignature& expected = signature.inputs[i];
    if (expected.dtype != inputs[i].dtype() || expected.device != inputs[i].device() ||
        expected.shape != inputs[i].shape()) {
      return false;
    }
  }
  return true;
}

// The engine of the inputs (they must share one), or the current engine without inputs.
Engine& engine_of(const std::vector<NDArray>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw Error("tandem: hybridize: input " + std::to_string(i) +
                  " is a null NDArray; pass arrays created by nd:: functions");
    }
  }
  if (inputs.empty()) return current_engine();
  Engine& engine = inputs[0].engine();
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (&inputs[i].engine() != &engine) {
      throw Error("tandem: hybridize: input " + std::to_string(i) +
                  " belongs to another engine than input 0; a hybridized function runs on one "
                  "engine: create all its inputs under one nd::EngineScope");
    }
  }
  return engine;
}

}  // namespace

struct HybridCache::Entry {
  Signature signature;
  std::vector<NDArray> inputs;
  std::vector<NDArray> outputs;
  CapturedGraph graph;
};

HybridCache::HybridCache() = default;
HybridCache::~HybridCache() = default;
HybridCache::HybridCache(HybridCache&&) noexcept = default;
HybridCache& HybridCache::operator=(HybridCache&&) noexcept = default;

std::size_t HybridCache::num_entries() const {
  return entries_.size();
}

std::size_t HybridCache::num_recorded_ops() const {
  return last_entry_ != nullptr ? last_entry_->graph.num_ops() : 0;
}

void HybridCache::clear() {
  last_entry_ = nullptr;
  entries_.clear();
}

std::vector<NDArray> HybridCache::call(const ArrayFunction& fn,
                                       const std::vector<NDArray>& inputs) {
  Engine& engine = engine_of(inputs);
  last_call_replayed_ = false;
  // Autograd needs the tape the eager ops record; a nested call is recorded by the outer one.
  if (autograd::is_recording() || detail::capturing_on_this_thread()) return fn(inputs);

  const bool training = autograd::is_training();
  Entry* entry = nullptr;
  for (const auto& candidate : entries_) {
    if (same_signature(candidate->signature, engine, training, inputs)) {
      entry = candidate.get();
      break;
    }
  }
  if (entry == nullptr) entry = record(fn, inputs);

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const NDArray& input = inputs[i];
    NDArray& target = entry->inputs[i];
    // A contiguous handle of the static input's size on its storage is the static input itself
    // (a static output returned by an identity function, passed back in): nothing to copy.
    if (input.shares_storage_with(target) && input.is_contiguous()) continue;
    input.copyto(target);
  }
  entry->graph.replay();
  last_entry_ = entry;
  last_call_replayed_ = true;
  return entry->outputs;
}

HybridCache::Entry* HybridCache::record(const ArrayFunction& fn,
                                        const std::vector<NDArray>& inputs) {
  Engine& engine = engine_of(inputs);
  auto entry = std::make_unique<Entry>();
  entry->signature.engine = &engine;
  entry->signature.training = autograd::is_training();
  EngineScope scope(engine);
  for (const NDArray& input : inputs) {
    entry->signature.inputs.push_back({input.shape(), input.dtype(), input.device()});
    entry->inputs.push_back(empty(input.shape(), input.dtype(), input.device()));
  }
  {
    detail::CaptureWindow window;
    entry->graph = capture(engine, [&] { entry->outputs = fn(entry->inputs); });
  }
  for (std::size_t i = 0; i < entry->outputs.size(); ++i) {
    const NDArray& output = entry->outputs[i];
    if (!output.defined()) {
      throw Error("tandem: hybridize: the function returned a null NDArray as output " +
                  std::to_string(i) + "; return arrays computed from the inputs");
    }
    if (&output.engine() != &engine) {
      throw Error("tandem: hybridize: output " + std::to_string(i) +
                  " belongs to another engine than the inputs; a hybridized function runs on "
                  "one engine");
    }
  }
  entries_.push_back(std::move(entry));
  return entries_.back().get();
}

Hybridized::Hybridized(ArrayFunction fn) : fn_(std::move(fn)) {
  if (!fn_) throw Error("tandem: hybridize: the function is empty; pass a callable");
}

Hybridized hybridize(ArrayFunction fn) {
  return Hybridized(std::move(fn));
}

}  // namespace tandem::nd
