// HybridBackward: capturing a hybridized entry's backward graph and recording one tape node per
// replayed call (see hybrid_backward.h for the invariant).
#include "graph/hybrid_backward.h"

#include <unordered_set>
#include <utility>

#include "core/access.h"
#include "core/checks.h"
#include "graph/capture_window.h"
#include "tandem/errors.h"
#include "tandem/graph.h"
#include "tandem/nd/autograd.h"

namespace tandem::nd::detail {

using autograd::detail::Edge;
using autograd::detail::Node;

struct HybridBackward {
  // What the function returned at the recording, with their tape (retained: the backward graph
  // was captured from it, and its saved arrays are the static intermediates).
  std::vector<NDArray> recorded_outputs;
  // Output indices whose gradient flows back (outputs that needed one at the recording).
  std::vector<std::size_t> heads;
  std::vector<NDArray> head_grads;  // static, one per head
  // Static inputs that needed a gradient: input index -> its gradient (null: none).
  std::vector<NDArray> input_gradients;
  // The leaves outside the recording the tape reaches, and their gradients (null: none).
  std::vector<Edge> outside_leaves;
  std::vector<NDArray> outside_gradients;
  // Arrays the recorded gradient rules read: a call's node checks that none was written in
  // place between the call and its backward (as the eager nodes do).
  std::vector<NDArray> saved;
  // Alive while the node of a call can still run its gradient.
  std::weak_ptr<void> pending;
  // The direct variant of the backward graph (kept when some rule wrote an outside leaf's
  // gradient buffer at the recording): the same walk with those buffers given as destinations,
  // so that the parameters' gradients are formed in their buffers (overwritten, or accumulated
  // into under GradReq::add) instead of in static arrays that a call then copies out. Per
  // outside leaf: the buffer it writes (undefined: none, the gradient is in
  // direct_outside_gradients). It has temporaries of its own: the backward's intermediate
  // gradients are held twice while both variants exist (the general one serves a call whose
  // outer backward does not offer those buffers).
  std::vector<autograd::detail::GradientDestination> direct_destinations;
  std::vector<NDArray> direct_input_gradients;
  std::vector<NDArray> direct_outside_gradients;
  // Destroyed first (declared last): they refer to the vars of the arrays above.
  CapturedGraph graph;
  CapturedGraph direct_graph;
  bool has_direct = false;
};

namespace {

struct EdgeHash {
  std::size_t operator()(const std::pair<const Node*, std::uint32_t>& key) const noexcept {
    return std::hash<const Node*>()(key.first) ^ (static_cast<std::size_t>(key.second) << 1);
  }
};

}  // namespace

std::shared_ptr<HybridBackward> capture_backward(
    Engine& engine, const CaptureOptions& options, const std::vector<NDArray>& static_inputs,
    const std::vector<NDArray>& recorded_outputs,
    const std::vector<const autograd::detail::Node*>& recorded_nodes, std::string& not_replayable) {
  auto backward = std::make_shared<HybridBackward>();
  backward->recorded_outputs = recorded_outputs;
  for (std::size_t i = 0; i < recorded_outputs.size(); ++i)
    if (recorded_outputs[i].needs_grad()) backward->heads.push_back(i);
  if (backward->heads.empty()) return nullptr;

  // Walk the recording's nodes from the heads; stop at the leaves (static inputs or outside).
  const std::unordered_set<const Node*> recorded(recorded_nodes.begin(), recorded_nodes.end());
  std::unordered_set<const Node*> input_leaves;
  for (const NDArray& input : static_inputs) {
    if (input.needs_grad()) input_leaves.insert(NDArrayAccess::grad_node(input).get());
  }
  std::unordered_set<const Node*> visited;
  std::unordered_set<std::pair<const Node*, std::uint32_t>, EdgeHash> outside_seen;
  std::vector<Edge> stack;
  for (std::size_t head : backward->heads) {
    const NDArray& output = recorded_outputs[head];
    stack.push_back(Edge{NDArrayAccess::grad_node(output), NDArrayAccess::grad_output(output)});
  }
  while (!stack.empty()) {
    const Edge edge = std::move(stack.back());
    stack.pop_back();
    const Node* node = edge.node.get();
    if (recorded.contains(node)) {
      if (!visited.insert(node).second) continue;
      for (const Edge& input : edge.node->inputs)
        if (input.node != nullptr) stack.push_back(input);
      continue;
    }
    if (input_leaves.contains(node)) continue;
    if (!node->leaf) {
      not_replayable = "the function reads an array of shape " +
                       node->outputs[edge.output].shape.to_string() + " computed by op '" +
                       node->name + "' recorded before the call";
      return nullptr;
    }
    if (outside_seen.insert({node, edge.output}).second) backward->outside_leaves.push_back(edge);
  }
  // Only the nodes reached are alive: the others recorded_nodes names may be gone.
  for (const Node* node : visited) {
    for (const autograd::detail::SavedArray& saved : node->saved)
      backward->saved.push_back(saved.array);
  }

  std::vector<Edge> targets;
  std::vector<std::size_t> input_of_target;
  for (std::size_t i = 0; i < static_inputs.size(); ++i) {
    if (!static_inputs[i].needs_grad()) continue;
    targets.push_back(Edge{NDArrayAccess::grad_node(static_inputs[i]),
                           NDArrayAccess::grad_output(static_inputs[i])});
    input_of_target.push_back(i);
  }
  targets.insert(targets.end(), backward->outside_leaves.begin(), backward->outside_leaves.end());
  std::vector<NDArray> heads;
  for (std::size_t head : backward->heads) {
    const NDArray& output = recorded_outputs[head];
    heads.push_back(output);
    backward->head_grads.push_back(detail::allocate_array(engine, output.shape(), output.dtype(),
                                                          output.device(), "hybridize"));
  }
  std::vector<NDArray> gradients;
  {
    CaptureWindow window;
    backward->graph = capture(engine, options, [&] {
      gradients = autograd::detail::grad_of_edges(heads, targets, backward->head_grads, true);
    });
  }
  const auto split = [&](const std::vector<NDArray>& all, std::vector<NDArray>& inputs,
                         std::vector<NDArray>& outside) {
    inputs.assign(static_inputs.size(), NDArray());
    for (std::size_t t = 0; t < input_of_target.size(); ++t) inputs[input_of_target[t]] = all[t];
    outside.assign(all.begin() + static_cast<std::ptrdiff_t>(input_of_target.size()), all.end());
  };
  split(gradients, backward->input_gradients, backward->outside_gradients);

  // The direct variant: the outside leaves' current gradient buffers as destinations.
  std::vector<autograd::detail::GradientDestination> destinations(targets.size());
  bool any_buffer = false;
  for (std::size_t k = 0; k < backward->outside_leaves.size(); ++k) {
    const Node& leaf = *backward->outside_leaves[k].node;
    if (leaf.request == autograd::GradReq::null || !leaf.grad.defined()) continue;
    destinations[input_of_target.size() + k] = {leaf.grad, leaf.request == autograd::GradReq::add,
                                                false};
    any_buffer = true;
  }
  if (any_buffer) {
    std::vector<NDArray> direct;
    {
      CaptureWindow window;
      backward->direct_graph = capture(engine, options, [&] {
        direct = autograd::detail::grad_of_edges(heads, targets, backward->head_grads, true,
                                                 &destinations);
      });
    }
    backward->direct_destinations.assign(
        destinations.begin() + static_cast<std::ptrdiff_t>(input_of_target.size()),
        destinations.end());
    backward->has_direct = false;
    for (autograd::detail::GradientDestination& destination : backward->direct_destinations) {
      if (!destination.written) destination.buffer = NDArray();
      backward->has_direct = backward->has_direct || destination.written;
    }
    if (backward->has_direct) {
      split(direct, backward->direct_input_gradients, backward->direct_outside_gradients);
    } else {
      // No rule wrote a buffer (no gemm's weight gradient reached a leaf alone): the variant
      // would only hold a second copy of the backward's temporaries.
      backward->direct_graph = CapturedGraph{};
      backward->direct_destinations.clear();
    }
  }
  return backward;
}

void record_replayed_call(const std::shared_ptr<HybridBackward>& backward, const char* name,
                          const std::vector<NDArray>& call_inputs, std::vector<NDArray>& outputs) {
  if (backward == nullptr) return;
  std::vector<Edge> edges;
  edges.reserve(call_inputs.size() + backward->outside_leaves.size());
  bool any = false;
  for (const NDArray& input : call_inputs) {
    if (input.needs_grad()) {
      edges.push_back(Edge{NDArrayAccess::grad_node(input), NDArrayAccess::grad_output(input)});
      any = true;
    } else {
      edges.push_back(Edge{});
    }
  }
  for (const Edge& leaf : backward->outside_leaves) {
    // An outside array attached again with GradReq::null since the recording needs none now.
    const bool wanted = leaf.node->request != autograd::GradReq::null;
    edges.push_back(wanted ? leaf : Edge{});
    any = any || wanted;
  }
  if (!any) return;
  std::vector<NDArray*> node_outputs;
  for (std::size_t head : backward->heads) node_outputs.push_back(&outputs[head]);
  std::vector<autograd::detail::SavedArray> saved;
  saved.reserve(backward->saved.size());
  for (const NDArray& array : backward->saved) {
    saved.push_back(
        {array, NDArrayAccess::storage(array)->write_version.load(std::memory_order_relaxed)});
  }
  auto pending = std::make_shared<char>(0);
  backward->pending = pending;
  // Runs inside the outer backward (recording paused). The static gradients are overwritten by
  // the next replay, so each leaves as a copy: straight into its leaf's buffer when the outer
  // backward offers it as a destination (one copy or add, as the eager walk's delivery would
  // do after a copy of its own), else as a fresh array that the walk delivers.
  auto rule = [backward, pending](const std::vector<NDArray>& output_grads,
                                  std::vector<autograd::detail::GradientDestination>& into) {
    for (std::size_t k = 0; k < output_grads.size(); ++k)
      output_grads[k].detach().copyto(backward->head_grads[k]);
    const std::size_t first_outside = backward->input_gradients.size();
    // The direct variant when the outer backward offers every buffer it writes, as it was at the
    // recording (the same array, the same request): it writes them itself.
    bool direct = backward->has_direct;
    for (std::size_t k = 0; direct && k < backward->direct_destinations.size(); ++k) {
      const autograd::detail::GradientDestination& captured = backward->direct_destinations[k];
      if (!captured.buffer.defined()) continue;
      const std::size_t input = first_outside + k;
      direct = input < into.size() && same_view(into[input].buffer, captured.buffer) &&
               into[input].add == captured.add;
    }
    if (direct) {
      backward->direct_graph.replay();
      for (std::size_t k = 0; k < backward->direct_destinations.size(); ++k) {
        if (backward->direct_destinations[k].buffer.defined())
          into[first_outside + k].written = true;
      }
    } else {
      backward->graph.replay();
    }
    const std::vector<NDArray>& input_gradients =
        direct ? backward->direct_input_gradients : backward->input_gradients;
    const std::vector<NDArray>& outside_gradients =
        direct ? backward->direct_outside_gradients : backward->outside_gradients;
    std::vector<NDArray> gradients;
    gradients.reserve(input_gradients.size() + outside_gradients.size());
    const auto leave = [&](const NDArray& gradient) {
      const std::size_t input = gradients.size();
      if (gradient.defined() && input < into.size() && into[input].buffer.defined()) {
        NDArray& buffer = into[input].buffer;
        if (into[input].add) {
          buffer += gradient;
        } else {
          buffer.assign(gradient);
        }
        into[input].written = true;
        gradients.emplace_back();
        return;
      }
      gradients.push_back(gradient.defined() ? gradient.copy() : NDArray());
    };
    for (const NDArray& gradient : input_gradients) leave(gradient);
    for (const NDArray& gradient : outside_gradients) leave(gradient);
    return gradients;
  };
  autograd::detail::record_node_on_edges(name, std::move(edges), node_outputs, std::move(saved),
                                         [rule](const std::vector<NDArray>& output_grads) {
                                           std::vector<autograd::detail::GradientDestination> none;
                                           return rule(output_grads, none);
                                         });
  NDArrayAccess::grad_node(*node_outputs.front())->backward_into = rule;
}

bool backward_pending(const HybridBackward& backward) {
  return !backward.pending.expired();
}

std::size_t num_backward_ops(const HybridBackward& backward) {
  return backward.graph.num_ops();
}

}  // namespace tandem::nd::detail
