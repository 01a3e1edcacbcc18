// Engine's static entry points, the facade that owns an engine core, and the RunContext and
// Completion methods.
#include "tandem/engine.h"

#include <atomic>
#include <mutex>

#include "engine_core.h"
#include "logging.h"
#include "naive_engine.h"
#include "tandem/profiler.h"
#include "threaded_engine.h"

namespace tandem {

namespace {

// Forwards the public interface to a core. On destruction it finishes pending ops; if they do
// not finish within the shutdown timeout the core is leaked (reported), never freed under ops
// that still use it.
class EngineFacade final : public Engine {
 public:
  explicit EngineFacade(detail::EngineCore* core) : core_(core) {}
  ~EngineFacade() override {
    const bool finished = core_->shutdown(core_->config().shutdown_timeout);
    if (writes_profile_) write_profile();
    if (finished) delete core_;
  }

  // For the process-wide engine: honour EngineConfig::profile_path (TANDEM_PROFILE).
  void profile_to_file() {
    if (core_->config().profile_path.empty()) return;
    writes_profile_ = true;
    profiler::start();
  }

  EngineKind kind() const override { return core_->config().kind; }
  const EngineConfig& config() const override { return core_->config(); }
  Var new_var() override { return core_->new_var(); }
  void wait_for_var(Var var) override { core_->wait_for_var(var); }
  void wait_to_write(Var var) override { core_->wait_to_write(var); }
  void wait_all() override { core_->wait_all(); }
  EngineStats stats() const override { return core_->stats(); }

 protected:
  void submit(detail::OpRecord* op, Device device, VarList reads, VarList writes,
              const OpProps& props) override {
    core_->submit(op, device, reads, writes, props);
  }
  void submit_delete(detail::OpRecord* op, Var var) override { core_->submit_delete(op, var); }

 private:
  void write_profile() noexcept {
    const std::string& path = core_->config().profile_path;
    try {
      profiler::stop();
      profiler::dump(path);
      detail::log().info("profile written to {}", path);
    } catch (const std::exception& e) {
      detail::log().error("TANDEM_PROFILE: {}", e.what());
    }
  }

  detail::EngineCore* core_;
  bool writes_profile_ = false;
};

std::unique_ptr<Engine> create_default(const EngineConfig& config) {
  auto engine = Engine::create(config);
  static_cast<EngineFacade*>(engine.get())->profile_to_file();
  return engine;
}

std::mutex default_mutex;
std::unique_ptr<Engine> default_engine;
std::atomic<Engine*> default_pointer{nullptr};

}  // namespace

std::unique_ptr<Engine> Engine::create(const EngineConfig& config) {
  detail::set_log_level(config.log_level);
  detail::EngineCore* core = nullptr;
  if (config.kind == EngineKind::naive) {
    core = new detail::NaiveEngine(config);
  } else {
    core = new detail::ThreadedEngine(config);
  }
  detail::log().debug("created a {} engine", engine_kind_name(config.kind));
  return std::make_unique<EngineFacade>(core);
}

Engine& Engine::get() {
  if (Engine* engine = default_pointer.load(std::memory_order_acquire)) return *engine;
  std::lock_guard lock(default_mutex);
  if (!default_engine) {
    default_engine = create_default(EngineConfig::from_env());
    default_pointer.store(default_engine.get(), std::memory_order_release);
  }
  return *default_engine;
}

void Engine::set_default(const EngineConfig& config) {
  std::lock_guard lock(default_mutex);
  default_pointer.store(nullptr, std::memory_order_release);
  default_engine.reset();  // finishes the old engine's ops
  default_engine = create_default(config);
  default_pointer.store(default_engine.get(), std::memory_order_release);
}

void Engine::set_default(EngineKind kind) {
  EngineConfig config = EngineConfig::from_env();
  config.kind = kind;
  set_default(config);
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
  op_->sink->on_completion_taken();
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
  sink->on_completion_given();
  if (op->completion_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) sink->complete(op);
}

}  // namespace tandem
