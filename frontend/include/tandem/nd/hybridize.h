// hybridize: record a function of NDArrays once per input signature, then replay it.
//
//   auto layer = nd::hybridize([](const std::vector<nd::NDArray>& in) {
//     return std::vector<nd::NDArray>{nd::relu(nd::dot(in[0], in[1]) + 1)};
//   });
//   nd::NDArray w = nd::ones({4, 3});
//   auto y = layer({nd::ones({2, 4}), w});   // first call for (2x4, 4x3) float32 @cpu(0): records
//   auto z = layer({nd::zeros({2, 4}), w});  // same signature: replays the recorded ops
//   std::cout << z[0];                       // [[1. 1. 1.] [1. 1. 1.]]; y[0] is z[0] now
//
// Signature: the inputs' shapes, dtypes and devices, their engine, autograd::is_training() and
// autograd::is_recording() (with, when recording, which inputs need a gradient).
// The first call with a signature creates one static input array per input, runs the
// function once on them inside tandem::capture (tandem/graph.h): every op the function pushes
// is recorded, none runs, and the function's host code (shape checks, op choice) is not run
// again. The arrays it creates and drops are temporaries the graph owns: their memory is taken
// at the first replay and reused by every later one (no allocation in a replay). The arrays it
// returns become the entry's static outputs. Every call, the first included, then copies the
// inputs into the static inputs (engine ops, no wait), replays the graph and returns the
// static outputs. A different signature records a new entry.
//
// Output-overwrite rule: a call returns the same output arrays for one signature every time,
// so the next call with that signature overwrites the values a handle from an earlier call
// sees (ops already pushed on them keep the values of their time: the engine orders the
// overwrite after them). Keep a result with `y[0].copy()`.
//
// What the graph reads: arrays the function uses from outside (a network's parameters,
// captured weights) are read by every replay, so writes to them between calls (an optimizer
// step) are seen. Dropping the last handle of such an array makes the next replay throw
// tandem::Error (the graph runs on its var); record again with clear().
//
// Under autograd::record(): the signature also holds which inputs need a gradient, and the
// first call records the backward too. The function runs on the static inputs (attached) while
// autograd records; the arrays outside it that the tape reaches (a block's parameters, attached
// arrays the function reads) are found on the tape; then the gradient of the static outputs with
// respect to the static inputs and those arrays is captured (autograd::grad, no .grad() buffer
// written) into a second graph. Every call replays the forward graph and records ONE autograd
// node whose inputs are the call's inputs and those outside arrays: when the outer backward
// reaches it, it copies the output gradients in, replays the backward graph and hands copies of
// the gradients on, so GradReq::add, gradient-ready hooks and Trainer work as usual. The
// gradients equal the eager ones (bit for bit on the same device, except that the sum over three
// or more uses of one array inside the function may be formed in another order). Rules:
// - The backward reads the intermediates of the forward replay. While the node of a call can
//   still run its gradient (its backward has not run, or ran with retain_graph, and its graph is
//   alive), the next call with that signature runs the function eagerly (recorded op by op, as
//   without hybridize): two calls before one backward give correct gradients, the second at the
//   eager speed.
// - Writing in place into an array the gradient reads (a parameter, say) between the call and
//   its backward makes backward throw tandem::Error, as for eager ops.
// - A function that reads from outside an array computed by recorded ops (not an attached one)
//   cannot have its gradient captured: calls with that signature run eagerly.
// - Random ops (dropout) draw new numbers at every replay, and the backward uses that replay's
//   numbers; nd::dropout(x, p) with the default generator gives the eager masks for the same
//   generator state. nn::Dropout seeds a generator per call on the eager path, but its replays
//   continue the stream of the recorded call (new masks, not the eager ones).
// - Attaching again (attach_grad, Parameter::set_grad_req) an outside array the recording
//   differentiates needs clear() (Block: hybridize() again): the node would deliver to the old
//   attachment.
//
// Limits:
// - A call made while another hybridized function records (nesting) runs eagerly, into the
//   outer recording.
// - The function must not read values: wait_to_read, to_vector, scalar, printing and waitall
//   inside it throw tandem::Error while it records. Nor may its host code depend on the input
//   values: only the ops it pushes are replayed.
// - Random ops draw new numbers at every replay (their closure runs again).
// - Errors of replayed ops poison the same arrays and are rethrown at the same sync points as
//   the eager calls would (tandem/graph.h); a mistake the call can see (a null input, arrays of
//   two engines) throws tandem::Error at the call. A HybridCache made with
//   CaptureOptions::fail_as_one_unit (as nn::TrainingStep's is) records windows that fail as one
//   unit instead: fewer device graphs, and a failure poisons every array its graph writes.
//   hybridize() and Block::hybridize() keep the eager error rule by default: their outputs are
//   values a caller reads one by one (a forward's outputs, its saved intermediates for
//   backward), and one output's failure must not poison another computed apart from it. Both
//   take the options to opt in (hybridize(fn, {.fail_as_one_unit = true}),
//   net.hybridize(true, {.fail_as_one_unit = true})): on an accelerator the forward then
//   replays as one device graph per run of ops of one device and queue, and the backward too
//   (its graphs are captured with the same options), where the eager rule cuts a run at every
//   intermediate that the backward saves. A failure then poisons all the call's outputs, or
//   all the gradients of its backward, with that one error.
// - One caller at a time: concurrent calls on one object race on its static arrays. Destroy
//   the object (or clear()) before the engine its arrays use.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "tandem/graph.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd {

