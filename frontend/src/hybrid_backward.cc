// HybridBackward: capturing a hybridized entry's backward graph and recording one tape node per
// replayed call (see hybrid_backward.h for the invariant).
#include "hybrid_backward.h"

#include <unordered_set>
#include <utility>

#include "access.h"
#include "capture_window.h"
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
  // Destroyed first (declared last): it refers to the vars of the arrays above.
  CapturedGraph graph;
};

namespace {

struct EdgeHash {
  std::size_t operator()(const std::pair<const Node*, std::uint32_t>& key) const noexcept {
    return std::hash<const Node*>()(key.first) ^ (static_cast<std::size_t>(key.second) << 1);
  }
};

}  // namespace

std::shared_ptr<HybridBackward> capture_backward(
    Engine& engine, const std::vector<NDArray>& static_inputs,
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
    backward->graph = capture(engine, [&] {
      gradients = autograd::detail::grad_of_edges(heads, targets, backward->head_grads, true);
    });
  }
  backward->input_gradients.resize(static_inputs.size());
  for (std::size_t t = 0; t < input_of_target.size(); ++t)
    backward->input_gradients[input_of_target[t]] = gradients[t];
  backward->outside_gradients.assign(
      gradients.begin() + static_cast<std::ptrdiff_t>(input_of_target.size()), gradients.end());
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
    backward->graph.replay();
    std::vector<NDArray> gradients;
    gradients.reserve(backward->input_gradients.size() + backward->outside_gradients.size());
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
    for (const NDArray& gradient : backward->input_gradients) leave(gradient);
    for (const NDArray& gradient : backward->outside_gradients) leave(gradient);
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
