// Automatic capture (tandem/auto_capture.h): finding a repeated window of pushes, recording it
// once, and entering later repetitions with the plan resolved from the recording.
#include "auto_capture_state.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "base/logging.h"
#include "graph_recorder.h"

namespace tandem::detail {

constinit thread_local AutoCaptureState* tls_auto_capture TANDEM_FAST_TLS = nullptr;

namespace {

std::uint64_t mix(std::uint64_t hash, std::uint64_t value) {
  // 64-bit FNV-style mixing with a final avalanche per value: cheap and good enough to find
  // candidates (a collision only costs a failed recording, never a wrong result).
  hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2);
  return hash;
}

std::uint64_t shape_hash(const OpRecord* op, Device device, VarList reads, VarList writes,
                         const OpProps& props) {
  std::uint64_t hash = reinterpret_cast<std::uintptr_t>(op->invoke);
  hash = mix(hash, std::hash<Device>()(device));
  hash = mix(hash, reinterpret_cast<std::uintptr_t>(props.name));
  hash = mix(hash, (static_cast<std::uint64_t>(props.queue) << 32) ^
                       static_cast<std::uint32_t>(props.priority) ^
                       (std::uint64_t{props.async_completion} << 40) ^
                       (std::uint64_t{props.no_skip} << 41));
  for (Var var : reads)
    hash = mix(hash, reinterpret_cast<std::uintptr_t>(var.state()) ^ var.generation());
  hash = mix(hash, reads.size());
  for (Var var : writes)
    hash = mix(hash, reinterpret_cast<std::uintptr_t>(var.state()) ^ var.generation());
  return mix(hash, writes.size());
}

bool same_props(const OpProps& a, const OpProps& b) {
  return a.name == b.name && a.queue == b.queue && a.priority == b.priority &&
         a.async_completion == b.async_completion && a.no_skip == b.no_skip;
}

// The same vars in the same order, each still alive (not deleted since the recording: what
// prepare would check).
bool same_live_vars(const std::vector<Var>& recorded, VarList vars) {
  if (recorded.size() != vars.size()) return false;
  const Var* given = vars.begin();
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    if (!(recorded[i] == given[i]) ||
        given[i].state()->generation.load(std::memory_order_relaxed) != given[i].generation())
      return false;
  }
  return true;
}

}  // namespace

AutoCaptureState::AutoCaptureState(Engine& engine, EngineCore& core, AutoCaptureOptions options)
    : engine_(&engine), core_(core), options_(options) {
  options_.min_window_ops = std::max<std::size_t>(options_.min_window_ops, 1);
  options_.max_window_ops = std::max(options_.max_window_ops, options_.min_window_ops);
}

AutoCaptureState::~AutoCaptureState() {
  if (closed()) return;  // entered when it closed
  try {
    flush();
  } catch (...) {
    // flush enters validated pushes: only running out of memory can throw here.
  }
}

void AutoCaptureState::close_after_flush() {
  try {
    flush();
  } catch (...) {
    // As in the destructor: only running out of memory can throw here.
  }
  closed_.store(true, std::memory_order_release);
}

void AutoCaptureState::end_with_engine() {
  close_after_flush();
  engine_ended_.store(true, std::memory_order_release);
}

namespace {

// Every open automatic capture, for the engines to close theirs when they end.
std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<AutoCaptureState*>& registry() {
  static std::vector<AutoCaptureState*> states;
  return states;
}
void register_state(AutoCaptureState* state) {
  const std::lock_guard lock(registry_mutex());
  registry().push_back(state);
}
void unregister_state(AutoCaptureState* state) noexcept {
  const std::lock_guard lock(registry_mutex());
  std::erase(registry(), state);
}
// Deletes `state` and clears this thread's hook (the owner thread only).
void forget_on_owner(AutoCaptureState* state) noexcept {
  tls_auto_capture = nullptr;
  --tls_push_hooks;
  unregister_state(state);
  delete state;
}

}  // namespace

void drop_closed_auto_capture() noexcept {
  if (tls_auto_capture != nullptr && tls_auto_capture->closed()) forget_on_owner(tls_auto_capture);
}

void end_auto_captures(const Engine* engine) noexcept {
  const std::lock_guard lock(registry_mutex());
  for (AutoCaptureState* state : registry()) {
    if (state->serves(engine) && !state->closed()) state->end_with_engine();
  }
}

