// Engine's static entry points (the process-wide engine's life, at exit included), the facade
// that owns an engine core, and the RunContext and Completion methods.
#include "tandem/engine.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "base/logging.h"
#include "capture/auto_capture_state.h"
#include "capture/captured_graph.h"
#include "capture/graph_recorder.h"
#include "engine_core.h"
#include "naive_engine.h"
#include "tandem/detail/fault_injection.h"
#include "tandem/profiler.h"
#include "threaded_engine.h"
#include "var_state.h"

namespace tandem {

namespace {

// Forwards the public interface to a core, and owns the core and the VarOwner of its vars.
//
// Retiring (`go_inline`) finishes every op, writes the profile, joins the core's threads and
// puts a naive core over the same vars in its place: later calls then run inline on the
// calling thread and touch no thread, queue or object that process exit may have destroyed.
// The core pointer is atomic only so that this swap is well-defined; a relaxed load costs
// what a plain load does.
//
// Destruction: with no live var, the core and the VarOwner go with the facade. With live vars
// (a private engine destroyed before its arrays), the vars are handed to a stand-in: a facade
// over a naive core that is never destroyed, which Engine::owner() returns for them, so that
// deleting them later runs their deleters inline instead of touching freed memory.
class EngineFacade final : public Engine {
 public:
  EngineFacade(detail::EngineCore* core, detail::VarOwner* owner) : core_(core), owner_(owner) {
    core->set_var_owner(*owner);
    owner->engine.store(this, std::memory_order_release);
  }
  ~EngineFacade() override {
    // Automatic captures still open on this engine enter their buffered pushes now, while the
    // engine can run them (they would be lost, and their AutoCapture would touch freed memory).
    detail::end_auto_captures(this);
    detail::EngineCore* core = core_.load(std::memory_order_relaxed);
    const bool finished = finish(*core);
    if (owner_->live_vars.load(std::memory_order_relaxed) == 0) {
      delete owner_;
    } else {
      hand_vars_to_stand_in(core->config());
    }
    if (finished) delete core;
    delete retired_core_;
  }

  // For the process-wide engine: honour EngineConfig::profile_path (TANDEM_PROFILE).
  void profile_to_file() {
    if (core().config().profile_path.empty()) return;
    writes_profile_ = true;
    profiler::start();
  }

  // See the class comment. Not to be called while other threads use the engine; the retired
  // core is kept (never freed), since a thread that does would still be inside it.
  void go_inline() noexcept {
    detail::EngineCore* core = core_.load(std::memory_order_relaxed);
    if (core->config().kind == EngineKind::naive && !writes_profile_) return;  // inline already
    finish(*core);
    try {
      detail::EngineCore* inline_core = make_inline_core(core->config());
      inline_core->set_var_owner(*owner_);
      core_.store(inline_core, std::memory_order_release);
      retired_core_ = core;
    } catch (...) {
      detail::log().error("engine #{}: no memory to go inline at exit", owner_->engine_number);
    }
  }

  std::int64_t vars_alive() const { return owner_->live_vars.load(std::memory_order_relaxed); }

  EngineKind kind() const override { return core().config().kind; }
  const EngineConfig& config() const override { return core().config(); }
  Var new_var() override {
    const Var var = core().new_var();
    if (detail::GraphRecorder* recorder = detail::recording(this)) [[unlikely]]
      recorder->note_new_var(var);
    return var;
  }
  void wait_for_var(Var var) override {
    check_not_capturing("wait_for_var");
    core().wait_for_var(var, detail::kNoDeadline);
  }
  void wait_to_write(Var var) override {
    check_not_capturing("wait_to_write");
    core().wait_to_write(var, detail::kNoDeadline);
  }
  void wait_all() override {
    check_not_capturing("wait_all");
    core().wait_all(detail::kNoDeadline);
  }
  void wait_for_var(Var var, std::chrono::milliseconds timeout) override {
    check_not_capturing("wait_for_var");
    core().wait_for_var(var, detail::deadline_after(timeout));
  }
  void wait_to_write(Var var, std::chrono::milliseconds timeout) override {
    check_not_capturing("wait_to_write");
    core().wait_to_write(var, detail::deadline_after(timeout));
  }
  void wait_all(std::chrono::milliseconds timeout) override {
    check_not_capturing("wait_all");
    core().wait_all(detail::deadline_after(timeout));
  }
  EngineStats stats() const override { return core().stats(); }
  int cpu_workers() const override { return core().cpu_workers(); }
  int priority_workers() const override { return core().priority_workers(); }
  int worker_lanes() const override { return core().worker_lanes(); }

