// Parameter: a network's trainable (or tracked) array, with one copy per device it lives on
// (Gluon's Parameter).
//
//   nn::Parameter w("weight", {10, 0});         // 0: not known until the first forward
//   w.initialize(nn::Xavier(), {tandem::sim(0), tandem::sim(1)});   // deferred: shape unknown
//   w.set_shape({10, 64});                      // what a layer does at its first forward
//   w.data(tandem::sim(1));                     // the copy on sim(1)
//   w.grad(tandem::sim(1));                     // its gradient (written by backward)
//
// Every copy starts with the same values (drawn once on the CPU, then copied) and, with a
// grad_req other than null, has a gradient attached (autograd's attach_grad). The copies are
// kept equal by the Trainer, which sums their gradients and applies the same update to each.
// A parameter whose shape has an unknown (0) dimension when initialize() is called keeps the
// initializer and devices and creates its copies when a layer calls set_shape() with the full
// shape, which layers do at their first forward ("deferred initialization").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tandem/device.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/ndarray.h"
#include "tandem/nn/initializer.h"

namespace tandem::nn {

using autograd::GradReq;

struct ParameterOptions {
  nd::DType dtype = nd::float32;
  GradReq grad_req = GradReq::write;
  // The parameter's own initializer; null: the one passed to initialize().
  std::shared_ptr<const Initializer> init = nullptr;
};

class Parameter {
 public:
  // `shape` may have dimensions 0: unknown until set_shape().
  Parameter(std::string name, nd::Shape shape, ParameterOptions options = {});

  // The full name ("0.weight" in a Sequential), set when its block is registered in another.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const nd::Shape& shape() const { return shape_; }
  bool shape_known() const;
  nd::DType dtype() const { return options_.dtype; }
  GradReq grad_req() const { return options_.grad_req; }

  // Fills in the unknown dimensions. Throws tandem::Error naming the parameter and both
  // shapes when a known dimension differs or the rank differs. Finishes a deferred
  // initialization.
  void set_shape(const nd::Shape& shape);

  // Creates one copy on each of `devices` (distinct, present), with the values of the
  // parameter's own initializer or else `init`. When the shape is not known yet, the
  // creation waits for set_shape(). An initialized parameter is left alone unless
  // `force_reinit`. Returns at once (the draws and copies are queued).
  void initialize(const Initializer& init, const std::vector<Device>& devices = {cpu()},
                  bool force_reinit = false);
  // True once the copies exist (after initialize() and, if deferred, set_shape()).
  bool initialized() const { return !data_.empty(); }
  // True when initialize() was called but the shape is still unknown.
  bool deferred() const { return pending_init_ != nullptr; }

  // The copy on `device`. Throws tandem::Error naming the parameter when it is not
  // initialized (call initialize), is still waiting for its shape (run a forward first), or
  // has no copy on `device` (naming the devices it has).
  nd::NDArray data(Device device) const;
  // The copy of a parameter that lives on one device.
  nd::NDArray data() const;
  // The gradient of the copy on `device` (throws as data() does, and for grad_req null).
  nd::NDArray grad(Device device) const;
  std::vector<nd::NDArray> list_data() const;
  std::vector<nd::NDArray> list_grad() const;
  const std::vector<Device>& devices() const { return devices_; }

  // Puts the parameter on `devices` (distinct): one copy on each with the values of the
  // current first copy (queued copies); the gradients start at zero. Before initialization
  // (or while it is deferred) it only changes where the copies will be made. Gluon's
  // reset_ctx. Throws tandem::Error for no device or a device listed twice.
  void reset_devices(const std::vector<Device>& devices);
  // Writes `value` (any device, the parameter's shape and dtype) into every copy (queued).
  void set_data(const nd::NDArray& value);
  // Sets every gradient to zero (queued); for grad_req add between steps.
  void zero_grad();
  // Changes the grad request; attaches or drops the copies' gradients accordingly.
  void set_grad_req(GradReq grad_req);
  // Changes the dtype; the copies, if any, are converted (queued) and their gradients
  // re-attached.
  void cast(nd::DType dtype);

  // Called with the index of a copy (into devices()) each time a backward() has queued the last
  // op that writes that copy's gradient (an autograd gradient-ready hook on every copy, put back
  // whenever the gradients are attached again: deferred initialization, cast, set_grad_req).
  // One callback per parameter: setting one replaces the previous, an empty one removes it.
  // nn::Trainer's exchange during backward is built on it.
  using GradientReadyCallback = std::function<void(std::size_t copy)>;
  void set_gradient_ready_callback(GradientReadyCallback callback);
  // How many times a backward() has written the gradient of copy `copy` (an index into
  // devices()) since the gradients were last attached (0 again with every new
  // handles_generation()). nn::Trainer compares it with what it saw at its last update to tell
  // a fresh gradient from a stale one; a gradient written by hand does not count.
  std::uint64_t gradient_deliveries(std::size_t copy) const;

  // How many times the parameter has replaced its array handles (initialize, set_grad_req,
  // cast: each gives the copies new autograd leaves). A hybridized block's recordings name the
  // old leaves, so it records again when this moves (Block::operator()).
  std::uint64_t handles_generation() const { return handles_generation_; }
  // Bumped with every parameter's handles_generation: a block looks at its own parameters only
  // when this has moved since it last looked.
  static std::uint64_t handles_epoch();

 private:
  void create_copies(const Initializer& init);
  // Throws tandem::Error for no device or one listed twice; `call` names the caller.
  void check_devices(const char* call, const std::vector<Device>& devices) const;
  void attach_gradients();
  [[noreturn]] void throw_unavailable(const char* what) const;

  std::string name_;
  nd::Shape shape_;
  ParameterOptions options_;
  std::vector<Device> devices_;
  std::vector<nd::NDArray> data_;
  std::uint64_t handles_generation_ = 0;
  std::shared_ptr<const Initializer> pending_init_;  // set while initialization is deferred
  // Shared with the copies' hooks, which may outlive the parameter (a user's data() handle
  // keeps its leaf alive): they call it only while it is set.
  std::shared_ptr<GradientReadyCallback> gradient_ready_ =
      std::make_shared<GradientReadyCallback>();
  // One count per copy, made anew with every attach (the old hooks keep counting into theirs).
  std::shared_ptr<std::vector<std::atomic<std::uint64_t>>> gradient_deliveries_;
};

}  // namespace tandem::nn
