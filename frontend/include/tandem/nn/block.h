// Block: a piece of a network with parameters and child blocks (Gluon's Block). Layers are
// Blocks; so are networks built from them, in user code:
//
//   class Residual : public nn::Block {   // out = relu(x + dense2(relu(dense1(x))))
//    public:
//     explicit Residual(std::int64_t width)
//         : dense1_(register_child("dense1", nn::Dense(width, nn::relu))),
//           dense2_(register_child("dense2", nn::Dense(width))) {}
//     nd::NDArray forward(const nd::NDArray& x) override {
//       return nd::relu(x + (*dense2_)((*dense1_)(x)));
//     }
//    private:
//     std::shared_ptr<nn::Dense> dense1_, dense2_;
//   };
//
// Names are hierarchical: a parameter's name is the path of child names to it, joined with
// dots ("dense1.weight"; in a Sequential the children are "0", "1", ...), so that
// collect_params() of a whole network names every parameter uniquely and save_parameters
// writes those names.
//
// A Block is not copyable (its parameters are its own); it may be moved until it is
// registered in another block.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tandem/device.h"
#include "tandem/nd/hybridize.h"
#include "tandem/nd/ndarray.h"
#include "tandem/nd/save_load.h"
#include "tandem/nn/initializer.h"
#include "tandem/nn/parameter.h"

namespace tandem::nn {

// The parameters of a block and its children, by full name, in registration order (depth
// first).
class ParameterDict {
 public:
  using Entry = std::pair<std::string, std::shared_ptr<Parameter>>;

  void add(std::shared_ptr<Parameter> parameter);
  // The parameter called `name`; throws tandem::Error listing the names there are otherwise.
  Parameter& operator[](const std::string& name) const;
  bool contains(const std::string& name) const;
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

  // Parameter::initialize on each one.
  void initialize(const Initializer& init, const std::vector<Device>& devices = {cpu()},
                  bool force_reinit = false) const;
  void zero_grad() const;
  // Parameter::set_grad_req on each one.
  void set_grad_req(GradReq grad_req) const;

 private:
  std::vector<Entry> entries_;
};

class Block {
 public:
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  Block(Block&&) = default;
  Block& operator=(Block&&) = default;
  virtual ~Block() = default;

  // The block's computation. Called with autograd recording or not; layers whose behaviour
  // differs between training and prediction (Dropout, BatchNorm) read autograd::is_training().
  virtual nd::NDArray forward(const nd::NDArray& x) = 0;
  // forward(x), or, once hybridize() was called, its recorded graph (see hybridize()).
  nd::NDArray operator()(const nd::NDArray& x);

  // Hybridize (Gluon's net.hybridize()): from now on, a call net(x) records forward once per
  // input signature (shape, dtype, device, is_training(), is_recording()) with
  // nd::hybridize's machinery (tandem/nd/hybridize.h) and replays it at later calls: the
  // host code of forward no longer runs, and its intermediate arrays keep their memory.
  //   net.hybridize();
  //   nd::NDArray y = net(x);       // records, then runs
  //   y = net(x2);                  // replays; the same output array, overwritten
  // The parameters are read by every replay, so updates between calls (a Trainer step,
  // load_parameters, set_data) are seen. Under autograd::record() the backward is recorded
  // and replayed too: each call is one autograd node whose gradient replays the recorded
  // backward and delivers the parameters' gradients (a second call before the first call's
  // backward runs eagerly; tandem/nd/hybridize.h has the rules). Rules: the output of a call is
  // overwritten by the next call with the same signature (keep it with .copy()); while a
  // parameter's shape is still deferred the call runs eagerly (its first forward creates the
  // parameters); set_grad_req on a parameter needs hybridize() again.
  // Block::initialize(force_reinit) and cast() forget the recordings (they replace parameter
  // arrays); replacing one by hand (Parameter::initialize or cast) needs hybridize() again.
  // hybridize(false) goes back to the eager path.
  // `options` (tandem/graph.h): {.fail_as_one_unit = true} records the forward and its
  // backward as windows that fail as one unit (tandem/nd/hybridize.h): on an accelerator a
  // network's forward replays as one device graph and its backward as one, instead of a graph
  // per chain of ops; a failure poisons every output of the call (every gradient of its
  // backward). The default keeps the errors of eager calls.
  //   net.hybridize(true, {.fail_as_one_unit = true});
  void hybridize(bool active = true, CaptureOptions options = {});
  bool hybridized() const { return hybrid_ != nullptr; }
  // The recordings (null unless hybridized): how many signatures, whether the last call
  // replayed.
  const nd::HybridCache* hybrid_cache() const { return hybrid_.get(); }

