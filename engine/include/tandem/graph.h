// Capture and replay: record a window of pushes once, enter it into the engine many times.
//
//   auto& engine = tandem::Engine::get();
//   tandem::Var x = engine.new_var(), y = engine.new_var();
//   tandem::CapturedGraph step = tandem::capture(engine, [&] {
//     engine.push([&] { y_data = f(x_data); }, tandem::cpu(), {x}, {y}, {.name = "f"});
//     engine.push([&] { x_data = g(y_data); }, tandem::cpu(), {y}, {x}, {.name = "g"});
//   });                                   // nothing has run yet
//   for (int i = 0; i < 1000; ++i) step.replay();
//   engine.wait_for_var(x);
//
// Capture: while `record` runs, the pushes (and delete_var calls) the calling thread makes on
// `engine` are recorded instead of run: each op keeps its closure, device, props and var lists,
// checked as a push checks them (bad input throws tandem::Error at the push). Pushes from other
// threads, and on other engines, go through as usual. Inside a capture, a wait on `engine`
// (wait_for_var, wait_to_write, wait_all), a nested capture and a replay throw tandem::Error;
// an exception out of `record` discards what was recorded and propagates.
//
// Replay enters the window into the engine as one unit: the result is that of pushing the
// recorded ops one by one at the time of the replay call, with the same closures. Errors poison
// the same vars, skip the same ops and are thrown by the same sync points, in the same order,
// as those pushes would (except in a window that fails as one unit, below). Replays and eager
// pushes on shared vars keep push order, and two replays of one graph are ordered where they
// touch the same vars (a graph's synchronous CPU parts never overlap with another replay of the
// same graph).
//
// Cost: a run of synchronous CPU ops is entered as one op that holds the run's vars; its ops
// then run from dependencies resolved at capture (a counter per op, reset each replay), so a
// replayed op costs a small fraction of a push. Async ops (`async_completion`) are pushed again
// one by one at replay, and so are accelerator ops, except for device graphs: a chain of
// accelerator ops on one device (each reads what the one before it wrote; the rule is in
// docs/design.md, "Device graphs") is entered as one op that records the chain's device work
// into a device graph (tandem/accel/device_graph.h; a CUDA Graph on cuda) on the first replay
// and launches that graph, one launch for the whole chain, on every later one. Their launch
// functions then run only once, at the first replay: what they enqueue (pointers, sizes,
// arguments) must be the same at every replay, as it is for arrays whose storage stays in
// place. EngineConfig::device_graphs (TANDEM_DEVICE_GRAPHS=0) turns them off.
// docs/design.md ("Captured graphs") has the details.
//
// A window that fails as one unit (CaptureOptions::fail_as_one_unit, opt-in): its device graphs
// may join ANY consecutive accelerator ops of one device and queue (neither async_completion
// nor no_skip), not only chains, so that a training step's forward, backward and updates become
// one or a few device graphs. The price is in the error rule: a failure, or a poisoned input,
// anywhere in such a run poisons EVERY var the run writes that is visible outside it (the run
// is all or nothing), where separate pushes would poison only the vars downstream of the
// failure. Host ops, and a change of device or queue, still end a run, and the window's other
// steps keep the rule above. On cuda the run is captured on one stream: ops of the run that
// were independent then run one after the other inside the graph.
//
//   CapturedGraph step = capture(engine, {.fail_as_one_unit = true}, [&] { push_the_step(); });
//
// Vars: the graph refers to the vars its ops touch; deleting one while the graph is alive makes
// replay throw tandem::Error naming it. A var created inside the window (new_var) and deleted
// there too (delete_var) is a temporary the graph owns: it stays alive, reused by every replay,
// and its deleter runs when the graph is destroyed. Closures are called once per replay and may
// be called from several threads over the graph's life, so state they change must be
// synchronised through the vars, as for any op. Op names must stay valid while the graph lives.
// Destroy a graph before its engine.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "tandem/engine.h"

namespace tandem {

// How a capture resolves its window (see "A window that fails as one unit" above).
struct CaptureOptions {
  // Device graph runs may be any consecutive accelerator ops of one device and queue; a failure
  // in a run poisons every visible var it writes. Off: runs are chains with the errors of
  // separate pushes.
  bool fail_as_one_unit = false;
};

namespace detail {
struct GraphPlan;
class GraphRecorder;
GraphRecorder* begin_capture(Engine& engine, const CaptureOptions& options = {});
std::shared_ptr<GraphPlan> end_capture(GraphRecorder* recorder);
void abandon_capture(GraphRecorder* recorder) noexcept;
}  // namespace detail

// A handle to a captured graph; copies share it. The graph lives until its last handle and its
// last replay in flight are gone.
class CapturedGraph {
 public:
  // An empty graph: replay does nothing.
  CapturedGraph() = default;
  explicit CapturedGraph(std::shared_ptr<detail::GraphPlan> plan) : plan_(std::move(plan)) {}

  // Enters one run of the window into the engine and returns at once (the naive engine: after
  // running it). Thread-safe. Throws tandem::Error, having entered nothing, when a var the graph
  // uses was deleted, or when called inside a capture.
  void replay();

  // The ops recorded, and how many of them a replay pushes one by one (accelerator ops outside
  // device graphs, and async ops); the others run inside the units of their synchronous CPU
  // segments or of their device graphs.
  std::size_t num_ops() const;
  std::size_t num_pushed_ops() const;
  std::size_t num_segments() const;
  // The device graphs (one unit each at replay) and the accelerator ops they hold.
  std::size_t num_device_graphs() const;
  std::size_t num_device_graph_ops() const;
  // Vars the window touched that existed before it: read only, and written.
  std::size_t num_external_reads() const;
  std::size_t num_external_writes() const;
  // Vars the window created (new_var), of which those it also deleted are owned by the graph.
  std::size_t num_temporaries() const;

 private:
  std::shared_ptr<detail::GraphPlan> plan_;
};

// Records the pushes `record()` makes on `engine` from this thread into a graph (see above).
template <class Fn>
CapturedGraph capture(Engine& engine, const CaptureOptions& options, Fn&& record) {
  detail::GraphRecorder* recorder = detail::begin_capture(engine, options);
  try {
    std::invoke(std::forward<Fn>(record));
  } catch (...) {
    detail::abandon_capture(recorder);
    throw;
  }
  return CapturedGraph(detail::end_capture(recorder));
}
template <class Fn>
CapturedGraph capture(Engine& engine, Fn&& record) {
  return capture(engine, CaptureOptions{}, std::forward<Fn>(record));
}

}  // namespace tandem
