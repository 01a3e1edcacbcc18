// GraphRecorder: the capture in progress on one thread (tandem/graph.h). The engine facade
// (engine.cc) asks `recording(engine)` on every push, delete_var, new_var and wait; while it is
// non-null, pushes on that engine are handed here instead of to the core.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/fast_tls.h"
#include "captured_graph.h"
#include "tandem/graph.h"

namespace tandem::detail {

class EngineCore;

class GraphRecorder {
 public:
  GraphRecorder(Engine& engine, const CaptureOptions& options)
      : engine_(&engine), options_(options) {}
  // Discards whatever was recorded and not handed to a plan.
  ~GraphRecorder();
  GraphRecorder(const GraphRecorder&) = delete;
  GraphRecorder& operator=(const GraphRecorder&) = delete;

  // Takes `op` (also when it throws, like submit).
  void record(EngineCore& core, OpRecord* op, Device device, VarList reads, VarList writes,
              const OpProps& props);
  // A delete_var inside the window: kept (with its deleter) for a var the window created;
  // tandem::Error for any other var.
  void record_delete(OpRecord* deleter, Var var);
  void note_new_var(Var var);
  // Resolves the window into a plan (captured_graph.h).
  std::shared_ptr<GraphPlan> finish(EngineCore& core);
  bool records_for(const Engine* engine) const { return engine == engine_; }
  Engine& engine() const { return *engine_; }

 private:
  Engine* engine_;
  CaptureOptions options_;
  std::vector<OpRecord*> ops_;
  std::unordered_set<VarState*> created_;
  std::vector<std::pair<Var, OpRecord*>> deleted_;
};

// How many push hooks are open on this thread: a capture (tandem/graph.h) and an automatic
// capture (tandem/auto_capture.h, auto_capture_state.h). The facade's push tests this one byte,
// so that neither costs an eager push more than one TLS load and a test.
extern constinit thread_local std::uint8_t tls_push_hooks TANDEM_FAST_TLS;

// The recorder capturing on this thread for `engine`; null (the common case: one TLS load and
// a test) when this thread captures nothing, or captures for another engine.
extern constinit thread_local GraphRecorder* tls_graph_recorder TANDEM_FAST_TLS;
inline GraphRecorder* recording(const Engine* engine) noexcept {
  GraphRecorder* recorder = tls_graph_recorder;
  if (recorder == nullptr || !recorder->records_for(engine)) [[likely]]
    return nullptr;
  return recorder;
}

}  // namespace tandem::detail
