// Block: registration, hierarchical names, parameters, saving and loading.
#include "tandem/nn/block.h"

#include <algorithm>
#include <string>
#include <typeinfo>

#include "core/modes.h"
#include "tandem/errors.h"
#include "tandem/nd/autograd.h"

namespace tandem::nn {

void ParameterDict::add(std::shared_ptr<Parameter> parameter) {
  const std::string name = parameter->name();
  if (contains(name)) {
    // The same parameter reached twice (a block shared between two parents) is listed once.
    if (&(*this)[name] == parameter.get()) return;
    throw Error("tandem: collect_params: two different parameters are called '" + name + "'");
  }
  entries_.emplace_back(name, std::move(parameter));
}

bool ParameterDict::contains(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& entry) { return entry.first == name; });
}

Parameter& ParameterDict::operator[](const std::string& name) const {
  for (const Entry& entry : entries_) {
    if (entry.first == name) return *entry.second;
  }
  std::string names;
  for (const Entry& entry : entries_) names += (names.empty() ? "" : ", ") + entry.first;
  throw Error("tandem: ParameterDict: no parameter called '" + name +
              "' (there are: " + (names.empty() ? std::string("none") : names) + ")");
}

void ParameterDict::initialize(const Initializer& init, const std::vector<Device>& devices,
                               bool force_reinit) const {
  for (const Entry& entry : entries_) entry.second->initialize(init, devices, force_reinit);
}

void ParameterDict::zero_grad() const {
  for (const Entry& entry : entries_) entry.second->zero_grad();
}

void ParameterDict::set_grad_req(GradReq grad_req) const {
  for (const Entry& entry : entries_) entry.second->set_grad_req(grad_req);
}

nd::NDArray Block::operator()(const nd::NDArray& x) {
  // While export_block traces the forward, every op must run (a replay would hide them).
  if (hybrid_ == nullptr || nd::detail::modes_see_each_op()) return forward(x);
  // A parameter that replaced its handles (set_grad_req, cast, initialize) has new autograd
  // leaves: recordings that name the old ones would deliver gradients to them.
  if (const std::uint64_t epoch = nn::Parameter::handles_epoch(); epoch != handles_epoch_seen_) {
    std::uint64_t generations = 0;
    for (const auto& [name, parameter] : collect_params())
      generations += parameter->handles_generation();
    if (generations != handles_generations_) forget_recordings();
    handles_generations_ = generations;
    handles_epoch_seen_ = epoch;
  }
  if (!parameters_ready_) {
    // A deferred parameter gets its arrays at the first forward: that forward runs eagerly,
    // else the graph would recreate (and re-draw) the parameter at every replay.
    for (const auto& [name, parameter] : collect_params()) {
      if (!parameter->initialized()) return forward(x);
    }
    parameters_ready_ = true;
  }
  const nd::ArrayFunction run_forward = [this](const std::vector<nd::NDArray>& inputs) {
    return std::vector<nd::NDArray>{forward(inputs[0])};
  };
  return hybrid_->call(run_forward, {x})[0];
}

void Block::hybridize(bool active, CaptureOptions options) {
  parameters_ready_ = false;
  hybrid_ = active ? std::make_unique<nd::HybridCache>(options) : nullptr;
}

ParameterDict Block::collect_params() const {
  ParameterDict dict;
  for (const auto& [name, parameter] : params_) dict.add(parameter);
  for (const auto& [name, child] : children_) {
    for (const ParameterDict::Entry& entry : child->collect_params()) dict.add(entry.second);
  }
  return dict;
}

void Block::initialize(const Initializer& init, const std::vector<Device>& devices,
                       bool force_reinit) {
  collect_params().initialize(init, devices, force_reinit);
  forget_recordings();
}

std::shared_ptr<Block> Block::clone_structure() const {
  throw Error(std::string("tandem: Block::clone: the block '") + prefix_ + "' (class " +
              typeid(*this).name() +
              ") does not override clone_structure(); override it to return a new block made "
              "with the same settings");
}

std::shared_ptr<Block> Block::clone() const {
  const std::shared_ptr<Block> twin = clone_structure();
  const ParameterDict mine = collect_params();
  const ParameterDict theirs = twin->collect_params();
  if (mine.size() != theirs.size()) {
    throw Error("tandem: Block::clone: clone_structure() of '" + prefix_ + "' made a block with " +
                std::to_string(theirs.size()) + " parameters instead of " +
                std::to_string(mine.size()));
  }
  auto paused = autograd::pause();
  auto other = theirs.begin();
  for (const ParameterDict::Entry& entry : mine) {
    const Parameter& from = *entry.second;
    Parameter& to = *(other++)->second;
    // The clone's names lack this block's own prefix, if it is a child of another block.
    if (!from.name().ends_with(to.name())) {
      throw Error("tandem: Block::clone: clone_structure() of '" + prefix_ +
                  "' made the parameter '" + to.name() + "' where '" + from.name() +
                  "' was expected");
    }
    to.set_grad_req(from.grad_req());
    to.cast(from.dtype());
    if (!from.initialized()) continue;
    if (!to.shape_known()) to.set_shape(from.shape());
    to.initialize(Zeros(), from.devices(), /*force_reinit=*/true);
    for (const Device& device : from.devices()) to.data(device).assign(from.data(device));
  }
  return twin;
}

