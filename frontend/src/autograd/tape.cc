// Recording: the thread's mode, the scopes, and how ops add nodes to the tape.
#include "autograd/tape.h"

#include <string>
#include <utility>

#include "core/access.h"
#include "core/checks.h"
#include "core/modes.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"

namespace tandem::autograd {

using nd::NDArray;
using nd::detail::NDArrayAccess;

namespace detail {

Node::~Node() {
  std::vector<std::shared_ptr<Node>> orphans;
  const auto adopt = [&orphans](std::vector<Edge>& edges) {
    for (Edge& edge : edges)
      if (edge.node != nullptr && edge.node.use_count() == 1)
        orphans.push_back(std::move(edge.node));
    edges.clear();
  };
  adopt(inputs);
  while (!orphans.empty()) {
    std::shared_ptr<Node> node = std::move(orphans.back());
    orphans.pop_back();
    adopt(node->inputs);  // node now holds no input alone: destroying it recurses no further
  }
}

bool needs_grad(const NDArray& array) {
  const auto& node = NDArrayAccess::grad_node(array);
  return node != nullptr && !(node->leaf && node->request == GradReq::null);
}

NDArray Saver::operator()(const NDArray& array) {
  NDArray detached = array.detach();
  const std::uint32_t version =
      NDArrayAccess::storage(detached)->write_version.load(std::memory_order_relaxed);
  saved_.push_back(SavedArray{detached, version});
  return detached;
}

namespace {
thread_local RecordedNodeCollector* tls_node_collector = nullptr;
}  // namespace

RecordedNodeCollector::RecordedNodeCollector() {
  tls_node_collector = this;
}

RecordedNodeCollector::~RecordedNodeCollector() {
  tls_node_collector = nullptr;
}

void record_node(std::string name, const std::vector<NDArray>& inputs,
                 const std::vector<NDArray*>& outputs, std::vector<SavedArray> saved,
                 BackwardFunction backward) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const NDArray& input : inputs) {
    if (needs_grad(input)) {
      edges.push_back(Edge{NDArrayAccess::grad_node(input), NDArrayAccess::grad_output(input)});
    } else {
      edges.push_back(Edge{});
    }
  }
  record_node_on_edges(std::move(name), std::move(edges), outputs, std::move(saved),
                       std::move(backward));
}

void record_node_on_edges(std::string name, std::vector<Edge> inputs,
                          const std::vector<NDArray*>& outputs, std::vector<SavedArray> saved,
                          BackwardFunction backward) {
  auto node = std::make_shared<Node>();
  node->name = std::move(name);
  node->inputs = std::move(inputs);
  node->outputs.reserve(outputs.size());
  for (const NDArray* output : outputs) {
    nd::detail::check_defined(node->name.c_str(), *output);
    if (!ops::is_floating(output->dtype())) {
      throw Error("tandem: autograd: op '" + node->name + "' has an output of dtype " +
                  dtype_name(output->dtype()) +
                  "; only floating-point outputs can be recorded for gradients");
    }
    node->outputs.push_back(
        OutputInfo{output->shape(), output->dtype(), output->device(), &output->engine()});
  }
  node->saved = std::move(saved);
  node->backward = std::move(backward);
  if (tls_node_collector != nullptr) tls_node_collector->nodes.push_back(node.get());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    NDArrayAccess::set_grad_node(*outputs[i], node, static_cast<std::uint32_t>(i));
}

bool should_record(std::initializer_list<const NDArray*> inputs) {
  if (!is_recording()) return false;
  for (const NDArray* input : inputs)
    if (input != nullptr && needs_grad(*input)) return true;
  return false;
}

bool should_record(const std::vector<NDArray>& inputs) {
  if (!is_recording()) return false;
  for (const NDArray& input : inputs)
    if (needs_grad(input)) return true;
  return false;
}

}  // namespace detail

namespace {

// Recording is the record mode's place on the mode stack.
void set_recording(bool recording) {
  nd::detail::set_mode(nd::detail::ModeKind::record, recording ? detail::record_mode() : nullptr);
}

}  // namespace

RecordScope::RecordScope(bool recording, bool training)
    : previous_recording_(is_recording()), previous_training_(is_training()) {
  set_recording(recording);
  nd::detail::mode_stack.training = training;
}

RecordScope::RecordScope(RecordScope&& other) noexcept
    : previous_recording_(other.previous_recording_),
      previous_training_(other.previous_training_),
      active_(std::exchange(other.active_, false)) {}

RecordScope::~RecordScope() {
  if (!active_) return;
  set_recording(previous_recording_);
  nd::detail::mode_stack.training = previous_training_;
}

