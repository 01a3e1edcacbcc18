// Vars are checked where they are passed: a var used, waited on or deleted after delete_var,
// or passed to an engine that did not create it, makes the call throw tandem::Error naming the
// call and the var, and nothing is queued.
#include <atomic>
#include <string>
#include <unordered_map>
#include <vector>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineKind;
using tandem::Var;
using namespace tandem_test;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("a push on a deleted var throws naming the op and the var, and runs nothing") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var kept = engine.var();
  Var gone = engine->new_var();  // deleted by the test
  engine->delete_var(gone);
  const std::uint64_t pushed = engine->stats().ops_pushed;
  std::atomic<bool> ran{false};
  const std::string as_read = error_of([&] {
    engine->push([&ran] { ran = true; }, cpu(), {kept, gone}, {kept});
  });
  INFO("message: ", as_read);
  CHECK(contains(as_read, "push of op 'op'"));
  CHECK(contains(as_read, "read set, at position 1"));
  CHECK(contains(as_read, "was deleted by delete_var"));
  CHECK(contains(as_read, "generation"));
  const std::string as_write =
      error_of([&] { engine->push([&ran] { ran = true; }, cpu(), {}, {gone}, {.name = "w"}); });
  CHECK(contains(as_write, "push of op 'w': its write set, at position 0"));
  engine->wait_all();
  CHECK_FALSE(ran.load());
  CHECK(engine->stats().ops_pushed == pushed);
}

TEST_CASE("waits on a deleted var throw tandem::Error naming the wait") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var gone = engine->new_var();  // deleted by the test
  engine->push([] {}, cpu(), {}, {gone});
  engine->delete_var(gone);
  const std::string read_wait = error_of([&] { engine->wait_for_var(gone); });
  CHECK(contains(read_wait, "wait_for_var"));
  CHECK(contains(read_wait, "was deleted by delete_var"));
  const std::string write_wait = error_of([&] { engine->wait_to_write(gone); });
  CHECK(contains(write_wait, "wait_to_write"));
  CHECK(contains(write_wait, "was deleted by delete_var"));
  engine->wait_all();
}

TEST_CASE("deleting a var twice throws, through any copy of its handle") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine->new_var();  // deleted by the test
  const Var copy = v;
  std::atomic<int> deleters{0};
  engine->delete_var(v, [&deleters] { deleters.fetch_add(1); });
  const std::string twice =
      error_of([&] { engine->delete_var(copy, [&deleters] { deleters.fetch_add(1); }); });
  CHECK(contains(twice, "delete_var"));
  CHECK(contains(twice, "was already deleted"));
  engine->wait_all();
  CHECK(deleters.load() == 1);
  CHECK(engine->stats().vars_alive == 0);
}

TEST_CASE("a stale handle stays refused after its state serves a new var") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  // States are pooled, never freed: new vars soon reuse the states of deleted ones (on the
  // threaded engine, once the workers that ran the deleters have handed their batches back).
  std::unordered_map<tandem::detail::VarState*, Var> deleted;
  for (int i = 0; i < 1000; ++i) {
    Var old = engine->new_var();  // deleted by the test
    engine->delete_var(old);
    deleted.emplace(old.state(), old);
  }
  engine->wait_all();
  bool reused = false;
  for (int i = 0; i < 4000 && !reused; ++i) {
    Var fresh = engine.var();
    auto it = deleted.find(fresh.state());
    if (it == deleted.end()) continue;
    reused = true;
    const Var old = it->second;
    CHECK(fresh != old);
    CHECK_THROWS_AS(engine->push([] {}, cpu(), {old}, {}), tandem::Error);
    CHECK_THROWS_AS(engine->wait_for_var(old), tandem::Error);
    CHECK_THROWS_AS(engine->delete_var(old), tandem::Error);
    // The new var is untouched by the refusals.
    int value = 0;
    engine->push([&value] { value = 5; }, cpu(), {}, {fresh});
    engine->wait_for_var(fresh);
    CHECK(value == 5);
  }
  CHECK(reused);
}

TEST_CASE("a var of another engine is refused by push, waits and delete_var") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  auto other = make_engine(EngineKind::naive);
  Var foreign = other.var();
  Var own = engine.var();
  const std::string pushed = error_of([&] { engine->push([] {}, cpu(), {own}, {foreign}); });
  INFO("message: ", pushed);
  CHECK(contains(pushed, "push of op 'op': its write set, at position 0"));
  CHECK(contains(pushed, "belongs to engine #"));
  CHECK(contains(pushed, "not to this one"));
  CHECK(contains(error_of([&] { engine->wait_for_var(foreign); }), "belongs to engine #"));
  CHECK(contains(error_of([&] { engine->wait_to_write(foreign); }), "belongs to engine #"));
  CHECK(contains(error_of([&] { engine->delete_var(foreign); }), "belongs to engine #"));
  // The refused delete left the var alive on its own engine.
  CHECK(other->stats().vars_alive == 1);
  CHECK_NOTHROW(other->wait_for_var(foreign));
  engine->wait_all();
}

TEST_CASE("stats count the vars made by new_var and not yet deleted") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  CHECK(engine->stats().vars_alive == 0);
  std::vector<Var> vars;
  for (int i = 0; i < 5; ++i) vars.push_back(engine->new_var());  // deleted by the test
  CHECK(engine->stats().vars_alive == 5);
  for (Var v : vars) engine->delete_var(v);
  CHECK(engine->stats().vars_alive == 0);
}

}  // namespace
