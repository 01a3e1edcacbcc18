// GradientExchange: per-step counts of finished gradient copies, and the sums they trigger.
#include "tandem/nn/gradient_exchange.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "nn/gradient_buckets.h"
#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/multi_device.h"

namespace tandem::nn {

// Shared by the exchange and its callbacks (which hold it weakly: a callback outliving the
// exchange does nothing). One mutex: backward calls on several threads may report at once.
struct GradientExchange::State {
  struct Slot {
    std::shared_ptr<Parameter> parameter;
    std::vector<bool> ready;       // per copy: backward has queued its last gradient op this step
    bool summed = false;           // its exchange was queued this step
    bool all_ready = false;        // every copy is ready this step
    bool crossed = false;          // summed across processes this step
    bool cross_ready = false;      // one copy: backward has queued its gradient this step
    std::size_t bucket = 0;        // index into buckets, once planned
    std::size_t cross_bucket = 0;  // index into cross_buckets, once planned
  };

  void report(std::size_t slot_index, std::size_t copy) {
    const std::lock_guard<std::mutex> lock(mutex);
    Slot& slot = slots[slot_index];
    Parameter& parameter = *slot.parameter;
    const std::size_t copies = parameter.devices().size();
    if (copies == 1 && cross_process != nullptr && parameter.grad_req() == GradReq::write &&
        !slot.crossed) {
      report_across_processes(slot_index);
      return;
    }
    if (copies < 2 || parameter.grad_req() != GradReq::write) return;
    if (slot.ready.size() != copies) slot.ready.assign(copies, false);
    if (slot.ready[copy]) {
      throw Error("tandem: GradientExchange: the gradient of parameter '" + parameter.name() +
                  "' on " + to_string(parameter.devices()[copy]) +
                  " was produced twice before Trainer::step (two backward calls through one "
                  "device's copy); its first value may already be summed across devices. Run "
                  "one backward per device per step, or use GradReq::add");
    }
    slot.ready[copy] = true;
    note_last_gradient(parameter, copy);
    if (planned) pack_if_ready(slot.bucket, copy);
    for (const bool done : slot.ready) {
      if (!done) return;
    }
    slot.all_ready = true;
    if (!planned) {
      ready_order.push_back(slot_index);
      sum(slot);
      ++summed_during_backward;
      return;
    }
    // The bucket goes once its last member is ready.
    const std::vector<std::size_t>& bucket = buckets[slot.bucket];
    for (const std::size_t member : bucket) {
      if (!slots[member].all_ready) return;
    }
    send_bucket(slot.bucket);
    summed_during_backward += bucket.size();
  }

  // A gradient with one copy here is final in the queues: before the plan it is summed across
  // the processes alone (and its place in backward's order recorded); after, its bucket goes
  // once its last member is ready. Caller holds the mutex.
  void report_across_processes(std::size_t slot_index) {
    Slot& slot = slots[slot_index];
    slot.cross_ready = true;
    if (!cross_planned) {
      cross_ready_order.push_back(slot_index);
      summed_during_backward += cross_sum({slot_index});
      return;
    }
    const std::vector<std::size_t>& bucket = cross_buckets[slot.cross_bucket];
    for (const std::size_t member : bucket) {
      if (!slots[member].cross_ready) return;
    }
    summed_during_backward += cross_sum(bucket);
  }

  // Queues the sum across processes of `members` (indices into slots) not summed yet this step:
  // one collective when they can go together, else one each. Returns how many it summed. Caller
  // holds the mutex.
  std::size_t cross_sum(const std::vector<std::size_t>& members) {
    auto paused = autograd::pause();
    std::vector<Parameter*> parameters;
    for (const std::size_t member : members) {
      if (!slots[member].crossed) parameters.push_back(slots[member].parameter.get());
    }
    if (parameters.empty()) return 0;
    if (detail::summable_together(parameters, detail::BucketScope::across_processes)) {
      detail::sum_across_processes(parameters, *cross_process);
    } else {
      for (Parameter* parameter : parameters) {
        for (nd::NDArray gradient : parameter->list_grad()) cross_process->sum_in_place(gradient);
      }
    }
    for (const std::size_t member : members) slots[member].crossed = true;
    return parameters.size();
  }

  void note_last_gradient(const Parameter& parameter, std::size_t copy) {
    const Device device = parameter.devices()[copy];
    for (auto& [where, gradient] : last_gradients) {
      if (where == device) {
        gradient = parameter.grad(device);
        return;
      }
    }
    last_gradients.emplace_back(device, parameter.grad(device));
  }

  std::vector<Parameter*> members_of(std::size_t bucket) const {
    std::vector<Parameter*> members;
    for (const std::size_t member : buckets[bucket])
      members.push_back(slots[member].parameter.get());
    return members;
  }