Block& Block::to(const std::vector<Device>& devices) {
  const ParameterDict params = collect_params();
  // Every parameter checks the same list, and makes its new copies before it drops the old
  // ones: a bad list (empty, a device twice, one not present) throws at the first parameter
  // and leaves the network as it was.
  if (devices.empty()) throw Error("tandem: Block::to: no device given");
  for (const ParameterDict::Entry& entry : params) entry.second->reset_devices(devices);
  forget_recordings();
  return *this;
}

void Block::cast(nd::DType dtype) {
  for (const ParameterDict::Entry& entry : collect_params()) entry.second->cast(dtype);
  forget_recordings();
}

void Block::forget_recordings() {
  parameters_ready_ = false;
  if (hybrid_ != nullptr) hybrid_->clear();
}

void Block::check_unique(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw Error("tandem: Block: the name '" + name +
                "' is empty or holds a '.' (dots join the names of nested blocks)");
  }
  const auto taken = [&](const auto& entries) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const auto& entry) { return entry.first == name; });
  };
  if (taken(params_) || taken(children_)) {
    throw Error("tandem: Block '" + prefix_ + "': the name '" + name +
                "' is already taken by a parameter or a child of this block");
  }
}

std::shared_ptr<Parameter> Block::register_parameter(const std::string& name, nd::Shape shape,
                                                     ParameterOptions options) {
  check_unique(name);
  auto parameter = std::make_shared<Parameter>(prefix_ + name, shape, std::move(options));
  params_.emplace_back(name, parameter);
  return parameter;
}

void Block::adopt(const std::string& name, std::shared_ptr<Block> child) {
  check_unique(name);
  if (!child) throw Error("tandem: Block: register_child('" + name + "') of a null block");
  child->set_prefix(prefix_ + name + ".");
  children_.emplace_back(name, std::move(child));
}

void Block::set_prefix(const std::string& prefix) {
  prefix_ = prefix;
  for (auto& [name, parameter] : params_) parameter->set_name(prefix_ + name);
  for (auto& [name, child] : children_) child->set_prefix(prefix_ + name + ".");
}

void Block::save_parameters(const std::string& path) const {
  nd::NamedArrays arrays;
  for (const ParameterDict::Entry& entry : collect_params()) {
    const Parameter& parameter = *entry.second;
    if (!parameter.initialized()) {
      throw Error("tandem: save_parameters('" + path + "'): the parameter '" + entry.first +
                  "' is not initialized" +
                  (parameter.deferred() ? " (its shape is inferred at the first forward: run "
                                          "the network once first)"
                                        : " (call initialize first)"));
    }
    arrays.emplace_back(entry.first, parameter.list_data().front());
  }
  nd::save(path, arrays);
}

void Block::load_parameters(const std::string& path, const std::vector<Device>& devices,
                            const nd::LoadIntoOptions& options) {
  const ParameterDict params = collect_params();
  // Parameters not created yet are created on `devices` with the file's shapes.
  const nd::NamedArrays file = nd::load(path);
  for (const ParameterDict::Entry& entry : params) {
    Parameter& parameter = *entry.second;
    if (parameter.initialized()) continue;
    const auto found = std::find_if(file.begin(), file.end(),
                                    [&](const auto& named) { return named.first == entry.first; });
    if (found == file.end()) continue;  // load_into below reports it (or allows it)
    const nd::Shape& shape = found->second.shape();
    bool fits = shape.ndim() == parameter.shape().ndim();
    for (int axis = 0; fits && axis < shape.ndim(); ++axis) {
      fits = parameter.shape()[axis] == 0 || parameter.shape()[axis] == shape[axis];
    }
    if (!fits) {
      throw Error("tandem: load_parameters('" + path + "'): the array '" + entry.first +
                  "' has shape " + shape.to_string() + " but the parameter has shape " +
                  parameter.shape().to_string() + "; was the file saved from another network?");
    }
    parameter.initialize(Zeros(), devices, /*force_reinit=*/true);
    parameter.set_shape(shape);
  }
  // The first copies take the file's values (load_into checks everything before writing);
  // the other copies are copied from them.
  nd::NamedArrays targets;
  for (const ParameterDict::Entry& entry : params) {
    if (entry.second->initialized()) {
      targets.emplace_back(entry.first, entry.second->list_data().front());
    } else if (!options.allow_missing) {
      throw Error("tandem: load_parameters('" + path + "'): the file has no array '" + entry.first +
                  "' for the parameter of that name (and the parameter is not "
                  "initialized); the file holds " +
                  std::to_string(file.size()) + " arrays");
    }
  }
  auto paused = autograd::pause();
  nd::load_into(path, targets, options);
  for (const ParameterDict::Entry& entry : params) {
    if (!entry.second->initialized()) continue;
    const std::vector<nd::NDArray> copies = entry.second->list_data();
    for (std::size_t i = 1; i < copies.size(); ++i) copies.front().copyto(copies[i]);
  }
}

}  // namespace tandem::nn
