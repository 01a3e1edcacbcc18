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

#include <optional>
#include <string>
#include <utility>

#include "autograd/tape.h"
#include "graph/capture_window.h"
#include "graph/hybrid_backward.h"
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
  bool needs_grad = false;  // under autograd::record() only
};

struct Signature {
  const Engine* engine = nullptr;
  bool training = false;
  bool recording = false;  // autograd::is_recording(): the entry has a backward graph
  std::vector<InputSignature> inputs;
};

bool same_signature(const Signature& signature, const Engine& engine, bool training, bool recording,
                    const std::vector<NDArray>& inputs) {
  if (signature.engine != &engine || signature.training != training ||
      signature.recording != recording || signature.inputs.size() != inputs.size()) {
    return false;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputSignature& expected = signature.inputs[i];
    if (expected.dtype != inputs[i].dtype() || expected.device != inputs[i].device() ||
        expected.shape != inputs[i].shape() ||
        (recording && expected.needs_grad != inputs[i].needs_grad())) {
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
  std::vector<NDArray> outputs;  // detached handles
  // Entries recorded under autograd::record() whose outputs need a gradient.
  std::shared_ptr<detail::HybridBackward> backward;
  // Set when the recording under autograd found a gradient it cannot capture: calls with this
  // signature run the function eagerly.
  bool run_eagerly = false;
  CapturedGraph graph;
};

HybridCache::HybridCache() = default;
HybridCache::HybridCache(CaptureOptions options) : options_(options) {}
HybridCache::~HybridCache() = default;
HybridCache::HybridCache(HybridCache&&) noexcept = default;
HybridCache& HybridCache::operator=(HybridCache&&) noexcept = default;

std::size_t HybridCache::num_entries() const {
  return entries_.size();
}

std::size_t HybridCache::num_recorded_ops() const {
  return last_entry_ != nullptr ? last_entry_->graph.num_ops() : 0;
}

std::size_t HybridCache::num_recorded_backward_ops() const {
  return last_entry_ != nullptr && last_entry_->backward != nullptr
             ? detail::num_backward_ops(*last_entry_->backward)
             : 0;
}

void HybridCache::clear() {
  last_entry_ = nullptr;
  entries_.clear();
}

std::vector<NDArray> HybridCache::call(const ArrayFunction& fn,
                                       const std::vector<NDArray>& inputs) {
  Engine& engine = engine_of(inputs);
  last_call_replayed_ = false;
  // A nested call is recorded by the outer one; while export_block traces a forward, every op
  // must run (a replay would hide them from the trace).
  if (detail::capturing_on_this_thread() || detail::modes_see_each_op()) return fn(inputs);

  const bool training = autograd::is_training();
  const bool recording = autograd::is_recording();
  Entry* entry = nullptr;
  for (const auto& candidate : entries_) {
    if (same_signature(candidate->signature, engine, training, recording, inputs)) {
      entry = candidate.get();
      break;
    }
  }
  if (entry == nullptr) entry = record(fn, inputs);
  // The node of an earlier call still needs the static intermediates (hybrid_backward.h): this
  // call's ops go on the tape eagerly.
  if (entry->run_eagerly ||
      (entry->backward != nullptr && detail::backward_pending(*entry->backward))) {
    return fn(inputs);
  }

  {
    // Writing the static inputs is no recorded op: the call's node stands for the whole graph.
    const autograd::RecordScope paused = autograd::pause(training);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const NDArray input = inputs[i].detach();
      NDArray target = entry->inputs[i].detach();
      // A contiguous handle of the static input's size on its storage is the static input
      // itself (a static output returned by an identity function, passed back in): nothing to
      // copy.
      if (input.shares_storage_with(target) && input.is_contiguous()) continue;
      input.copyto(target);
    }
  }
  entry->graph.replay();
  last_entry_ = entry;
  last_call_replayed_ = true;
  std::vector<NDArray> outputs = entry->outputs;
  if (recording) detail::record_replayed_call(entry->backward, "hybridized", inputs, outputs);
  return outputs;
}

HybridCache::Entry* HybridCache::record(const ArrayFunction& fn,
                                        const std::vector<NDArray>& inputs) {
  Engine& engine = engine_of(inputs);
  auto entry = std::make_unique<Entry>();
  const bool recording = autograd::is_recording();
  entry->signature.engine = &engine;
  entry->signature.training = autograd::is_training();
  entry->signature.recording = recording;
  // Only when another engine is current: closing the last scope of an engine forgets its
  // default generator, whose var a recorded random draw runs on at every replay.
  std::optional<EngineScope> scope;
  if (&current_engine() != &engine) scope.emplace(engine);
  for (const NDArray& input : inputs) {
    const bool needs_grad = recording && input.needs_grad();
    entry->signature.inputs.push_back({input.shape(), input.dtype(), input.device(), needs_grad});
    entry->inputs.push_back(empty(input.shape(), input.dtype(), input.device()));
    // The static input gets a tape leaf: the backward graph differentiates with respect to it.
    if (needs_grad) entry->inputs.back().attach_grad();
  }
  std::vector<const autograd::detail::Node*> recorded_nodes;
  {
    detail::CaptureWindow window;
    std::optional<autograd::detail::RecordedNodeCollector> collector;
    if (recording) collector.emplace();
    entry->graph = capture(engine, options_, [&] { entry->outputs = fn(entry->inputs); });
    if (collector) recorded_nodes = std::move(collector->nodes);
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
  if (recording) {
    std::string not_replayable;
    entry->backward = detail::capture_backward(engine, options_, entry->inputs, entry->outputs,
                                               recorded_nodes, not_replayable);
    if (!not_replayable.empty()) {
      // Keep the signature, drop the recording: calls run eagerly (hybridize.h).
      entry->run_eagerly = true;
      entry->graph = CapturedGraph();
      entry->outputs.clear();
      entry->inputs.clear();
    }
  }
  for (NDArray& output : entry->outputs) output = output.detach();
  entries_.push_back(std::move(entry));
  return entries_.back().get();
}

Hybridized::Hybridized(ArrayFunction fn, CaptureOptions options)
    : fn_(std::move(fn)), cache_(options) {
  if (!fn_) throw Error("tandem: hybridize: the function is empty; pass a callable");
}

Hybridized hybridize(ArrayFunction fn, CaptureOptions options) {
  return Hybridized(std::move(fn), options);
}

}  // namespace tandem::nd