  // Packs the bucket's gradients on `copy` once that copy of every member is ready, so that the
  // pack is queued right behind them on that device. Caller holds the mutex.
  void pack_if_ready(std::size_t bucket, std::size_t copy) {
    for (const std::size_t member : buckets[bucket]) {
      const std::vector<bool>& ready = slots[member].ready;
      if (copy >= ready.size() || !ready[copy]) return;
    }
    const std::vector<Parameter*> members = members_of(bucket);
    if (!detail::summable_together(members)) return;
    auto paused = autograd::pause();
    if (bucket_sums[bucket] == nullptr)
      bucket_sums[bucket] = std::make_unique<detail::BucketSum>(members);
    bucket_sums[bucket]->pack(copy);
  }

  // Every parameter with a gradient is initialized: the buckets can be planned, from the order
  // the gradients became ready in the step just finished. Until then each parameter is summed
  // alone. Caller holds the mutex.
  void plan_if_possible() {
    plan_across_processes_if_possible();
    if (planned || ready_order.empty()) return;
    std::vector<std::shared_ptr<Parameter>> parameters;
    for (const Slot& slot : slots) {
      if (!slot.parameter->initialized() && slot.parameter->grad_req() != GradReq::null) return;
      parameters.push_back(slot.parameter);
    }
    buckets = detail::plan_gradient_buckets(parameters, ready_order, bucket_bytes);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      for (const std::size_t member : buckets[b]) slots[member].bucket = b;
    }
    bucket_sums.resize(buckets.size());
    planned = true;
  }

  // The same for the buckets across processes (parameters with one copy). Caller holds the
  // mutex.
  void plan_across_processes_if_possible() {
    if (cross_planned || cross_ready_order.empty()) return;
    std::vector<std::shared_ptr<Parameter>> parameters;
    for (const Slot& slot : slots) {
      if (!slot.parameter->initialized() && slot.parameter->grad_req() != GradReq::null) return;
      parameters.push_back(slot.parameter);
    }
    cross_buckets = detail::plan_gradient_buckets(parameters, cross_ready_order, cross_bucket_bytes,
                                                  detail::BucketScope::across_processes);
    for (std::size_t b = 0; b < cross_buckets.size(); ++b) {
      for (const std::size_t member : cross_buckets[b]) slots[member].cross_bucket = b;
    }
    cross_planned = true;
  }

  static void sum(Slot& slot) {
    auto paused = autograd::pause();
    nd::allreduce(slot.parameter->list_grad());
    slot.summed = true;
  }

  // The gradient this step's backward reported last on `device` (undefined when none).
  nd::NDArray last_gradient_on(Device device) const {
    for (const auto& [where, gradient] : last_gradients) {
      if (where == device) return gradient;
    }
    return {};
  }

  // Sends the bucket (or sums its members one by one when they cannot be summed together);
  // once the step's last bucket is sent, queues the adds of every bucket sent. Caller holds the
  // mutex.
  void send_bucket(std::size_t bucket) {
    auto paused = autograd::pause();
    const std::vector<Parameter*> members = members_of(bucket);
    std::unique_ptr<detail::BucketSum> packed = std::move(bucket_sums[bucket]);
    if (packed != nullptr && detail::summable_together(members)) {
      packed->send();
      sent.push_back(std::move(packed));
    } else {
      for (Parameter* member : members) nd::allreduce(member->list_grad());
    }
    for (const std::size_t member : buckets[bucket]) slots[member].summed = true;
    // The last bucket a backward can complete: every device's backward is queued by now.
    for (const Slot& slot : slots) {
      const Parameter& parameter = *slot.parameter;
      if (!slot.summed && parameter.grad_req() == GradReq::write && parameter.initialized() &&
          parameter.devices().size() > 1) {
        return;
      }
    }
    add_sent();
  }

  // Queues the adds of the buckets sent this step. Caller holds the mutex.
  void add_sent() {
    auto paused = autograd::pause();
    for (const std::unique_ptr<detail::BucketSum>& bucket : sent) {
      std::vector<nd::NDArray> after;
      for (const Device device : bucket->devices()) after.push_back(last_gradient_on(device));
      bucket->sum(after);
    }
    sent.clear();
  }

  // Sums across processes what backward did not: after the cross-device sums. Caller holds the
  // mutex.
  // Parameters with one copy go by their buckets (what is left of a bucket whose members were
  // not all produced by backward goes together), the others one by one; in slot order, the same
  // on every process.
  void cross_the_rest() {
    if (cross_process == nullptr) return;
    auto paused = autograd::pause();
    if (cross_planned) {
      for (const std::vector<std::size_t>& bucket : cross_buckets) {
        std::vector<std::size_t> left;
        for (const std::size_t member : bucket) {
          const Parameter& parameter = *slots[member].parameter;
          if (!slots[member].crossed && parameter.grad_req() != GradReq::null &&
              parameter.initialized() && parameter.devices().size() == 1) {
            left.push_back(member);
          }
        }
        if (!left.empty()) cross_sum(left);
      }
    }
    for (Slot& slot : slots) {
      const Parameter& parameter = *slot.parameter;
      if (slot.crossed || parameter.grad_req() == GradReq::null || !parameter.initialized()) {
        continue;
      }
      for (nd::NDArray gradient : parameter.list_grad()) cross_process->sum_in_place(gradient);
      slot.crossed = true;
    }
  }

