// The pools of op records and var states (see object_pool.h).
#include "object_pool.h"
#include "profiler/profiler_recorder.h"
#include "tandem/detail/op_record.h"
#include "var_state.h"

namespace tandem::detail {

namespace {
using OpPool = ObjectPool<OpRecord, &OpRecord::next>;
using VarPool = ObjectPool<VarState, &VarState::next_free>;
}  // namespace

OpRecord* acquire_op_record() {
  return OpPool::acquire();
}

void release_op_record(OpRecord* op) noexcept {
  if (op->slots != op->inline_slots && op->slots != &op->first_slot) delete[] op->slots;
  op->slots = op->inline_slots;
  op->num_slots = 0;
  op->sink = nullptr;
  op->var_to_delete = nullptr;
  op->completion_taken = false;
  op->is_waiter = false;
  op->needs_fence_sync.store(false, std::memory_order_relaxed);
  // Fields beyond the first two lines are reset only by the ops that used them. A profiled op
  // resets its dependency count at push (profiling::on_push); the id is cleared here without a
  // test, a store being cheaper than a test and a branch.
  if constexpr (profiling::kHooksCompiled) op->profile_id = 0;
  OpPool::release(op);
}

VarState* acquire_var_state() {
  return VarPool::acquire();
}

void release_var_state(VarState* var) noexcept {
  TANDEM_ASSERT(var->idle(), "a var went back to its pool while ops held or waited for it");
  var->head = var->tail = nullptr;
  var->active_reads = 0;
  var->write_active = false;
  var->poison.reset();
  var->clear_fences();
  var->last_writer_profile_id = 0;
  VarPool::release(var);
}

}  // namespace tandem::detail
