// backward(): walks the recorded graph from the heads and pushes the gradient ops.
//
// The walk is front-end work only: it orders the nodes (reverse post-order of a depth-first
// search from the heads, so every node comes after all the nodes that consume its outputs),
// then calls each node's rule once the gradients of all its outputs are summed. Rules build
// their results from NDArray ops, which queue and return, so nothing here waits for the
// engine. A node's rule and saved arrays are dropped right after its rule ran (unless
// retain_graph): the arrays' memory is freed once the ops that read them have finished.
//
// Direct writes: when the gradient flowing into a leaf along an edge is the only one the leaf
// gets in this walk (the last edge into it, nothing pending from earlier ones), a rule that can
// (Node::backward_into: dot) writes it straight into the leaf's buffer, overwriting it or, for
// GradReq::add, accumulating into it (a gemm with beta = 1). This also works through view nodes
// read by that edge alone (a Dense layer's w.T()). It saves a weight gradient's copy into the
// buffer, or its add, per backward: in a pipeline's micro-batches one add of every weight per
// micro-batch. grad() never writes leaves' buffers; given destinations for its targets
// (grad_of_edges, what a hybridized call's captured backward uses to form its parameters'
// gradients in their buffers) it writes those the same way.
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "autograd/tape.h"
#include "core/access.h"
#include "core/checks.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"

namespace tandem::autograd {

using nd::NDArray;
using nd::detail::NDArrayAccess;

namespace {

using detail::Node;

NDArray zeros_for(const detail::OutputInfo& info) {
  NDArray zeros =
      nd::detail::allocate_array(*info.engine, info.shape, info.dtype, info.device, "backward");
  zeros.assign(0.0);
  return zeros;
}

std::string released_message(const Node& node) {
  return "tandem: backward: the graph through op '" + node.name +
         "' was released by an earlier backward (its saved arrays are gone); pass "
         "retain_graph = true to the first backward to run backward through it again";
}

// Nodes reachable from the heads, each after every node that reads its outputs.
std::vector<std::shared_ptr<Node>> topological_order(const std::vector<NDArray>& heads) {
  std::vector<std::shared_ptr<Node>> post_order;
  std::unordered_set<const Node*> visited;
  struct Frame {
    std::shared_ptr<Node> node;
    std::size_t next_input = 0;
  };
  std::vector<Frame> stack;
  for (const NDArray& head : heads) {
    const auto& root = NDArrayAccess::grad_node(head);
    if (!visited.insert(root.get()).second) continue;
    stack.push_back(Frame{root});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.node->released) throw Error(released_message(*frame.node));
      if (frame.next_input < frame.node->inputs.size()) {
        const auto& input = frame.node->inputs[frame.next_input++].node;
        if (input != nullptr && visited.insert(input.get()).second) stack.push_back(Frame{input});
        continue;
      }
      post_order.push_back(std::move(frame.node));
      stack.pop_back();
    }
  }
  return {post_order.rbegin(), post_order.rend()};
}

void check_saved(const Node& node) {
  for (const detail::SavedArray& saved : node.saved) {
    const auto now =
        NDArrayAccess::storage(saved.array)->write_version.load(std::memory_order_relaxed);
    if (now != saved.version) {
      throw Error("tandem: backward: an array of shape " + saved.array.shape().to_string() +
                  " that op '" + node.name +
                  "' saved for its gradient was written in place after the op was recorded; "
                  "its gradient would be wrong. Write into a copy instead");
    }
  }
}

// Whether `array` repeats elements (a stride 0 along an axis of more than one element).
bool broadcast_view(const NDArray& array) {
  for (int i = 0; i < array.ndim(); ++i)
    if (array.strides()[i] == 0 && array.shape()[i] > 1) return true;
  return false;
}

void accumulate(NDArray& slot, NDArray gradient) {
  slot = slot.defined() ? nd::add(slot, gradient) : std::move(gradient);
}

// A leaf comes after every node that reads it in the walk's order, so this is the last write
// of its gradient in this backward: its hooks may start work on it.
void deliver_to_leaf(Node& leaf, const NDArray& gradient) {
  if (leaf.request == GradReq::null) return;
  if (leaf.request == GradReq::add) {
    leaf.grad += gradient;
  } else {
    leaf.grad.assign(gradient);
  }
  for (const GradientReadyHook& hook : leaf.ready_hooks) hook(leaf.grad);
}

