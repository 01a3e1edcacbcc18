#include "graph_recorder.h"

#include <string>

#include "auto_capture_state.h"
#include "engine_core.h"
#include "tandem/graph.h"

namespace tandem::detail {

constinit thread_local GraphRecorder* tls_graph_recorder TANDEM_FAST_TLS = nullptr;
constinit thread_local std::uint8_t tls_push_hooks TANDEM_FAST_TLS = 0;

GraphRecorder::~GraphRecorder() {
  for (OpRecord* op : ops_) {
    op->destroy_callable();
    release_op_record(op);
  }
  for (auto& [var, deleter] : deleted_) {
    // The window is abandoned: the var is deleted as the user asked, now.
    try {
      Engine::owner(var).delete_var(var, [deleter = deleter](RunContext& ctx) {
        struct Release {
          OpRecord* op;
          ~Release() {
            op->destroy_callable();
            release_op_record(op);
          }
        } release{deleter};
        deleter->run(ctx);
      });
    } catch (...) {
      deleter->destroy_callable();
      release_op_record(deleter);
    }
  }
}

void GraphRecorder::record(EngineCore& core, OpRecord* op, Device device, VarList reads,
                           VarList writes, const OpProps& props) {
  core.prepare_recorded(op, device, reads, writes, props);  // discards `op` when it throws
  try {
    ops_.push_back(op);
  } catch (...) {
    op->destroy_callable();
    release_op_record(op);
    throw;
  }
}

void GraphRecorder::record_delete(OpRecord* deleter, Var var) {
  if (!var.valid() || !created_.contains(var.state())) {
    deleter->destroy_callable();
    release_op_record(deleter);
    throw Error(
        "tandem: delete_var inside a capture of a var created before it: a captured graph "
        "cannot delete the vars it runs on at every replay; delete the var after the capture "
        "(vars created inside the window may be deleted there: the graph then owns them)");
  }
  for (const auto& [kept, unused] : deleted_) {
    if (kept == var) {
      deleter->destroy_callable();
      release_op_record(deleter);
      throw Error("tandem: delete_var inside a capture: the var was already deleted in it");
    }
  }
  try {
    deleted_.emplace_back(var, deleter);
  } catch (...) {
    deleter->destroy_callable();
    release_op_record(deleter);
    throw;
  }
}

void GraphRecorder::note_new_var(Var var) {
  created_.insert(var.state());
}

std::shared_ptr<GraphPlan> GraphRecorder::finish(EngineCore& core) {
  std::vector<OpRecord*> ops = std::move(ops_);
  ops_.clear();
  std::vector<std::pair<Var, OpRecord*>> deleted = std::move(deleted_);
  deleted_.clear();
  return resolve_window(core, *engine_, std::move(ops), created_, std::move(deleted),
                        options_.fail_as_one_unit);
}

GraphRecorder* begin_capture(Engine& engine, const CaptureOptions& options) {
  if (tls_graph_recorder != nullptr) {
    throw Error(
        "tandem: capture inside a capture: captures do not nest; capture the inner window as "
        "its own graph before the outer capture, or record its pushes directly in the outer "
        "one");
  }
  flush_auto_capture(&engine);  // this thread's buffered pushes go before the window
  auto* recorder = new GraphRecorder(engine, options);
  tls_graph_recorder = recorder;
  ++tls_push_hooks;
  return recorder;
}

std::shared_ptr<GraphPlan> end_capture(GraphRecorder* recorder) {
  tls_graph_recorder = nullptr;
  --tls_push_hooks;
  std::unique_ptr<GraphRecorder> owned(recorder);
  return recorder->finish(core_of(recorder->engine()));
}

void abandon_capture(GraphRecorder* recorder) noexcept {
  tls_graph_recorder = nullptr;
  --tls_push_hooks;
  delete recorder;
}

}  // namespace tandem::detail