  // Caller holds the mutex.
  void start_next_step() {
    add_sent();
    last_gradients.clear();
    plan_if_possible();
    if (!planned) ready_order.clear();  // recorded again in the next step
    if (!cross_planned) cross_ready_order.clear();
    for (auto& packed : bucket_sums) packed.reset();
    for (Slot& slot : slots) {
      slot.ready.assign(slot.ready.size(), false);
      slot.summed = false;
      slot.all_ready = false;
      slot.crossed = false;
      slot.cross_ready = false;
    }
    summed_during_backward = 0;
  }

  // The parameter names of each bucket of `plan`. Caller holds the mutex.
  std::vector<std::vector<std::string>> names_of(
      const std::vector<std::vector<std::size_t>>& plan) const {
    std::vector<std::vector<std::string>> names;
    for (const std::vector<std::size_t>& bucket : plan) {
      std::vector<std::string>& bucket_names = names.emplace_back();
      for (const std::size_t member : bucket)
        bucket_names.push_back(slots[member].parameter->name());
    }
    return names;
  }

  std::mutex mutex;
  std::vector<Slot> slots;
  std::size_t summed_during_backward = 0;
  std::size_t bucket_bytes = 0;
  std::shared_ptr<CrossProcessReducer> cross_process;
  bool planned = false;
  std::vector<std::vector<std::size_t>> buckets;  // indices into slots
  // Slots in the order they became ready on every copy, recorded until the plan is made.
  std::vector<std::size_t> ready_order;
  // Per bucket, this step's packs (null until the first one).
  std::vector<std::unique_ptr<detail::BucketSum>> bucket_sums;
  // Per device, the gradient reported last this step (what a bucket's sum is queued behind).
  std::vector<std::pair<Device, nd::NDArray>> last_gradients;
  // Across processes: the bucket cap, the plan (indices into slots), and until it is made the
  // order in which backward finished the one-copy gradients.
  std::size_t cross_bucket_bytes = 0;
  bool cross_planned = false;
  std::vector<std::vector<std::size_t>> cross_buckets;
  std::vector<std::size_t> cross_ready_order;
  // Buckets sent this step whose adds are not queued yet.
  std::vector<std::unique_ptr<detail::BucketSum>> sent;
};

GradientExchange::GradientExchange(std::vector<std::shared_ptr<Parameter>> parameters,
                                   GradientExchangeOptions options,
                                   std::shared_ptr<CrossProcessReducer> cross_process)
    : state_(std::make_shared<State>()) {
  state_->bucket_bytes = options.bucket_bytes;
  state_->cross_bucket_bytes = options.cross_process_bucket_bytes;
  state_->cross_process = std::move(cross_process);
  state_->slots.reserve(parameters.size());
  for (std::shared_ptr<Parameter>& parameter : parameters) {
    if (parameter == nullptr) throw Error("tandem: GradientExchange: a null parameter");
    state_->slots.push_back(
        State::Slot{std::move(parameter), {}, false, false, false, false, 0, 0});
  }
  const std::weak_ptr<State> weak = state_;
  for (std::size_t i = 0; i < state_->slots.size(); ++i) {
    state_->slots[i].parameter->set_gradient_ready_callback([weak, i](std::size_t copy) {
      if (const std::shared_ptr<State> state = weak.lock()) state->report(i, copy);
    });
  }
}

GradientExchange::~GradientExchange() = default;

void GradientExchange::finish(const std::vector<const Parameter*>& skipped) {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  for (State::Slot& slot : state_->slots) {
    const Parameter& parameter = *slot.parameter;
    if (std::find(skipped.begin(), skipped.end(), &parameter) != skipped.end()) continue;
    if (!slot.summed && parameter.grad_req() != GradReq::null && parameter.initialized() &&
        parameter.devices().size() > 1) {
      State::sum(slot);
    }
  }
  // The cross-device adds of the buckets first, then the sums across processes.
  state_->add_sent();
  state_->cross_the_rest();
  state_->start_next_step();
}

void GradientExchange::start_next_step() {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  state_->start_next_step();
}

std::size_t GradientExchange::summed_during_backward() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->summed_during_backward;
}

std::size_t GradientExchange::buckets() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->buckets.size();
}

std::size_t GradientExchange::cross_process_buckets() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cross_buckets.size();
}

std::vector<std::vector<std::string>> GradientExchange::bucket_plan() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->names_of(state_->buckets);
}

std::vector<std::vector<std::string>> GradientExchange::cross_process_bucket_plan() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->names_of(state_->cross_buckets);
}

}  // namespace tandem::nn
