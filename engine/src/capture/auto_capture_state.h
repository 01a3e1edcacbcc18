// AutoCaptureState: the automatic capture open on one thread (tandem/auto_capture.h). The
// engine facade (engine.cc) hands it this thread's pushes while `auto_capturing(engine)` is
// non-null, and asks it to flush before every sync point of this thread.
//
// Modes, in the order a repeated loop goes through them:
// - detecting: every push is entered at once (core.submit); its shape hash is kept to find a
//   period p such that the last p pushes repeat the p before them;
// - recording: the next window's pushes are prepared as a capture records them and buffered;
//   when the window is complete it is resolved into a GraphPlan and entered with its own
//   closures;
// - matching: each push is compared with the plan's shape at its position and buffered; a
//   complete window is entered as the plan's units, running the closures buffered this time.
// Invariant: the buffered pushes (records_ or bodies_, [0, position_)) are exactly the pushes
// of this thread not yet entered, in push order; every way out of a mode enters them first.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/fast_tls.h"
#include "captured_graph.h"
#include "engine_core.h"
#include "tandem/auto_capture.h"

namespace tandem::detail {

// What must be equal for a push to take the place of a recorded one.
struct PushShape {
  void (*invoke)(void* callable, RunContext& ctx) = nullptr;
  Device device{};
  OpProps props{};
  std::vector<Var> reads, writes;
};

class AutoCaptureState {
 public:
  AutoCaptureState(Engine& engine, EngineCore& core, AutoCaptureOptions options);
  ~AutoCaptureState();
  AutoCaptureState(const AutoCaptureState&) = delete;
  AutoCaptureState& operator=(const AutoCaptureState&) = delete;

  // Takes `op` (also when it throws, like submit).
  void push(OpRecord* op, Device device, VarList reads, VarList writes, const OpProps& props);
  // Enters every buffered push, one by one in push order; keeps the plan.
  void flush();
  bool serves(const Engine* engine) const { return engine == engine_; }
  const AutoCaptureStats& stats() const { return stats_; }

  // The thread that opened it: the only one that pushes through it.
  std::thread::id owner() const { return owner_; }
  // Closed, its pushes entered: its AutoCapture was destroyed on another thread, or its engine
  // ended first (end_with_engine). The owner thread drops it at its next push, sync point or
  // AutoCapture (drop_closed_auto_capture), so that it can open another.
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  void close_after_flush();
  // Its engine is being destroyed: enters the buffered pushes while the engine can still run
  // them, then closes.
  void end_with_engine();
  bool engine_ended() const { return engine_ended_.load(std::memory_order_acquire); }

 private:
  enum class Mode : std::uint8_t { detecting, recording, matching };

  void detect(std::uint64_t hash);
  void record(OpRecord* op, Device device, VarList reads, VarList writes, const OpProps& props,
              std::uint64_t hash);
  void match(OpRecord* op, Device device, VarList reads, VarList writes, const OpProps& props);
  bool matches(const PushShape& shape, const OpRecord* op, Device device, VarList reads,
               VarList writes, const OpProps& props) const;
  // Enters the complete window: the plan's units, with `bodies` (null: the plan's own records).
  void enter_window(std::shared_ptr<OpRecord*[]> bodies);
  // An array for a window's bodies whose end counts the window's ops out of `outstanding_`.
  std::shared_ptr<OpRecord*[]> new_bodies();
  void wait_for_room();
  // Enters what is buffered one by one, in push order (recording: then detects again).
  void enter_buffered();
  // enter_buffered, then drops the plan and detects again.
  void fall_back();
  void restart_detection();

  Engine* engine_;
  EngineCore& core_;
  std::thread::id owner_ = std::this_thread::get_id();
  std::atomic<bool> closed_{false};
  std::atomic<bool> engine_ended_{false};
  AutoCaptureOptions options_;
  AutoCaptureStats stats_;
  Mode mode_ = Mode::detecting;

  // Detecting: the hashes since the last restart, where each was last seen, the candidate
  // period and how many pushes in a row have repeated it.
  std::vector<std::uint64_t> hashes_;
  std::unordered_map<std::uint64_t, std::uint32_t> last_seen_;
  std::uint32_t period_ = 0;
  std::uint32_t repeated_ = 0;

  // Recording and matching: the window's expected hashes (recording) and shapes (matching).
  std::vector<std::uint64_t> expected_;
  std::vector<PushShape> shapes_;
  std::vector<OpRecord*> records_;  // recording: prepared, buffered
  std::shared_ptr<GraphPlan> plan_;
  std::shared_ptr<OpRecord*[]> bodies_;  // matching: the buffered records, unprepared
  std::uint32_t position_ = 0;
  // Ops of entered windows still in the engine (shared with the windows' body arrays).
  std::shared_ptr<std::atomic<std::int64_t>> outstanding_ =
      std::make_shared<std::atomic<std::int64_t>>(0);
};

extern constinit thread_local AutoCaptureState* tls_auto_capture TANDEM_FAST_TLS;
// Forgets this thread's closed automatic capture (its pushes were entered when it closed).
void drop_closed_auto_capture() noexcept;
// Called by an engine being destroyed: every automatic capture still open on it enters its
// pushes now and closes (an AutoCapture that outlives its engine then does nothing).
void end_auto_captures(const Engine* engine) noexcept;
// The automatic capture of this thread for `engine`, unless the push comes from inside an op.
inline AutoCaptureState* auto_capturing(const Engine* engine) noexcept {
  AutoCaptureState* state = tls_auto_capture;
  if (state == nullptr || current_op() != nullptr) return nullptr;
  if (state->closed()) [[unlikely]] {
    drop_closed_auto_capture();
    return nullptr;
  }
  return state->serves(engine) ? state : nullptr;
}
// Enters the pushes this thread has buffered for `engine`; call before any sync point.
inline void flush_auto_capture(const Engine* engine) {
  if (AutoCaptureState* state = auto_capturing(engine); state != nullptr) [[unlikely]]
    state->flush();
}

}  // namespace tandem::detail
