// Vars that outlive their engine: replacing the process-wide engine is refused while its vars
// are alive, and a private engine destroyed before its vars hands them to a stand-in on which
// they can still be deleted (safely, inline).
#include <atomic>
#include <string>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::Engine;
using tandem::EngineConfig;
using tandem::EngineKind;
using tandem::Var;
using namespace tandem_test;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("set_default refuses while vars of the process-wide engine are alive, naming how many") {
  Engine::set_default(test_config(EngineKind::threaded));
  Engine& engine = Engine::get();
  Var a = engine.new_var(), b = engine.new_var();  // deleted by the test
  engine.push([] {}, cpu(), {}, {a, b});
  const std::string refused = error_of([] { Engine::set_default(EngineKind::naive); });
  INFO("message: ", refused);
  CHECK(contains(refused, "Engine::set_default"));
  CHECK(contains(refused, "2 live vars"));
  // Nothing changed: the same engine, its vars still usable.
  CHECK(&Engine::get() == &engine);
  CHECK(engine.kind() == EngineKind::threaded);
  CHECK_NOTHROW(engine.wait_for_var(a));
  engine.delete_var(a);
  engine.delete_var(b);
  CHECK_NOTHROW(Engine::set_default(EngineKind::naive));
  CHECK(Engine::get().kind() == EngineKind::naive);
  Engine::set_default(EngineConfig{});
}

TEST_CASE("vars that outlive their private engine are deleted safely on its stand-in") {
  const EngineKind kind = each_engine_kind();
  std::atomic<int> value{0};
  std::atomic<bool> deleted{false};
  Var survivor;
  {
    auto engine = Engine::create(test_config(kind));
    survivor = engine->new_var();
    CHECK(&Engine::owner(survivor) == engine.get());
    engine->push([&value] { value = 3; }, cpu(), {}, {survivor});
  }  // destroyed with one live var: finishes its ops, logs an error
  CHECK(value.load() == 3);
  Engine& stand_in = Engine::owner(survivor);
  CHECK(stand_in.kind() == EngineKind::naive);
  CHECK(stand_in.stats().vars_alive == 1);
  // The stand-in runs what is pushed on the var inline, the deleter included.
  stand_in.push([&value] { value = value + 1; }, cpu(), {survivor}, {survivor});
  CHECK(value.load() == 4);
  stand_in.delete_var(survivor, [&deleted] { deleted = true; });
  CHECK(deleted.load());
  CHECK(stand_in.stats().vars_alive == 0);
  CHECK_THROWS_AS(Engine::owner(survivor), tandem::Error);  // deleted now
}

TEST_CASE("Engine::owner names the engine of a var and refuses invalid or deleted vars") {
  auto engine = make_engine(EngineKind::threaded);
  Var v = engine->new_var();  // deleted by the test
  CHECK(&Engine::owner(v) == &*engine);
  engine->delete_var(v);
  CHECK(contains(error_of([&] { Engine::owner(v); }), "deleted"));
  CHECK(contains(error_of([] { Engine::owner(Var{}); }), "invalid"));
}

}  // namespace