void AutoCaptureState::push(OpRecord* op, Device device, VarList reads, VarList writes,
                            const OpProps& props) {
  ++stats_.pushes_seen;
  if (device.is_accelerator()) [[unlikely]] {
    // Not done: windows with accelerator ops (under TSan, a sim op's host work in an entered
    // window crashed and was not understood in time). Such a push ends any window, eagerly.
    if (mode_ != Mode::detecting || position_ != 0) fall_back();
    restart_detection();
    core_.submit(op, device, reads, writes, props);
    return;
  }
  if (mode_ == Mode::matching) [[likely]] {
    match(op, device, reads, writes, props);
    return;
  }
  const std::uint64_t hash = shape_hash(op, device, reads, writes, props);
  if (mode_ == Mode::recording) {
    record(op, device, reads, writes, props, hash);
    return;
  }
  core_.submit(op, device, reads, writes, props);  // throws for bad input, as an eager push
  detect(hash);
}

void AutoCaptureState::detect(std::uint64_t hash) {
  if (hashes_.size() >= 2 * options_.max_window_ops) restart_detection();
  const auto n = static_cast<std::uint32_t>(hashes_.size());
  if (period_ > 0 && hashes_[n - period_] == hash) {
    ++repeated_;
  } else if (auto seen = last_seen_.find(hash); seen != last_seen_.end()) {
    period_ = n - seen->second;
    repeated_ = 1;
  } else {
    period_ = 0;
    repeated_ = 0;
  }
  last_seen_[hash] = n;
  hashes_.push_back(hash);
  if (period_ == 0 || repeated_ < period_) return;
  // The last `period_` pushes repeat the ones before: record the next window, a whole number
  // of periods long, starting at the phase the next push has.
  const std::size_t periods = (options_.min_window_ops + period_ - 1) / period_;
  const std::size_t length = periods * period_;
  if (length > options_.max_window_ops) {
    restart_detection();
    return;
  }
  expected_.resize(length);
  for (std::size_t k = 0; k < length; ++k) expected_[k] = hashes_[n + 1 - period_ + k % period_];
  records_.clear();
  shapes_.clear();
  position_ = 0;
  mode_ = Mode::recording;
}

void AutoCaptureState::record(OpRecord* op, Device device, VarList reads, VarList writes,
                              const OpProps& props, std::uint64_t hash) {
  if (hash != expected_[position_]) {
    fall_back();
    core_.submit(op, device, reads, writes, props);
    detect(hash);
    return;
  }
  const auto invoke = op->invoke;
  try {
    core_.prepare_recorded(op, device, reads, writes, props);  // discards `op` when it throws
  } catch (...) {
    fall_back();
    throw;
  }
  records_.push_back(op);
  shapes_.push_back(PushShape{
      invoke, device, props, {reads.begin(), reads.end()}, {writes.begin(), writes.end()}});
  if (++position_ < expected_.size()) return;
  std::vector<OpRecord*> ops = std::move(records_);
  records_.clear();
  position_ = 0;
  try {
    plan_ = resolve_window(core_, *engine_, std::move(ops), {}, {});
  } catch (...) {
    // resolve_window's plan frees the records when it fails: nothing was entered, so the
    // window is lost; report it like an allocation failure of the pushes.
    restart_detection();
    throw;
  }
  mode_ = Mode::matching;
  // The recorded window runs its own closures: each node is its own body.
  std::shared_ptr<OpRecord*[]> own = new_bodies();
  std::copy(plan_->nodes.begin(), plan_->nodes.end(), own.get());
  bodies_ = new_bodies();
  enter_window(std::move(own));
}

bool AutoCaptureState::matches(const PushShape& shape, const OpRecord* op, Device device,
                               VarList reads, VarList writes, const OpProps& props) const {
  return op->invoke == shape.invoke && device == shape.device && same_props(props, shape.props) &&
         same_live_vars(shape.reads, reads) && same_live_vars(shape.writes, writes);
}

void AutoCaptureState::match(OpRecord* op, Device device, VarList reads, VarList writes,
                             const OpProps& props) {
  if (!matches(shapes_[position_], op, device, reads, writes, props)) [[unlikely]] {
    fall_back();
    const std::uint64_t hash = shape_hash(op, device, reads, writes, props);
    core_.submit(op, device, reads, writes, props);
    detect(hash);
    return;
  }
  bodies_[position_] = op;
  if (++position_ < shapes_.size()) return;
  position_ = 0;
  std::shared_ptr<OpRecord*[]> bodies = std::move(bodies_);
  bodies_ = new_bodies();
  enter_window(std::move(bodies));
}

std::shared_ptr<OpRecord* []> AutoCaptureState::new_bodies() {
  // The array goes when the last unit of its window has run: that is when the window's ops
  // have left the engine (see wait_for_room).
  const auto size = static_cast<std::int64_t>(shapes_.size());
  return std::shared_ptr<OpRecord*[]>(new OpRecord*[shapes_.size()],
                                      [outstanding = outstanding_, size](OpRecord** bodies) {
                                        outstanding->fetch_sub(size, std::memory_order_release);
                                        delete[] bodies;
                                      });
}