using ArrayFunction = std::function<std::vector<NDArray>(const std::vector<NDArray>&)>;

// The recorded entries of one function (or block), by signature. The function is passed at
// each call so that a block can hand in a closure over itself.
class HybridCache {
 public:
  HybridCache();
  // Records its windows with `options` (tandem/graph.h: CaptureOptions::fail_as_one_unit).
  explicit HybridCache(CaptureOptions options);
  ~HybridCache();
  HybridCache(const HybridCache&) = delete;
  HybridCache& operator=(const HybridCache&) = delete;
  HybridCache(HybridCache&&) noexcept;
  HybridCache& operator=(HybridCache&&) noexcept;

  // See the top of the file. `fn` must be the same function at every call.
  std::vector<NDArray> call(const ArrayFunction& fn, const std::vector<NDArray>& inputs);
  // Signatures recorded so far.
  std::size_t num_entries() const;
  // Ops recorded for the entry used by the last recorded or replayed call (0 before any).
  std::size_t num_recorded_ops() const;
  // Ops of that entry's backward graph (0 unless it was recorded under autograd::record() with
  // an output that needs a gradient).
  std::size_t num_recorded_backward_ops() const;
  // Whether the last call replayed a graph (false: it ran eagerly: nested, or under autograd
  // while an earlier call's backward was pending; see the top of the file).
  bool last_call_replayed() const { return last_call_replayed_; }
  // Forgets every entry: the next call per signature records again.
  void clear();

 private:
  struct Entry;
  Entry* record(const ArrayFunction& fn, const std::vector<NDArray>& inputs);

  CaptureOptions options_;
  std::vector<std::unique_ptr<Entry>> entries_;
  Entry* last_entry_ = nullptr;
  bool last_call_replayed_ = false;
};

// A function of NDArrays that records once per input signature and replays after.
class Hybridized {
 public:
  explicit Hybridized(ArrayFunction fn, CaptureOptions options = {});

  std::vector<NDArray> operator()(const std::vector<NDArray>& inputs) {
    return cache_.call(fn_, inputs);
  }
  const HybridCache& cache() const { return cache_; }
  void clear() { cache_.clear(); }

 private:
  ArrayFunction fn_;
  HybridCache cache_;
};

// Hybridized(fn, options): see the top of the file.
Hybridized hybridize(ArrayFunction fn, CaptureOptions options = {});

}  // namespace tandem::nd
