// Arrays and their engines: replacing the process-wide engine is refused while its arrays are
// alive, and an array that outlives its private engine can still be dropped.
#include "frontend_test_util.h"

namespace tandem::testing {

TEST_SUITE("frontend.lifetime") {
  TEST_CASE("nd::set_default_engine refuses while arrays of the engine are alive") {
    nd::set_default_engine(EngineConfig{});
    NDArray a = nd::ones({4}) + 1;
    NDArray view = a.slice(0, 2);  // shares a's storage: still one array
    NDArray b = nd::zeros({2});
    (void)nd::random::uniform({3});  // the default generator does not count
    try {
      nd::set_default_engine(EngineKind::naive);
      FAIL("nd::set_default_engine should refuse");
    } catch (const Error& e) {
      const std::string message = e.what();
      INFO("message: ", message);
      CHECK(message.find("nd::set_default_engine: 2 arrays") != std::string::npos);
    }
    // Refused: nothing changed, the arrays still work.
    CHECK(Engine::get().kind() == EngineKind::threaded);
    CHECK(a.to_vector<float>() == std::vector<float>{2, 2, 2, 2});
    a = view = b = NDArray();
    CHECK_NOTHROW(nd::set_default_engine(EngineKind::naive));
    CHECK(Engine::get().kind() == EngineKind::naive);
    nd::set_default_engine(EngineConfig{});
  }

  TEST_CASE("an array that outlives its private engine can still be dropped") {
    for (EngineKind kind : {EngineKind::threaded, EngineKind::naive}) {
      CAPTURE(kind);
      NDArray small, big;
      {
        auto engine = Engine::create(EngineConfig{.kind = kind});
        nd::EngineScope scope(*engine);
        small = nd::ones({4}) * 3;
        big = nd::full({1 << 16}, 2.0) + 1;  // freed through an early op as well
        CHECK(small.to_vector<float>()[3] == 3);
      }  // the engine goes first (it logs an error) and hands the arrays' vars to a stand-in
      small = NDArray();
      big = NDArray();  // deleted inline on the stand-in, not on the destroyed engine
    }
  }
}

}  // namespace tandem::testing