 protected:
  void submit(detail::OpRecord* op, Device device, VarList reads, VarList writes,
              const OpProps& props) override {
    // A capture or an automatic capture open on this thread (tandem/graph.h,
    // tandem/auto_capture.h): one TLS load and a test here, the rest out of line, so the common
    // push stays a tail call.
    if (detail::tls_push_hooks != 0) [[unlikely]]
      return submit_while_capturing(op, device, reads, writes, props);
    core().submit(op, device, reads, writes, props);
  }
  void submit_delete(detail::OpRecord* op, Var var) override {
    if (detail::GraphRecorder* recorder = detail::recording(this)) [[unlikely]]
      return recorder->record_delete(op, var);
    flush_auto_capture(op);
    core().submit_delete(op, var);
  }

 private:
  friend detail::EngineCore& detail::core_of(Engine& engine);

  // Records the push when the capture is on this engine, or hands it to the automatic capture
  // on this engine; other engines' pushes go through.
  [[gnu::cold, gnu::noinline]] void submit_while_capturing(detail::OpRecord* op, Device device,
                                                           VarList reads, VarList writes,
                                                           const OpProps& props) {
    if (detail::GraphRecorder* recorder = detail::recording(this))
      return recorder->record(core(), op, device, reads, writes, props);
    if (detail::AutoCaptureState* state = detail::auto_capturing(this))
      return state->push(op, device, reads, writes, props);
    core().submit(op, device, reads, writes, props);
  }
  // Enters this thread's buffered pushes (tandem/auto_capture.h) before a sync point; `op`, if
  // given, is freed when that throws.
  void flush_auto_capture(detail::OpRecord* op = nullptr) {
    if (detail::tls_auto_capture == nullptr || detail::current_op() != nullptr) [[likely]]
      return;
    try {
      detail::flush_auto_capture(this);
    } catch (...) {
      if (op != nullptr) {
        op->destroy_callable();
        detail::release_op_record(op);
      }
      throw;
    }
  }
  detail::EngineCore& core() const { return *core_.load(std::memory_order_relaxed); }

  // A wait inside a capture would wait for ops that are recorded, not run.
  void check_not_capturing(const char* call) {
    flush_auto_capture();
    if (detail::recording(this) != nullptr) [[unlikely]] {
      throw Error(std::string("tandem: ") + call +
                  " inside a capture: the pushes of a captured window are recorded, not run, "
                  "so the wait could never end; wait after CapturedGraph::replay, outside the "
                  "capture");
    }
  }

  // See the class comment: destroyed with live vars.
  void hand_vars_to_stand_in(const EngineConfig& config) noexcept {
    detail::log().error(
        "an engine (#{}) was destroyed while {} of its vars were alive (arrays, random "
        "generators, or vars not passed to delete_var); they now belong to a synchronous "
        "stand-in engine that runs their deletion inline and is never freed. Destroy arrays "
        "and delete vars before their engine.",
        owner_->engine_number, owner_->live_vars.load(std::memory_order_relaxed));
    owner_->retired.store(true, std::memory_order_release);
    try {
      keep_forever(new EngineFacade(make_inline_core(config), owner_));
    } catch (...) {
      detail::log().error("engine #{}: no memory for a stand-in; its vars are leaked",
                          owner_->engine_number);
    }
  }

  // Stand-ins are never freed (a var may be dropped at any time, even at exit), and stay
  // reachable from this list, so that leak checkers see them as the process-wide objects they
  // are rather than as leaks.
  static void keep_forever(Engine* stand_in) {
    static std::mutex mutex;
    static auto* stand_ins = new std::vector<Engine*>();
    std::lock_guard lock(mutex);
    stand_ins->push_back(stand_in);
  }

  // A naive core with `config`'s settings: the synchronous stand-in for a retired core.
  static detail::EngineCore* make_inline_core(EngineConfig config) {
    config.kind = EngineKind::naive;
    config.profile_path.clear();
    return new detail::NaiveEngine(std::move(config));
  }