  // Every parameter of this block and its children.
  ParameterDict collect_params() const;
  // collect_params().initialize(...): Gluon's net.initialize(init, ctx).
  void initialize(const Initializer& init = Uniform(), const std::vector<Device>& devices = {cpu()},
                  bool force_reinit = false);
  // Moves every parameter to `device` (Parameter::reset_devices: the values of each one's
  // first copy, copied there; gradients zero), or replicates it on `devices` for data
  // parallelism; forgets hybridize's recordings. Parameters not initialized yet will be made
  // there. Returns *this, so that  net.to(tandem::sim(0))(x)  reads naturally.
  //   net.to(tandem::sim(1));
  //   net.to({tandem::sim(0), tandem::sim(1)});
  Block& to(Device device) { return to(std::vector<Device>{device}); }
  Block& to(const std::vector<Device>& devices);
  // A new, independent network of the same structure and settings, with parameters of its
  // own that hold copies of this block's values on the same devices (queued copies), the same
  // dtypes and grad_reqs. Parameters not initialized yet (or whose shape is still deferred) are
  // left uninitialized in the clone; hybridize's recordings are not copied. Throws
  // tandem::Error naming the class when a block of the tree does not override
  // clone_structure().
  //   std::shared_ptr<nn::Block> twin = net.clone();
  std::shared_ptr<Block> clone() const;
  // A new block of the same class and settings, with fresh, uninitialized parameters: what
  // clone() builds before it copies the values. The library's layers and Sequential override
  // it; a user block overrides it to be cloneable, e.g.
  //   std::shared_ptr<nn::Block> clone_structure() const override {
  //     return std::make_shared<Residual>(width_);
  //   }
  virtual std::shared_ptr<Block> clone_structure() const;
  // Converts every parameter to `dtype` (e.g. float64 for gradient checks).
  void cast(nd::DType dtype);

  // Writes every initialized parameter's values (its first copy) to `path` with nd::save,
  // under the parameters' full names. A sync point. Throws tandem::Error naming a parameter
  // that is not initialized (run a forward first when its shape is deferred).
  void save_parameters(const std::string& path) const;
  // Loads `path` into the parameters (every copy), with nd::load_into: names, shapes and
  // dtypes must match (tandem::Error naming the file and the parameter otherwise; nothing is
  // written then). Parameters that are not initialized yet are created on `devices` with the
  // file's shapes first, so a fresh network can be loaded without a forward.
  void load_parameters(const std::string& path, const std::vector<Device>& devices = {cpu()},
                       const nd::LoadIntoOptions& options = {});

  // The direct children, by name.
  const std::vector<std::pair<std::string, std::shared_ptr<Block>>>& children() const {
    return children_;
  }
  // The block's own name prefix ("" for a network's root, "0." for a Sequential's first child).
  const std::string& prefix() const { return prefix_; }

 protected:
  // Registers a parameter of this block under `name` (unique in the block).
  std::shared_ptr<Parameter> register_parameter(const std::string& name, nd::Shape shape,
                                                ParameterOptions options = {});
  // Registers `child` under `name` (unique in the block) and returns it, now shared.
  template <class B>
  std::shared_ptr<B> register_child(const std::string& name, B child) {
    auto shared = std::make_shared<B>(std::move(child));
    adopt(name, shared);
    return shared;
  }
  template <class B>
  std::shared_ptr<B> register_child(const std::string& name, std::shared_ptr<B> child) {
    adopt(name, child);
    return child;
  }

 private:
  void adopt(const std::string& name, std::shared_ptr<Block> child);
  void set_prefix(const std::string& prefix);
  void check_unique(const std::string& name) const;
  // The parameter arrays may have been replaced: record again at the next call.
  void forget_recordings();

  std::string prefix_;
  std::unique_ptr<nd::HybridCache> hybrid_;  // set while hybridized
  bool parameters_ready_ = false;            // every parameter initialized (seen once)
  // Parameter::handles_epoch() when the block last looked at its parameters' handles, and the
  // sum of their handles_generation() then (generations only grow, so any change moves it).
  std::uint64_t handles_epoch_seen_ = 0;
  std::uint64_t handles_generations_ = 0;
  std::vector<std::pair<std::string, std::shared_ptr<Parameter>>> params_;  // local names
  std::vector<std::pair<std::string, std::shared_ptr<Block>>> children_;
};

}  // namespace tandem::nn
