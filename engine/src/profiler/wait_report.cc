// What a blocked wait waits for: the text of its warning (EngineConfig::wait_warn_after) and of
// its TimeoutError. Diagnostics only, off the hot path.
//
// Safety: an op's name, device and push sequence never change after push, and an op holding a
// var (or queued on it) cannot finish releasing that var, so cannot be recycled, while the var's
// lock is held. So everything read of an op is read under the lock of a var it holds or waits
// for, and copied out before the lock is released.
#include <algorithm>
#include <string>
#include <vector>

#include "engine_core.h"

namespace tandem::detail {

namespace {

constexpr int kMaxSteps = 4;        // holders followed from var to var
constexpr int kMaxQueuedShown = 4;  // ops listed among those queued ahead

std::string op_text(const OpRecord* op) {
  std::string text = "op '";
  text += op->props.name;
  text += "' on ";
  text += to_string(op->device);
  text += " (push #";
  text += std::to_string(op->push_sequence);
  text += ')';
  return text;
}

}  // namespace

void EngineCore::on_completion_taken(const OpRecord* op) noexcept {
  completions_outstanding_.fetch_add(1, std::memory_order_relaxed);
  try {
    std::lock_guard lock(pending_completions_mutex_);
    pending_completions_.push_back(op);
  } catch (...) {
    // Only the wait report loses this op.
  }
}

void EngineCore::on_completion_given(const OpRecord* op) noexcept {
  note_completion_given();
  {
    std::lock_guard lock(pending_completions_mutex_);
    std::erase(pending_completions_, op);
  }
  completions_outstanding_.fetch_sub(1, std::memory_order_relaxed);
}

std::string EngineCore::describe_pending_completions() {
  std::lock_guard lock(pending_completions_mutex_);
  if (pending_completions_.empty()) return "";
  std::string text = std::to_string(pending_completions_.size()) +
                     " async op(s) wait for their Completion to be invoked:";
  int shown = 0;
  for (const OpRecord* op : pending_completions_) {
    if (shown++ == kMaxQueuedShown) {
      text += " ...";
      break;
    }
    // A pending op is not recycled before its Completion is invoked, which needs this mutex.
    // Appended piece by piece: `literal + std::string` trips GCC 12's -Wrestrict false
    // positive at -O3 (GCC bug 105329), and warnings are errors for our code.
    text += ' ';
    text += op_text(op);
    text += ';';
  }
  return text;
}

std::string EngineCore::describe_var_wait(VarState* var, bool for_write) {
  std::string text;
  for (int step = 0; step < kMaxSteps && var != nullptr; ++step) {
    const OpRecord* holder = nullptr;
    std::string holder_text;
    std::uint32_t holder_pending = 0;
    std::vector<VarState*> holder_vars;
    std::string ahead;
    int queued = 0;
    var->lock.lock();
    if (var->write_active && var->writer != nullptr) {
      holder = var->writer;
      holder_text = op_text(holder);
      holder_pending = holder->pending_vars.load(std::memory_order_acquire);
      for (std::uint32_t i = 0; i < holder->num_slots; ++i) {
        holder_vars.push_back(holder->slots[i].var);
      }
    }
    const std::uint32_t readers = var->active_reads;
    for (const VarSlot* slot = var->head; slot != nullptr; slot = slot->next) {
      if (slot->op->is_waiter) continue;
      if (queued++ < kMaxQueuedShown) {
        if (!ahead.empty()) ahead += ", ";
        ahead += op_text(slot->op);
      }
    }
    var->lock.unlock();

    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(var));
    text += step == 0 ? "var " : "; that op waits for var ";
    text += address;
    if (holder != nullptr) {
      text += ", held for writing by " + holder_text;
    } else if (readers > 0) {
      text += ", held by " + std::to_string(readers) + " reading op(s)";
    } else {
      text += step == 0 && !for_write ? ", no earlier write pending" : ", not held";
    }
    if (queued > 0) {
      text += ", " + std::to_string(queued) + " op(s) queued on it (" + ahead +
              (queued > kMaxQueuedShown ? ", ..." : "") + ")";
    }
    if (holder == nullptr) break;
    bool awaiting_completion = false;
    {
      std::lock_guard lock(pending_completions_mutex_);
      awaiting_completion = std::find(pending_completions_.begin(), pending_completions_.end(),
                                      holder) != pending_completions_.end();
    }
    if (awaiting_completion) {
      text += "; that op is async and waits for its Completion to be invoked";
      break;
    }
    if (holder_pending == 0) {
      text += "; that op is running (or its device work is queued)";
      break;
    }
    // The holder waits for other vars: follow the first one it is queued on. (It may finish
    // meanwhile; only pointers are compared here, so a stale answer is the worst case.)
    VarState* next = nullptr;
    for (VarState* candidate : holder_vars) {
      if (candidate == var) continue;
      candidate->lock.lock();
      for (const VarSlot* slot = candidate->head; slot != nullptr; slot = slot->next) {
        if (slot->op == holder) {
          next = candidate;
          break;
        }
      }
      candidate->lock.unlock();
      if (next != nullptr) break;
    }
    if (next == nullptr) {
      // Every var of the op is granted. An op granted all of them at push keeps a non-zero
      // pending count (queue_on_vars skips that atomic update), so this is also how a running
      // op looks: not only one between its last grant and its start, as said here before.
      text += "; that op has every var it needs: it is running, or ready and waiting for a worker";
      break;
    }
    var = next;
  }
  const std::string pending = describe_pending_completions();
  if (!pending.empty()) text += ". " + pending;
  return text;
}

}  // namespace tandem::detail