  // Finishes `core`'s ops and device work and joins its threads, then writes the profile;
  // false if ops were still running after the shutdown timeout (the core must then be leaked).
  bool finish(detail::EngineCore& core) noexcept {
    const bool finished = core.shutdown(core.config().shutdown_timeout);
    if (writes_profile_) write_profile(core.config().profile_path);
    writes_profile_ = false;
    return finished;
  }

  static void write_profile(const std::string& path) noexcept {
    try {
      profiler::stop();
      profiler::dump(path);
      detail::log().info("profile written to {}", path);
    } catch (const std::exception& e) {
      detail::log().error("TANDEM_PROFILE: {}", e.what());
    }
  }

  std::atomic<detail::EngineCore*> core_;
  detail::VarOwner* owner_;
  detail::EngineCore* retired_core_ = nullptr;  // after go_inline
  bool writes_profile_ = false;
};

detail::EngineCore* make_core(const EngineConfig& config) {
  if (config.kind == EngineKind::naive) return new detail::NaiveEngine(config);
  return new detail::ThreadedEngine(config);
}

// A facade over a new core of `config`'s kind. The core is made first and each part is owned
// until the facade owns it: a core whose construction throws (a bad TANDEM_ setting read
// there) leaks nothing.
std::unique_ptr<EngineFacade> new_engine_facade(const EngineConfig& config) {
  std::unique_ptr<detail::EngineCore> core(make_core(config));
  auto owner = std::make_unique<detail::VarOwner>();
  auto engine = std::make_unique<EngineFacade>(core.get(), owner.get());
  core.release();
  owner.release();
  return engine;
}

// The process-wide engine. It is never destroyed by a static destructor: arrays at namespace
// scope and objects whose destructors use the engine may outlive any static, so an exit hook
// (registered when the first one is created, hence run after the destructors of every object
// constructed before that) finishes its work and makes it inline instead; see go_inline.
// Users destroyed after the hook, or that first use the engine then, get an inline engine.
std::mutex default_mutex;                // trivially destructible: safe at any time
EngineFacade* default_engine = nullptr;  // guarded by default_mutex; leaked at exit
std::atomic<Engine*> default_pointer{nullptr};
bool exit_hook_registered = false;  // guarded by default_mutex
bool exiting = false;               // guarded by default_mutex: the hook has run

void finish_default_engine_at_exit() {
  std::lock_guard lock(default_mutex);
  exiting = true;
  if (default_engine != nullptr) default_engine->go_inline();
}

EngineFacade* create_default(const EngineConfig& config) {
  detail::set_log_level(config.log_level);
  // Test-only (TANDEM_FAULTS): armed with the process-wide engine, before its first op.
  if (!config.faults.empty()) testing::arm_faults(testing::parse_fault_plan(config.faults));
  auto* engine = new_engine_facade(config).release();
  engine->profile_to_file();
  if (exiting) engine->go_inline();
  if (!exit_hook_registered) {
    exit_hook_registered = true;
    if (std::atexit(finish_default_engine_at_exit) != 0) {
      detail::log().warn("could not register the engine's exit hook");
    }
  }
  return engine;
}

}  // namespace

namespace detail {

EngineCore& core_of(Engine& engine) {
  // Engine's constructor is protected and EngineFacade is its only implementation.
  return static_cast<EngineFacade&>(engine).core();
}

VarOwner::VarOwner() : engine_number(next_engine_number()) {}

std::uint64_t VarOwner::next_engine_number() {
  static constinit std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

std::unique_ptr<Engine> Engine::create(const EngineConfig& config) {
  detail::set_log_level(config.log_level);
  std::unique_ptr<Engine> engine = new_engine_facade(config);
  detail::log().debug("created a {} engine", engine_kind_name(config.kind));
  return engine;
}

Engine& Engine::get() {
  if (Engine* engine = default_pointer.load(std::memory_order_acquire)) return *engine;
  std::lock_guard lock(default_mutex);
  if (default_engine == nullptr) {
    default_engine = create_default(EngineConfig::from_env());
    default_pointer.store(default_engine, std::memory_order_release);
  }
  return *default_engine;
}

void Engine::set_default(const EngineConfig& config) {
  std::lock_guard lock(default_mutex);
  if (default_engine != nullptr) {
    if (const std::int64_t alive = default_engine->vars_alive(); alive > 0) {
      throw Error("tandem: Engine::set_default: the process-wide engine still has " +
                  std::to_string(alive) +
                  " live vars (arrays, random generators, or vars from new_var not yet passed "
                  "to delete_var); replacing it would leave them without an engine. Drop them "
                  "first (with the front end, use nd::set_default_engine), or use a private "
                  "engine (Engine::create) beside it");
    }
  }
  default_pointer.store(nullptr, std::memory_order_release);
  delete default_engine;  // finishes the old engine's ops
  default_engine = nullptr;
  default_engine = create_default(config);
  default_pointer.store(default_engine, std::memory_order_release);
}

void Engine::set_default(EngineKind kind) {
  EngineConfig config = EngineConfig::from_env();
  config.kind = kind;
  set_default(config);
}

Engine& Engine::owner(Var var) {
  if (!var.valid()) throw Error("tandem: Engine::owner of an invalid (default-constructed) var");
  detail::VarState* state = var.state();
  detail::VarOwner* owner = state->owner.load(std::memory_order_acquire);
  if (owner == nullptr || state->generation.load(std::memory_order_relaxed) != var.generation()) {
    throw Error(
        "tandem: Engine::owner of a var that was deleted (delete_var); a var must not be "
        "used after delete_var");
  }
  return *owner->engine.load(std::memory_order_acquire);
}

namespace {

[[noreturn, gnu::noinline, gnu::cold]] void throw_no_owner(bool valid) {
  if (!valid) throw Error("tandem: Engine::owner of an invalid (default-constructed) var");
  throw Error(
      "tandem: Engine::owner of a var that was deleted (delete_var); a var must not be used "
      "after delete_var");
}

}  // namespace

// owner() with its errors out of line: the front end asks it once or twice per op.
Engine* Engine::owner_if_alive(Var var) {
  if (!var.valid()) [[unlikely]]
    throw_no_owner(false);
  detail::VarState* state = var.state();
  detail::VarOwner* owner = state->owner.load(std::memory_order_acquire);
  if (owner == nullptr || state->generation.load(std::memory_order_relaxed) != var.generation())
      [[unlikely]]
    throw_no_owner(true);
  if (owner->retired.load(std::memory_order_acquire)) [[unlikely]]
    return nullptr;
  return owner->engine.load(std::memory_order_acquire);
}

// --- RunContext and Completion -----------------------------------------------------------------

Device RunContext::device() const {
  return op_->device;
}

Stream* RunContext::stream() const {
  return op_->stream;
}

const char* RunContext::op_name() const {
  return op_->props.name;
}

Completion RunContext::take_completion() {
  if (!op_->props.async_completion) {
    throw Error(std::string("tandem: op '") + op_->props.name +
                "' called take_completion but was not pushed with async_completion");
  }
  if (op_->completion_taken) {
    throw Error(std::string("tandem: op '") + op_->props.name + "' took its completion twice");
  }
  op_->completion_taken = true;
  op_->completion_refs.store(2, std::memory_order_relaxed);
  op_->sink->on_completion_taken(op_);
  return Completion(op_);
}

Completion& Completion::operator=(Completion&& other) noexcept {
  if (this != &other) {
    if (op_ != nullptr) fail(std::make_exception_ptr(Error("completion dropped (overwritten)")));
    op_ = other.op_;
    other.op_ = nullptr;
  }
  return *this;
}

Completion::~Completion() {
  if (op_ != nullptr) {
    finish(
        std::make_exception_ptr(Error("the op's Completion was destroyed without being invoked")));
  }
}

void Completion::finish(std::exception_ptr error) {
  detail::OpRecord* op = op_;
  if (op == nullptr) throw Error("tandem: a Completion was invoked twice (or after a move)");
  op_ = nullptr;
  op->completion_error = std::move(error);
  detail::CompletionSink* sink =
      op->sink;  // the record may be recycled once its reference is dropped
  sink->on_completion_given(op);
  if (op->completion_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) sink->complete(op);
}

}  // namespace tandem
