// HybridBackward: the backward half of a hybridized entry recorded under autograd::record().
//
// Recording: hybridize runs the function on its static inputs inside a capture while autograd
// records, so the tape of that run (kept for the entry's life, retain_graph) describes the
// forward graph in terms of the static arrays every replay rewrites. capture_backward() then
// captures, on the same thread, autograd::grad of the static outputs with respect to the static
// inputs and to the outside arrays the tape reaches (a block's parameters, attached arrays the
// function reads), seeded with static head-gradient arrays: the backward graph. No leaf's
// gradient buffer is written by it (by the direct variant below, only those offered).
//
// A replayed call records one autograd node (record_replayed_call) whose inputs are the call's
// inputs and those outside arrays. Its gradient rule copies the output gradients into the
// static head gradients, replays the backward graph and returns copies of the static
// gradients, so the outer backward delivers them (GradReq::add, gradient-ready hooks) as for
// any op; a gradient the outer backward lets it write directly (autograd/backward.cc, "direct
// writes": a leaf read by this node alone) is copied or added straight into the leaf's buffer.
//
// The direct variant: capture_backward also captures the same walk with the outside leaves'
// gradient buffers (as they are at the recording) given as destinations, so that a rule that
// can write a buffer (dot: a weight's gradient) forms the gradient in it, overwriting or
// accumulating per the leaf's request, as the eager backward does. A call whose outer backward
// offers exactly those buffers, with the same requests, replays that variant and copies
// nothing for them; any other call replays the general graph above. (A parameter that replaced
// its handles, by set_grad_req or cast, makes its block record again: nn/block.cc.)
//
// Invariant: the static intermediates hold the values of the latest forward replay. The node
// of a call reads them, so while it can still run its gradient (backward_pending), the next
// call with that signature must not replay the forward: hybridize runs it eagerly instead.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "tandem/engine.h"
#include "tandem/graph.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

struct HybridBackward;

// After the forward capture under autograd: `recorded_outputs` are what the function returned
// (with their tape), `recorded_nodes` the nodes its run recorded. Returns null when no output
// needs a gradient. Returns null and sets `not_replayable` when the tape leaves the recording
// through an array that is not a leaf (an output of a recorded op from before the call, which
// the function reads from outside): its gradient cannot be captured. The backward graphs are
// captured with the forward's `options` (a forward that fails as one unit has a backward that
// does too).
std::shared_ptr<HybridBackward> capture_backward(
    Engine& engine, const CaptureOptions& options, const std::vector<NDArray>& static_inputs,
    const std::vector<NDArray>& recorded_outputs,
    const std::vector<const autograd::detail::Node*>& recorded_nodes, std::string& not_replayable);

// The outputs (of the entry's static outputs, detached) that become outputs of the call's node.
// Makes them so (when an input or an outside array needs a gradient) with `name` naming the node.
void record_replayed_call(const std::shared_ptr<HybridBackward>& backward, const char* name,
                          const std::vector<NDArray>& call_inputs, std::vector<NDArray>& outputs);

// Whether the node of an earlier call can still run its gradient (see the invariant above).
bool backward_pending(const HybridBackward& backward);

// Ops of the backward graph.
std::size_t num_backward_ops(const HybridBackward& backward);

}  // namespace tandem::nd::detail