// The walk of backward() and grad(). Without `targets` (backward) every leaf reached gets its
// gradient delivered to its buffer; with them (grad) no buffer is written and no hook called:
// the gradient arriving at each target (node, output) is returned instead (null when none
// arrives), and only the nodes from which a target can be reached are walked.
std::vector<NDArray> walk_backward(const char* op, const std::vector<NDArray>& heads,
                                   const std::vector<NDArray>& head_grads, bool retain_graph,
                                   const std::vector<detail::Edge>* targets,
                                   std::vector<detail::GradientDestination>* target_destinations) {
  if (heads.empty()) throw Error(std::string("tandem: ") + op + ": no heads given");
  if (!head_grads.empty() && head_grads.size() != heads.size()) {
    throw Error(std::string("tandem: ") + op + ": " + std::to_string(heads.size()) + " heads but " +
                std::to_string(head_grads.size()) + " head gradients (give none or one per head)");
  }
  // The gradient ops are not recorded themselves.
  const RecordScope paused = pause(is_training());
  std::unordered_map<const Node*, std::vector<NDArray>> gradients;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const NDArray& head = heads[i];
    nd::detail::check_defined(op, head);
    if (!detail::needs_grad(head)) {
      throw Error(std::string("tandem: ") + op + ": the head (shape " + head.shape().to_string() +
                  ") does not depend on any array with attach_grad() through ops recorded "
                  "inside autograd::record(); nothing to differentiate");
    }
    NDArray head_grad = head_grads.empty() ? NDArray() : head_grads[i];
    if (head_grad.defined()) {
      if (!(head_grad.shape() == head.shape()) || head_grad.dtype() != head.dtype() ||
          head_grad.device() != head.device()) {
        throw Error(std::string("tandem: ") + op + ": the head gradient (shape " +
                    head_grad.shape().to_string() + ", " + dtype_name(head_grad.dtype()) + ", " +
                    to_string(head_grad.device()) + ") must match the head (shape " +
                    head.shape().to_string() + ", " + dtype_name(head.dtype()) + ", " +
                    to_string(head.device()) + ")");
      }
      head_grad = head_grad.detach();
    } else {
      if (head.size() != 1) {
        throw Error(std::string("tandem: ") + op + ": the head has shape " +
                    head.shape().to_string() + " (" + std::to_string(head.size()) +
                    " elements); backward without a head gradient needs a one-element head "
                    "(sum it, or pass head_grad)");
      }
      head_grad = nd::ones_like(head.detach());
    }
    const auto& node = NDArrayAccess::grad_node(head);
    auto& slots = gradients[node.get()];
    slots.resize(node->outputs.size());
    accumulate(slots[NDArrayAccess::grad_output(head)], head_grad);
  }

  const std::vector<std::shared_ptr<Node>> order = topological_order(heads);
  for (const auto& node : order) check_saved(*node);
  // How many recorded edges into each leaf are still to be walked. A leaf's gradient is
  // delivered (and its ready hooks called) as soon as the last node that reads it has been
  // walked, not where the depth-first order happens to place the leaf: a layer's weight
  // gradient is final before the layers below it are walked (what a data-parallel exchange
  // started from the hook overlaps). The sums are formed in the same order either way.
  std::unordered_map<const Node*, std::size_t> unwalked_leaf_edges;
  // How many edges of walked nodes read each view node (one that can pass a direct write on).
  std::unordered_map<const Node*, std::size_t> view_reader_edges;
  for (const auto& node : order) {
    for (const detail::Edge& edge : node->inputs) {
      if (edge.node == nullptr) continue;
      if (edge.node->leaf) ++unwalked_leaf_edges[edge.node.get()];
      if (edge.node->same_view_of) ++view_reader_edges[edge.node.get()];
    }
  }
  // grad(): which nodes lead to a target (walked in reverse, every node's inputs come first),
  // and where each target's gradient goes in the result.
  std::vector<NDArray> target_gradients(targets != nullptr ? targets->size() : 0);
  std::unordered_set<const Node*> leads_to_target;
  std::unordered_map<const Node*, std::vector<std::size_t>> targets_of_node;
  if (targets != nullptr) {
    for (std::size_t t = 0; t < targets->size(); ++t) {
      targets_of_node[(*targets)[t].node.get()].push_back(t);
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Node* node = it->get();
      bool leads = targets_of_node.contains(node);
      for (const detail::Edge& edge : node->inputs)
        leads = leads || (edge.node != nullptr && leads_to_target.contains(edge.node.get()));
      if (leads) leads_to_target.insert(node);
    }
  }
  const auto take_target_gradients = [&](const Node& node, const std::vector<NDArray>& slots) {
    auto found = targets_of_node.find(&node);
    if (found == targets_of_node.end()) return;
    for (std::size_t t : found->second) target_gradients[t] = slots[(*targets)[t].output];
  };
  const auto deliver_if_pending = [&](Node& leaf) {
    auto found = gradients.find(&leaf);
    if (found == gradients.end()) return;
    const NDArray gradient = std::move(found->second[0]);
    gradients.erase(found);
    deliver_to_leaf(leaf, gradient);
  };

  // Where the node being walked may write the gradient it sends along `edge` (see the top of
  // the file), with the leaf it ends in and the view nodes passed on the way (from the edge).
  // backward(): the leaf's own buffer; grad() with destinations: the destination of the
  // target that is the leaf (`target`).
  struct DirectWrite {
    detail::GradientDestination destination;
    Node* leaf = nullptr;
    std::vector<Node*> views;
    std::size_t target = 0;
  };
  const auto find_direct_write = [&](const detail::Edge& edge) {
    DirectWrite write;
    Node* at = edge.node.get();
    while (at != nullptr && !at->leaf) {
      if (!at->same_view_of || at->inputs.size() != 1 || view_reader_edges[at] != 1 ||
          gradients.contains(at)) {
        return DirectWrite{};
      }
      write.views.push_back(at);
      at = at->inputs[0].node.get();
    }
    if (at == nullptr || unwalked_leaf_edges[at] != 1 || gradients.contains(at)) {
      return DirectWrite{};
    }
    NDArray buffer;
    bool add = false;
    if (targets == nullptr) {
      if (at->request == GradReq::null || !at->grad.defined()) return DirectWrite{};
      buffer = at->grad;
      add = at->request == GradReq::add;
    } else {
      // The leaf must be one target, with a destination, and no other target's gradient.
      const auto found = targets_of_node.find(at);
      if (found == targets_of_node.end() || found->second.size() != 1) return DirectWrite{};
      write.target = found->second.front();
      const detail::GradientDestination& given = (*target_destinations)[write.target];
      if (!given.buffer.defined()) return DirectWrite{};
      buffer = given.buffer;
      add = given.add;
    }
    write.leaf = at;
    for (auto view = write.views.rbegin(); view != write.views.rend(); ++view)
      buffer = (*view)->same_view_of(buffer);
    write.destination = detail::GradientDestination{buffer, add, false};
    return write;
  };

  for (const auto& node : order) {
    if (node->leaf) {
      // Reached here only when no walked node reads it (a head that is itself attached),
      // or already delivered. grad() collects the leaves' gradients after the walk.
      if (targets == nullptr) deliver_if_pending(*node);
      continue;
    }
    if (targets != nullptr && !leads_to_target.contains(node.get())) continue;
    auto found = gradients.find(node.get());
    if (found == gradients.end()) continue;  // every path to it carried no gradient
    std::vector<NDArray> output_grads = std::move(found->second);
    gradients.erase(found);
    if (targets != nullptr) {
      take_target_gradients(*node, output_grads);
      bool inputs_lead = false;
      for (const detail::Edge& edge : node->inputs)
        inputs_lead =
            inputs_lead || (edge.node != nullptr && leads_to_target.contains(edge.node.get()));
      if (!inputs_lead) continue;  // a target below which no other target lies
    }
    for (std::size_t i = 0; i < output_grads.size(); ++i)
      if (!output_grads[i].defined()) output_grads[i] = zeros_for(node->outputs[i]);
    std::vector<DirectWrite> direct_writes;
    if ((targets == nullptr || target_destinations != nullptr) && node->backward_into) {
      bool any = false;
      direct_writes.resize(node->inputs.size());
      for (std::size_t i = 0; i < node->inputs.size(); ++i) {
        direct_writes[i] = find_direct_write(node->inputs[i]);
        any = any || direct_writes[i].leaf != nullptr;
      }
      if (!any) direct_writes.clear();
    }
    std::vector<NDArray> input_grads;
    if (direct_writes.empty()) {
      input_grads = node->backward(output_grads);
    } else {
      std::vector<detail::GradientDestination> destinations;
      destinations.reserve(direct_writes.size());
      for (const DirectWrite& write : direct_writes) {
        if (write.leaf != nullptr && targets == nullptr) {
          nd::detail::note_in_place_write("backward", write.leaf->grad);
        }
        destinations.push_back(write.destination);
      }
      input_grads = node->backward_into(output_grads, destinations);
      for (std::size_t i = 0; i < destinations.size() && i < direct_writes.size(); ++i) {
        if (!destinations[i].written) continue;
        Node& leaf = *direct_writes[i].leaf;
        // The buffer's last write in this walk is queued: the leaf is done, as deliver_to_leaf
        // would leave it (grad(): the target's destination holds its gradient). Its edge (or
        // the views' edges) carries nothing more.
        if (targets == nullptr) {
          for (const GradientReadyHook& hook : leaf.ready_hooks) hook(leaf.grad);
        } else {
          (*target_destinations)[direct_writes[i].target].written = true;
        }
        for (Node* view : direct_writes[i].views) {
          if (retain_graph) continue;
          view->backward = nullptr;
          view->backward_into = nullptr;
          view->saved.clear();
          view->inputs.clear();
          view->released = true;
        }
      }
    }
    output_grads.clear();
    if (input_grads.size() != node->inputs.size()) {
      throw Error(std::string("tandem: ") + op + ": the gradient rule of op '" + node->name +
                  "' returned " + std::to_string(input_grads.size()) + " gradients for " +
                  std::to_string(node->inputs.size()) + " inputs");
    }
    for (std::size_t i = 0; i < input_grads.size(); ++i) {
      const detail::Edge& edge = node->inputs[i];
      if (edge.node == nullptr || !input_grads[i].defined()) continue;
      const detail::OutputInfo& expected = edge.node->outputs[edge.output];
      if (!(input_grads[i].shape() == expected.shape) || input_grads[i].dtype() != expected.dtype ||
          input_grads[i].device() != expected.device) {
        throw Error(std::string("tandem: ") + op + ": the gradient rule of op '" + node->name +
                    "' returned for input " + std::to_string(i) + " an array of shape " +
                    input_grads[i].shape().to_string() + " (" + dtype_name(input_grads[i].dtype()) +
                    ", " + to_string(input_grads[i].device()) + "); the input has shape " +
                    expected.shape.to_string() + " (" + dtype_name(expected.dtype) + ", " +
                    to_string(expected.device) + ")");
      }
      auto& slots = gradients[edge.node.get()];
      slots.resize(edge.node->outputs.size());
      accumulate(slots[edge.output], std::move(input_grads[i]));
    }
    for (const detail::Edge& edge : node->inputs) {
      if (targets != nullptr || edge.node == nullptr || !edge.node->leaf) continue;
      if (--unwalked_leaf_edges[edge.node.get()] == 0) deliver_if_pending(*edge.node);
    }
    if (!retain_graph) {
      node->backward = nullptr;
      node->backward_into = nullptr;
      node->saved.clear();
      node->inputs.clear();
      node->released = true;
    }
  }
  for (const auto& [node, slots] : gradients) {
    if (node->leaf) take_target_gradients(*node, slots);
  }
  // A sum's or a mean's gradient is a broadcast view of its output's (stride 0, no op): the
  // caller gets an array of its own, which it may write.
  for (NDArray& gradient : target_gradients)
    if (gradient.defined() && broadcast_view(gradient)) gradient = gradient.copy();
  return target_gradients;
}

}  // namespace

void backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads,
              bool retain_graph) {
  walk_backward("backward", heads, head_grads, retain_graph, nullptr, nullptr);
}

std::vector<NDArray> grad(const std::vector<NDArray>& heads, const std::vector<NDArray>& variables,
                          const std::vector<NDArray>& head_grads, bool retain_graph) {
  std::vector<detail::Edge> targets;
  targets.reserve(variables.size());
  for (std::size_t i = 0; i < variables.size(); ++i) {
    nd::detail::check_defined("grad", variables[i]);
    if (!detail::needs_grad(variables[i])) {
      throw Error("tandem: autograd::grad: variable " + std::to_string(i) + " (shape " +
                  variables[i].shape().to_string() +
                  ") needs no gradient: pass arrays given attach_grad() or computed by ops "
                  "recorded from them inside autograd::record()");
    }
    targets.push_back(detail::Edge{NDArrayAccess::grad_node(variables[i]),
                                   NDArrayAccess::grad_output(variables[i])});
  }
  return walk_backward("autograd::grad", heads, head_grads, retain_graph, &targets, nullptr);
}

namespace detail {
std::vector<NDArray> grad_of_edges(const std::vector<NDArray>& heads,
                                   const std::vector<Edge>& targets,
                                   const std::vector<NDArray>& head_grads, bool retain_graph,
                                   std::vector<GradientDestination>* destinations) {
  if (destinations != nullptr && destinations->size() != targets.size()) {
    throw Error("tandem: autograd::grad: " + std::to_string(destinations->size()) +
                " destinations for " + std::to_string(targets.size()) + " targets");
  }
  return walk_backward("autograd::grad", heads, head_grads, retain_graph, &targets, destinations);
}
}  // namespace detail

void backward(const NDArray& head, const NDArray& head_grad, bool retain_graph) {
  backward(std::vector<NDArray>{head}, std::vector<NDArray>{head_grad}, retain_graph);
}

}  // namespace tandem::autograd
