// Automatic differentiation: record the ops of a computation, then push its gradient ops.
//
//   namespace ag = tandem::autograd;
//   auto w = nd::random::normal({3, 2});
//   w.attach_grad();                       // w.grad() now exists (zeros)
//   {
//     auto scope = ag::record();           // ops on w are recorded on this thread's tape
//     auto loss = nd::sum(nd::square(nd::dot(x, w) - y));
//     loss.backward();                     // pushes the gradient ops and returns at once
//   }
//   w -= 0.1 * w.grad();                   // queued behind the gradient ops; nothing waited
//
// What is recorded: while a record() scope is open on the calling thread, every op with a
// floating-point input that needs a gradient (an array given attach_grad(), or the output of a
// recorded op) stores a node on the tape: its inputs, the arrays its gradient reads (saved
// handles) and a rule that builds the input gradients from the output gradient out of ordinary
// NDArray ops. backward() walks the nodes from the head back to the attached arrays and pushes
// those ops on the engine, on the devices of the forward ops; it never waits. Unless
// retain_graph is true, each node's saved arrays are released as soon as its gradient ops have
// been pushed, so their memory goes back once those ops have run.
//
// Not differentiable (no gradient flows through them, their outputs need no gradient):
// comparisons, argmax, one_hot, accuracy, random draws, astype to an integer dtype. In-place
// writes (+=, assign, copyto into an array) are not recorded: while recording, writing into an
// array that needs a gradient, or writing a value that needs one into any array, throws
// tandem::Error (write x.detach() to mean it; an array attached with GradReq::null may be
// written), and so does backward() through an op whose saved input was written in place after
// it was recorded.
//
// The recording state (recording, training) belongs to the calling thread: ops pushed from
// another thread are not recorded by this thread's scope.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::autograd {

// Restores the recording and training state it found when it goes out of scope. Made by
// record() and pause(); movable, not copyable.
class [[nodiscard]] RecordScope {
 public:
  RecordScope(bool recording, bool training);
  ~RecordScope();
  RecordScope(RecordScope&& other) noexcept;
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;
  RecordScope& operator=(RecordScope&&) = delete;

 private:
  bool previous_recording_;
  bool previous_training_;
  bool active_ = true;
};

// Records the ops of this thread until the scope closes. train_mode selects the behaviour of
// dropout and batch_norm (is_training()).
RecordScope record(bool train_mode = true);
// Stops recording until the scope closes (inside a record scope, e.g. to update statistics).
RecordScope pause(bool train_mode = false);
// A scope that only sets the training flag, recording unchanged (MXNet's train_mode /
// predict_mode).
RecordScope train_mode();
RecordScope predict_mode();

bool is_recording();
bool is_training();

// Pushes the gradient ops of `head` (a recorded array) with respect to every attached array it
// depends on. head_grad is the gradient of the head (same shape, dtype and device); without one
// the head must have one element and its gradient is 1. Throws tandem::Error, at the call, when
// the head was not recorded, when a head of several elements has no head gradient, when the
// graph was released by an earlier backward (pass retain_graph = true to the first), or when an
// array saved for the gradient was written in place after it was recorded.
void backward(const nd::NDArray& head, const nd::NDArray& head_grad = {},
              bool retain_graph = false);
// Several heads at once (their gradients add up): head_grads is empty or one per head (a null
// entry: that head must have one element).
void backward(const std::vector<nd::NDArray>& heads,
              const std::vector<nd::NDArray>& head_grads = {}, bool retain_graph = false);

// The gradients of `heads` with respect to `variables` (PyTorch's torch.autograd.grad, MXNet's
// autograd.grad), returned instead of written: no .grad() buffer changes and no gradient-ready
// hook is called. A variable is an array given attach_grad() or computed by recorded ops (an
// intermediate); each result has its variable's shape, dtype and device, or is a null NDArray
// when the heads do not depend on that variable. head_grads and retain_graph as for backward();
// only the part of the graph between the heads and the variables is walked (and released,
// unless retain_graph). Pushes the gradient ops and returns at once, like backward().
//
//   auto scope = ag::record();
//   nd::NDArray loss = nd::sum(nd::square(nd::dot(x, w)));
//   nd::NDArray dw = ag::grad({loss}, {w})[0];   // w.grad() untouched
//
// Throws tandem::Error, at the call, for the head mistakes backward() refuses and for a
// variable that needs no gradient (not attached, not recorded, or attached with GradReq::null).
std::vector<nd::NDArray> grad(const std::vector<nd::NDArray>& heads,
                              const std::vector<nd::NDArray>& variables,
                              const std::vector<nd::NDArray>& head_grads = {},
                              bool retain_graph = false);

// --- gradient-ready hooks ------------------------------------------------------------------------
// Lets work start on a gradient as soon as backward() has queued it, before backward returns:
//
//   w.attach_grad();
//   autograd::add_gradient_ready_hook(w, [](const nd::NDArray& grad) {
//     grad.copyto(other);    // queued behind the last op that writes w.grad()
//   });
//
// backward() calls the hooks of an attached array (in the order they were added, on the thread
// that called backward) right after it has pushed the last op that writes that array's gradient
// in this backward: the gradient is final once the ops queued so far have run, while the
// gradients of arrays nearer the inputs are still to be pushed. An attached array that the
// heads do not reach gets no call. The hooks belong to the attachment: attach_grad() on the
// array again starts an empty list. Throws tandem::Error when `attached` has no gradient
// buffer (no attach_grad(), or GradReq::null) or `hook` is empty.
using GradientReadyHook = std::function<void(const nd::NDArray& gradient)>;
void add_gradient_ready_hook(const nd::NDArray& attached, GradientReadyHook hook);

// --- ops of your own ----------------------------------------------------------------------------
// How an op outside tandem's own set gets a gradient:
//
//   nd::NDArray y = my_forward(x, w);
//   if (autograd::should_record({&x, &w})) {
//     autograd::record_op("my_op", {x, w}, {&y},
//         [x = x.detach(), w = w.detach()](const std::vector<nd::NDArray>& dy) {
//           return std::vector<nd::NDArray>{my_grad_x(dy[0], w), my_grad_w(dy[0], x)};
//         });
//   }
//
// The backward function runs inside backward(), with recording paused; it returns one gradient
// per input (a null NDArray for an input without one), each with its input's shape, dtype and
// device, built from NDArray ops (never a sync). Output gradients that nothing produced arrive
// as zeros. Capture the arrays the gradient reads by value, detached: they are released with
// the node.
using BackwardFunction =
    std::function<std::vector<nd::NDArray>(const std::vector<nd::NDArray>& output_grads)>;

// True when recording is on and one of the inputs needs a gradient; also true while
// nn::export_block traces a forward, so that an op of your own reaches record_op, which then
// throws tandem::Error naming it (such an op cannot be exported).
bool should_record(std::initializer_list<const nd::NDArray*> inputs);
bool should_record(const std::vector<nd::NDArray>& inputs);
// Makes `outputs` (which must be floating-point) outputs of a new node whose gradient is
// `backward`. Does nothing when should_record(inputs) is false.
void record_op(std::string name, const std::vector<nd::NDArray>& inputs,
               std::initializer_list<nd::NDArray*> outputs, BackwardFunction backward);
void record_op(std::string name, const std::vector<nd::NDArray>& inputs,
               const std::vector<nd::NDArray*>& outputs, BackwardFunction backward);

}  // namespace tandem::autograd