RecordScope record(bool train_mode) {
  return RecordScope(true, train_mode);
}
RecordScope pause(bool train_mode) {
  return RecordScope(false, train_mode);
}
RecordScope train_mode() {
  return RecordScope(is_recording(), true);
}
RecordScope predict_mode() {
  return RecordScope(is_recording(), false);
}

bool is_recording() {
  return nd::detail::mode_on(nd::detail::ModeKind::record);
}
bool is_training() {
  return nd::detail::training();
}

// True under an export's trace too: an op of your own then reaches record_op, which the trace
// refuses (an exported graph holds tandem's own ops only) instead of saving it as a constant.
bool should_record(std::initializer_list<const NDArray*> inputs) {
  if (nd::detail::mode_on(nd::detail::ModeKind::trace)) return true;
  return detail::should_record(inputs);
}

bool should_record(const std::vector<NDArray>& inputs) {
  if (nd::detail::mode_on(nd::detail::ModeKind::trace)) return true;
  return detail::should_record(inputs);
}

void record_op(std::string name, const std::vector<NDArray>& inputs,
               const std::vector<NDArray*>& outputs, BackwardFunction backward) {
  nd::detail::note_opaque_op(name,
                             "it is an op of your own (autograd::record_op); an exported graph "
                             "holds tandem's own ops only");
  if (!should_record(inputs)) return;
  if (!backward) throw Error("tandem: autograd::record_op('" + name + "'): no backward function");
  detail::record_node(std::move(name), inputs, outputs, {}, std::move(backward));
}

void record_op(std::string name, const std::vector<NDArray>& inputs,
               std::initializer_list<NDArray*> outputs, BackwardFunction backward) {
  record_op(std::move(name), inputs, std::vector<NDArray*>(outputs), std::move(backward));
}

void add_gradient_ready_hook(const NDArray& attached, GradientReadyHook hook) {
  nd::detail::check_defined("add_gradient_ready_hook", attached);
  if (!hook) throw Error("tandem: add_gradient_ready_hook: the hook is empty");
  const auto& node = NDArrayAccess::grad_node(attached);
  if (node == nullptr || !node->leaf || node->request == GradReq::null) {
    throw Error("tandem: add_gradient_ready_hook: the array (shape " +
                attached.shape().to_string() +
                ") has no gradient buffer; call attach_grad() (with a GradReq other than null) "
                "first");
  }
  node->ready_hooks.push_back(std::move(hook));
}

}  // namespace tandem::autograd

namespace tandem::nd {

void NDArray::attach_grad(autograd::GradReq req) {
  detail::check_defined("attach_grad", *this);
  if (!ops::is_floating(dtype_)) {
    throw Error(std::string("tandem: attach_grad: gradients need a floating-point array; this one "
                            "is ") +
                dtype_name(dtype_) + " (shape " + shape_.to_string() + "); astype(float32) first");
  }
  if (req != autograd::GradReq::write && req != autograd::GradReq::add &&
      req != autograd::GradReq::null) {
    throw Error("tandem: attach_grad: " + std::to_string(static_cast<int>(req)) +
                " is not a GradReq (write, add or null)");
  }
  auto node = std::make_shared<autograd::detail::Node>();
  node->name = "variable";
  node->leaf = true;
  node->request = req;
  node->outputs.push_back(autograd::detail::OutputInfo{shape_, dtype_, device(), &engine()});
  if (req != autograd::GradReq::null) {
    NDArray buffer = detail::allocate_array(engine(), shape_, dtype_, device(), "attach_grad");
    buffer.assign(0.0);
    node->grad = buffer;
  }
  grad_node_ = std::move(node);
  grad_output_ = 0;
}

NDArray NDArray::grad() const {
  detail::check_defined("grad", *this);
  if (grad_node_ == nullptr || !grad_node_->leaf) {
    throw Error("tandem: grad: this array (shape " + shape_.to_string() +
                ") has no gradient buffer: call attach_grad() on it (before recording the ops "
                "that use it)");
  }
  if (grad_node_->request == autograd::GradReq::null) {
    throw Error("tandem: grad: this array (shape " + shape_.to_string() +
                ") was attached with GradReq::null: it has no gradient");
  }
  return grad_node_->grad;
}

NDArray NDArray::detach() const {
  NDArray detached = *this;
  detached.grad_node_.reset();
  detached.grad_output_ = 0;
  return detached;
}

bool NDArray::needs_grad() const {
  return autograd::detail::needs_grad(*this);
}

void NDArray::backward() const {
  autograd::backward(*this);
}

void NDArray::backward(const NDArray& head_grad, bool retain_graph) const {
  autograd::backward(*this, head_grad, retain_graph);
}

}  // namespace tandem::nd
