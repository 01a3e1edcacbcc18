// The autograd tape: nodes recorded by ops while recording, walked by backward().
//
// A recorded array's handle points at (node, output index). A node holds edges to the nodes of
// its inputs (null for an input that needs no gradient), what backward needs to know about its
// outputs, the handles its gradient rule reads (`saved`, with the write version each had when
// it was recorded) and the rule itself. Leaves are the nodes of attached arrays: no inputs, a
// gradient buffer and a request.
//
// Ownership runs from outputs to inputs only (an array owns its node, a node owns its input
// nodes), so the graph dies with the last array that can reach it. The rule and the saved
// handles are dropped as soon as backward has pushed the node's gradient ops (unless
// retain_graph): a node that has been through backward is `released` and cannot be walked
// again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/modes.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/ndarray.h"

namespace tandem::autograd::detail {

struct Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
  std::uint32_t output = 0;
};

struct OutputInfo {
  nd::Shape shape;
  nd::DType dtype = nd::DType::float32;
  Device device;
  Engine* engine = nullptr;
};

struct SavedArray {
  nd::NDArray array;
  std::uint32_t version = 0;
};

// Where a gradient rule may write an input's gradient itself (core/modes.h).
using GradientDestination = nd::detail::GradientDestination;

// A gradient rule that can write inputs' gradients into the destinations offered (one entry per
// input, most of them empty). It returns one gradient per input, undefined for those it wrote.
using BackwardIntoFunction = std::function<std::vector<nd::NDArray>(
    const std::vector<nd::NDArray>& output_grads, std::vector<GradientDestination>& destinations)>;

struct Node {
  Node() = default;
  // Releases the nodes it alone holds one after the other, not recursively: a chain of a
  // million recorded ops must not overflow the stack when its last array goes.
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  std::string name;
  std::vector<Edge> inputs;
  std::vector<OutputInfo> outputs;
  std::vector<SavedArray> saved;
  BackwardFunction backward;
  // Optional, beside `backward` (which must give the same gradients): used by backward() when
  // some input's gradient can go straight into its leaf's buffer. Saves the copy or add of a
  // weight gradient formed in a fresh array (a gemm writes or accumulates into the buffer).
  BackwardIntoFunction backward_into;
  // Optional, for a node whose one output is a view of its one input (transpose): the same view
  // taken of an array shaped like the input. A destination for the input's gradient then gives
  // one for the output's.
  std::function<nd::NDArray(const nd::NDArray& input_shaped)> same_view_of;
  bool released = false;
  // Leaves only.
  bool leaf = false;
  GradReq request = GradReq::write;
  nd::NDArray grad;
  // Called by backward() right after it queued the last op that writes `grad`.
  std::vector<GradientReadyHook> ready_hooks;
};

// Whether `array` needs a gradient: it has a node that is not a null-request leaf.
bool needs_grad(const nd::NDArray& array);

// Arrays a gradient rule reads: detached handles, remembered with their write version so that
// backward can refuse to use one that was written in place since.
class Saver {
 public:
  nd::NDArray operator()(const nd::NDArray& array);
  std::vector<SavedArray> take() { return std::move(saved_); }

 private:
  std::vector<SavedArray> saved_;
};

// True when recording is on and one of the inputs needs a gradient: what tandem's own ops ask
// (autograd::should_record also says yes under an export's trace, for ops of the user's own).
bool should_record(std::initializer_list<const nd::NDArray*> inputs);
bool should_record(const std::vector<nd::NDArray>& inputs);

// Records a node (the caller checked should_record). Output handles get their history; they
// must be floating-point.
void record_node(std::string name, const std::vector<nd::NDArray>& inputs,
                 const std::vector<nd::NDArray*>& outputs, std::vector<SavedArray> saved,
                 BackwardFunction backward);

// record_node with the input edges given (an input that is not an array at hand: a leaf found
// on the tape).
void record_node_on_edges(std::string name, std::vector<Edge> inputs,
                          const std::vector<nd::NDArray*>& outputs, std::vector<SavedArray> saved,
                          BackwardFunction backward);

// autograd::grad with the variables given as edges (backward.cc). With `destinations` (one
// per target; an undefined buffer: none), a leaf target's gradient that arrives along one edge
// only may be written straight into its destination (overwritten, or added into when `add`)
// by a rule that can (Node::backward_into), as backward() does with leaves' buffers: its
// `written` is then set and its entry in the result is undefined.
std::vector<nd::NDArray> grad_of_edges(const std::vector<nd::NDArray>& heads,
                                       const std::vector<Edge>& targets,
                                       const std::vector<nd::NDArray>& head_grads,
                                       bool retain_graph,
                                       std::vector<GradientDestination>* destinations = nullptr);

// While one is alive on a thread, every node that thread records is appended to `nodes` (how
// hybridize tells the nodes of its recording from the ones before it). Does not nest.
class RecordedNodeCollector {
 public:
  RecordedNodeCollector();
  ~RecordedNodeCollector();
  RecordedNodeCollector(const RecordedNodeCollector&) = delete;
  RecordedNodeCollector& operator=(const RecordedNodeCollector&) = delete;

  std::vector<const Node*> nodes;
};

// The record mode (record_mode.cc), the same for every thread: RecordScope puts it on the
// calling thread's mode stack while recording.
nd::detail::Mode* record_mode();

}  // namespace tandem::autograd::detail