void AutoCaptureState::wait_for_room() {
  // A window counts as one op per unit for the engine's own backpressure, so the ops buffered in
  // windows are bounded here: past max_ops_in_flight of them, wait for windows to finish. As
  // for a blocked push, not for good: an op of a window may wait for a Completion that this
  // thread will invoke once it returns.
  const auto bound =
      std::min<std::int64_t>(static_cast<std::int64_t>(core_.config().max_ops_in_flight),
                             static_cast<std::int64_t>(2 * shapes_.size()));
  if (bound == 0 || outstanding_->load(std::memory_order_acquire) <= bound) return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
  while (outstanding_->load(std::memory_order_acquire) > bound &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void AutoCaptureState::enter_window(std::shared_ptr<OpRecord*[]> bodies) {
  ++stats_.windows_entered;
  stats_.ops_in_windows += shapes_.size();
  wait_for_room();
  outstanding_->fetch_add(static_cast<std::int64_t>(shapes_.size()), std::memory_order_relaxed);
  core_.replay_window(plan_, std::move(bodies));
}

void AutoCaptureState::flush() {
  if (position_ == 0) return;
  ++stats_.flushes;
  enter_buffered();
}

void AutoCaptureState::enter_buffered() {
  const std::uint32_t buffered = position_;
  position_ = 0;
  if (mode_ == Mode::recording) {
    // Prepared records: entered as prepared ops, in push order. The window is incomplete, so
    // there is nothing to resolve: detection starts again.
    for (std::uint32_t k = 0; k < buffered; ++k) core_.submit_prepared(records_[k]);
    records_.clear();
    shapes_.clear();
    restart_detection();
    return;
  }
  for (std::uint32_t k = 0; k < buffered; ++k) {
    const PushShape& shape = shapes_[k];
    core_.submit(bodies_[k], shape.device, shape.reads, shape.writes, shape.props);
  }
}

void AutoCaptureState::fall_back() {
  ++stats_.fallbacks;
  enter_buffered();
  plan_.reset();
  if (bodies_ != nullptr) {
    // Never entered: balance what its release will count out.
    outstanding_->fetch_add(static_cast<std::int64_t>(shapes_.size()), std::memory_order_relaxed);
    bodies_.reset();
  }
  shapes_.clear();
  restart_detection();
}

void AutoCaptureState::restart_detection() {
  mode_ = Mode::detecting;
  hashes_.clear();
  last_seen_.clear();
  period_ = 0;
  repeated_ = 0;
  position_ = 0;
}

}  // namespace tandem::detail

namespace tandem {

AutoCapture::AutoCapture(Engine& engine, AutoCaptureOptions options) {
  detail::drop_closed_auto_capture();  // one closed from another thread or by its engine's end
  if (detail::tls_auto_capture != nullptr) {
    throw Error(
        "tandem: AutoCapture opened while another one is open on this thread: one automatic "
        "capture per thread; close the first one (or keep using it)");
  }
  if (detail::tls_graph_recorder != nullptr) {
    throw Error("tandem: AutoCapture opened inside a capture: open it outside tandem::capture");
  }
  if (engine.kind() == EngineKind::naive) return;  // runs every push inline: nothing to gain
  state_ = new detail::AutoCaptureState(engine, detail::core_of(engine), options);
  detail::register_state(state_);
  detail::tls_auto_capture = state_;
  ++detail::tls_push_hooks;
}

AutoCapture::~AutoCapture() {
  if (state_ == nullptr) return;
  const bool on_owner = std::this_thread::get_id() == state_->owner();
  if (state_->engine_ended()) {
    // The engine entered the buffered pushes when it ended; nothing is lost or touched.
    detail::log().error(
        "tandem: an AutoCapture outlived its engine (destroy it first): the engine entered its "
        "buffered pushes when it ended");
    if (on_owner && detail::tls_auto_capture == state_) detail::forget_on_owner(state_);
    return;  // else the owner thread forgets it at its next push or AutoCapture
  }
  if (!on_owner) {
    // The owner thread's hook cannot be reset from here: close the state (its pushes entered)
    // and let the owner drop it, so that it can open another.
    detail::log().error(
        "tandem: an AutoCapture was destroyed on another thread than the one that opened it; "
        "its buffered pushes were entered, and the opening thread may open a new one");
    state_->close_after_flush();
    return;
  }
  detail::forget_on_owner(state_);  // flushes
}

void AutoCapture::flush() {
  if (state_ != nullptr && !state_->closed()) state_->flush();
}

AutoCaptureStats AutoCapture::stats() const {
  return state_ != nullptr ? state_->stats() : AutoCaptureStats{};
}

}  // namespace tandem
