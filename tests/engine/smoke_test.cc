#include <doctest/doctest.h>

#include <tandem/engine.h>
#include <atomic>

TEST_CASE("smoke: a chain of writes runs in push order") {
  auto engine = tandem::Engine::create(tandem::EngineConfig{});
  tandem::Var v = engine->new_var();
  int value = 0;
  for (int i = 0; i < 1000; ++i) {
    engine->push(
        [&value, i] {
          CHECK(value == i);
          value = i + 1;
        },
        tandem::cpu(), {}, {v});
  }
  engine->wait_for_var(v);
  CHECK(value == 1000);
  engine->wait_all();
}
