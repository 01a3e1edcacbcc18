// The hot path rule "no heap allocation per op in steady state", checked by counting every
// operator new of the process (this test binary replaces the global allocation functions).
//
// Op records and var states come from per-thread pools that grow while a program first runs
// ahead of its workers; after one warm-up burst of the same shape, a burst of pushes must
// allocate (almost) nothing. "Almost": records sit in the per-thread caches of the thread that
// last released them, so the pushing thread may still draw a few fresh batches of 64 while the
// workers' caches fill; the bound below allows that and is independent of the op count.
//
// Not built in sanitizer builds: they replace operator new themselves.
#include <doctest/doctest.h>
#include <tandem/engine.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {

std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* counted_allocation(std::size_t bytes) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t bytes) {
  return counted_allocation(bytes);
}
void* operator new[](std::size_t bytes) {
  return counted_allocation(bytes);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

// Pushes `ops` empty ops round-robin over `vars` (reads of the previous var, writes of the
// next), and waits for them.
void burst(tandem::Engine& engine, const std::vector<tandem::Var>& vars, int ops) {
  for (int i = 0; i < ops; ++i) {
    const tandem::Var read = vars[static_cast<std::size_t>(i) % vars.size()];
    const tandem::Var write = vars[static_cast<std::size_t>(i + 1) % vars.size()];
    engine.push([] {}, tandem::cpu(), {read}, {write}, {.name = "empty"});
  }
  engine.wait_all();
}

}  // namespace

TEST_CASE("pushing and running ops allocates nothing per op once the pools are warm") {
  for (tandem::EngineKind kind : {tandem::EngineKind::threaded, tandem::EngineKind::naive}) {
    const std::string kind_name = tandem::engine_kind_name(kind);
    CAPTURE(kind_name);
    auto engine = tandem::Engine::create({.kind = kind, .cpu_workers = 2});
    std::vector<tandem::Var> vars;
    for (int i = 0; i < 64; ++i) vars.push_back(engine->new_var());
    constexpr int kOps = 50000;
    burst(*engine, vars, kOps);  // warm-up: the pools grow to what this shape needs
    burst(*engine, vars, kOps);
    allocations.store(0);
    counting.store(true);
    burst(*engine, vars, kOps);
    counting.store(false);
    const long allocated = allocations.load();
    MESSAGE(allocated, " allocations for ", kOps, " ops");
    // A few pool batches at most, whatever the op count (see the top of this file).
    CHECK(allocated <= 8 * 64);
    for (tandem::Var v : vars) engine->delete_var(v);
    engine->wait_all();
  }
}

namespace {

// Allocations counted over `ops` pushes of `fn` on `vars` (all read, the last one written too),
// after one warm-up round of the same pushes.
template <class Fn>
long allocations_per_push_round(tandem::Engine& engine, const std::vector<tandem::Var>& vars,
                                const Fn& fn, int ops) {
  const std::vector<tandem::Var> reads(vars.begin(), vars.end() - 1);
  const tandem::Var write = vars.back();
  auto round = [&] {
    for (int i = 0; i < ops; ++i) {
      engine.push(fn, tandem::cpu(), reads, {write}, {.name = "limits"});
    }
    engine.wait_all();
  };
  round();
  allocations.store(0);
  counting.store(true);
  round();
  counting.store(false);
  return allocations.load();
}

// A callable that fits inline except for one thing: it may throw when moved.
struct ThrowingMove {
  ThrowingMove() = default;
  ThrowingMove(const ThrowingMove&) = default;
  ThrowingMove(ThrowingMove&&) noexcept(false) {}
  void operator()() const {}
};

}  // namespace

TEST_CASE("a push allocates past the documented inline limits, and only past them") {
  using tandem::detail::OpRecord;
  auto engine = tandem::Engine::create({.cpu_workers = 2});
  std::vector<tandem::Var> vars;
  for (std::size_t i = 0; i < OpRecord::kInlineSlots + 1; ++i) vars.push_back(engine->new_var());
  const std::vector<tandem::Var> six(vars.begin(), vars.begin() + OpRecord::kInlineSlots);
  constexpr int kOps = 2000;

  struct Fits {
    unsigned char bytes[OpRecord::kInlineCallableBytes]{};
    void operator()() const {}
  };
  struct TooBig {
    unsigned char bytes[OpRecord::kInlineCallableBytes + 1]{};
    void operator()() const {}
  };
  static_assert(sizeof(Fits) == OpRecord::kInlineCallableBytes);

  const long within = allocations_per_push_round(*engine, six, Fits{}, kOps);
  MESSAGE(within, " allocations for ", kOps, " pushes of 6 vars and a 96-byte callable");
  CHECK(within <= 8 * 64);  // pool batches only, as in the test above

  const long seven_vars = allocations_per_push_round(
      *engine, vars, [] {}, kOps);
  MESSAGE(seven_vars, " allocations for ", kOps, " pushes of 7 vars");
  CHECK(seven_vars >= kOps);

  const long big_callable = allocations_per_push_round(*engine, six, TooBig{}, kOps);
  MESSAGE(big_callable, " allocations for ", kOps, " pushes of a 97-byte callable");
  CHECK(big_callable >= kOps);

  const long throwing_move = allocations_per_push_round(*engine, six, ThrowingMove{}, kOps);
  MESSAGE(throwing_move, " allocations for ", kOps, " pushes of a callable that may throw on move");
  CHECK(throwing_move >= kOps);

  for (tandem::Var v : vars) engine->delete_var(v);
  engine->wait_all();
}
