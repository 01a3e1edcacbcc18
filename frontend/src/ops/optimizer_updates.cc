// Optimizer updates in place: checks at the call, then one queued kernel (the sgd_update and
// adam_update families), or the unfused element-wise ops when an operand is strided or overlaps
// another one differently (the fused kernels take dense, disjoint arrays). The multi_ forms
// group their entries by place and dtype and queue one grouped kernel (sgd_update_group,
// adam_update_group) per group.
#include "tandem/nd/optimizer_updates.h"

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/access.h"
#include "core/checks.h"
#include "core/kernels.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "core/view_op.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"

namespace tandem::nd {

namespace {

// The arrays must match the weight: place, dtype (floating), shape.
void check_update(const char* op, const NDArray& weight,
                  std::initializer_list<const NDArray*> others) {
  detail::check_defined(op, weight);
  detail::check_floating(op, weight.dtype());
  for (const NDArray* other : others) {
    detail::check_same_place(op, {&weight, other});
    detail::check_same_dtype(op, weight, *other);
    if (!(other->shape() == weight.shape())) {
      throw Error(std::string("tandem: ") + op + ": every array must have the weight's shape " +
                  weight.shape().to_string() + ", got " + other->shape().to_string());
    }
  }
}

// Whether the fused kernel can take these arrays: all dense, and no two sharing memory
// unless they are the very same view (then each element is read before it is written).
bool fusable(std::initializer_list<const NDArray*> arrays) {
  for (const NDArray* a : arrays) {
    if (!a->is_contiguous()) return false;
    for (const NDArray* b : arrays) {
      if (a != b && detail::overlaps_differently(*a, *b)) return false;
    }
  }
  return true;
}

// The kernels' scalars of an Adam update.
ops::AdamStep adam_step(const AdamUpdateOptions& options) {
  return {.rescale = options.rescale_grad,
          .wd = options.wd,
          .beta1 = options.beta1,
          .beta2 = options.beta2,
          .epsilon = options.epsilon,
          .step_size = options.learning_rate};
}

}  // namespace

void sgd_update(NDArray& weight, const NDArray& grad, const SgdUpdateOptions& options) {
  const char* op = "sgd_update";
  check_update(op, weight, {&grad});
  const double grad_scale = options.learning_rate * options.rescale_grad;
  const double decay = options.learning_rate * options.wd;
  if (!fusable({&weight, &grad})) {
    if (decay != 0.0) weight *= 1.0 - decay;
    weight -= grad * grad_scale;
    return;
  }
  detail::note_in_place_write(op, weight, &grad);
  detail::push_view_op<3>(weight.engine(), weight.device(), op,
                          {detail::lazy_view(weight), detail::lazy_view(grad), detail::LazyView{}},
                          {grad.var()}, {weight.var()},
                          [grad_scale, decay](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.sgd_update(s, v[0], v[1], v[2], grad_scale, decay, 0.0);
                          });
}

void sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& momentum,
                    const SgdUpdateOptions& options) {
  const char* op = "sgd_mom_update";
  check_update(op, weight, {&grad, &momentum});
  const double grad_scale = options.learning_rate * options.rescale_grad;
  const double decay = options.learning_rate * options.wd;
  if (!fusable({&weight, &grad, &momentum})) {
    momentum *= options.momentum;
    momentum -= grad * grad_scale;
    if (decay != 0.0) momentum -= weight * decay;
    weight += momentum;
    return;
  }
  detail::note_in_place_write(op, momentum, &grad);
  detail::note_in_place_write(op, weight, &momentum);
  const double rate = options.momentum;
  detail::push_view_op<3>(
      weight.engine(), weight.device(), op,
      {detail::lazy_view(weight), detail::lazy_view(grad), detail::lazy_view(momentum)},
      {grad.var()}, {weight.var(), momentum.var()},
      [grad_scale, decay, rate](const ops::Kernels& k, Stream* s, const auto& v) {
        k.sgd_update(s, v[0], v[1], v[2], grad_scale, decay, rate);
      });
}

void adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var,
                 const AdamUpdateOptions& options) {
  const char* op = "adam_update";
  check_update(op, weight, {&grad, &mean, &var});
  if (!fusable({&weight, &grad, &mean, &var})) {
    NDArray g = options.rescale_grad == 1.0 ? grad : grad * options.rescale_grad;
    if (options.wd != 0.0) g = g + weight * options.wd;
    mean *= options.beta1;
    mean += g * (1.0 - options.beta1);
    var *= options.beta2;
    var += nd::square(g) * (1.0 - options.beta2);
    weight -= mean / (nd::sqrt(var) + options.epsilon) * options.learning_rate;
    return;
  }
  detail::note_in_place_write(op, mean, &grad);
  detail::note_in_place_write(op, var, &grad);
  detail::note_in_place_write(op, weight, &mean);
  const ops::AdamStep step = adam_step(options);
  detail::push_view_op<4>(weight.engine(), weight.device(), op,
                          {detail::lazy_view(weight), detail::lazy_view(grad),
                           detail::lazy_view(mean), detail::lazy_view(var)},
                          {grad.var()}, {weight.var(), mean.var(), var.var()},
                          [step](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.adam_update(s, v[0], v[1], v[2], v[3], step);
                          });
}

namespace {

// One entry of a multi_ update: the weight, its gradient and up to two state arrays.
struct UpdateEntry {
  NDArray* weight = nullptr;
  const NDArray* grad = nullptr;
  NDArray* first_moment = nullptr;   // momentum, or Adam's mean
  NDArray* second_moment = nullptr;  // Adam's variance

  std::vector<const NDArray*> arrays() const {
    std::vector<const NDArray*> all{weight, grad};
    if (first_moment != nullptr) all.push_back(first_moment);
    if (second_moment != nullptr) all.push_back(second_moment);
    return all;
  }
};

// The entries that make one grouped op: one engine, device and dtype, no memory shared between
// two entries.
struct EntryGroup {
  Engine* engine = nullptr;
  Device device;
  DType dtype = DType::float32;
  std::vector<std::size_t> entries;
  std::unordered_set<const detail::Storage*> storages;
};

const detail::Storage* storage_of(const NDArray& array) {
  return detail::NDArrayAccess::storage(array).get();
}

// A failure of entry i of n, as the multi_ calls report it.
UpdateEntryError entry_error(std::size_t i, std::size_t n, const Error& error) {
  return UpdateEntryError(i, std::string(error.what()) + " (entry " + std::to_string(i) + " of " +
                                 std::to_string(n) + ")");
}

// Checks every entry as the single-entry call would, naming the entry; nothing is queued yet.
void check_entries(const char* op, const std::vector<UpdateEntry>& entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const UpdateEntry& e = entries[i];
    try {
      const std::vector<const NDArray*> arrays = e.arrays();
      for (std::size_t a = 1; a < arrays.size(); ++a) check_update(op, *e.weight, {arrays[a]});
    } catch (const Error& error) {
      throw entry_error(i, entries.size(), error);
    }
  }
}

// Splits the entries into groups and singles (see the header: an entry that cannot join a
// group, or touches memory of an earlier single, is a single).
void plan_groups(const std::vector<UpdateEntry>& entries, std::vector<EntryGroup>& groups,
                 std::vector<std::size_t>& singles) {
  std::unordered_set<const detail::Storage*> single_storages;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const UpdateEntry& e = entries[i];
    const std::vector<const NDArray*> arrays = e.arrays();
    bool grouped = true;
    for (const NDArray* a : arrays) {
      if (!a->is_contiguous() || single_storages.count(storage_of(*a)) != 0) grouped = false;
      for (const NDArray* b : arrays) {
        if (a != b && detail::overlaps_differently(*a, *b)) grouped = false;
      }
    }
    EntryGroup* group = nullptr;
    if (grouped) {
      Engine* engine = &e.weight->engine();
      for (EntryGroup& g : groups) {
        if (g.engine == engine && g.device == e.weight->device() && g.dtype == e.weight->dtype()) {
          group = &g;
        }
      }
      if (group != nullptr) {
        for (const NDArray* a : arrays) {
          if (group->storages.count(storage_of(*a)) != 0) grouped = false;
        }
      }
    }
    if (!grouped) {
      singles.push_back(i);
      for (const NDArray* a : arrays) single_storages.insert(storage_of(*a));
      continue;
    }
    if (group == nullptr) {
      groups.push_back({&e.weight->engine(), e.weight->device(), e.weight->dtype(), {}, {}});
      group = &groups.back();
    }
    group->entries.push_back(i);
    for (const NDArray* a : arrays) group->storages.insert(storage_of(*a));
  }
}

// What a grouped op captures of one entry: its dense arrays, resolved when the op runs.
struct EntryRefs {
  detail::DenseRef weight, grad, first_moment, second_moment;
  std::int64_t elements = 0;
};

detail::DenseRef optional_ref(const NDArray* array) {
  return array != nullptr ? detail::dense_ref(*array) : detail::DenseRef{};
}

// Queues one op updating every entry of `group` with `kernel(kernels, stream, update_group)`.
template <class Kernel>
void push_group(const char* op, const std::vector<UpdateEntry>& entries, const EntryGroup& group,
                Kernel kernel) {
  auto refs = std::make_shared<std::vector<EntryRefs>>();
  std::vector<Var> reads, writes;
  for (std::size_t i : group.entries) {
    const UpdateEntry& e = entries[i];
    refs->push_back({detail::dense_ref(*e.weight), detail::dense_ref(*e.grad),
                     optional_ref(e.first_moment), optional_ref(e.second_moment),
                     e.weight->size()});
    reads.push_back(e.grad->var());
    writes.push_back(e.weight->var());
    if (e.first_moment != nullptr) writes.push_back(e.first_moment->var());
    if (e.second_moment != nullptr) writes.push_back(e.second_moment->var());
  }
  const DType dtype = group.dtype;
  group.engine->push(
      [refs = std::shared_ptr<const std::vector<EntryRefs>>(std::move(refs)), dtype,
       kernel](RunContext& ctx) {
        ops::UpdateGroup update{.dtype = dtype, .tensors = {}};
        update.tensors.reserve(refs->size());
        for (const EntryRefs& r : *refs) {
          update.tensors.push_back(
              {.weight = r.weight.resolve(),
               .grad = r.grad.resolve(),
               .first_moment =
                   r.first_moment.storage != nullptr ? r.first_moment.resolve() : nullptr,
               .second_moment =
                   r.second_moment.storage != nullptr ? r.second_moment.resolve() : nullptr,
               .elements = r.elements});
        }
        kernel(detail::kernels(ctx), ctx.stream(), update);
      },
      group.device, reads, writes, {.name = op});
}

// The multi_ updates' common path: check, tell the modes, plan, queue the groups (a group of one
// entry as the single-entry op), then the singles in entry order.
template <class Kernel>
void multi_update(const char* op, const std::vector<UpdateEntry>& entries,
                  const std::function<void(const UpdateEntry&)>& single, Kernel kernel) {
  check_entries(op, entries);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const UpdateEntry& e = entries[i];
    try {
      if (e.first_moment != nullptr) detail::note_in_place_write(op, *e.first_moment, e.grad);
      if (e.second_moment != nullptr) detail::note_in_place_write(op, *e.second_moment, e.grad);
      detail::note_in_place_write(op, *e.weight,
                                  e.first_moment != nullptr ? e.first_moment : e.grad);
    } catch (const Error& error) {
      throw entry_error(i, entries.size(), error);
    }
  }
  std::vector<EntryGroup> groups;
  std::vector<std::size_t> singles;
  plan_groups(entries, groups, singles);
  for (const EntryGroup& group : groups) {
    if (group.entries.size() == 1) {
      single(entries[group.entries.front()]);
    } else {
      push_group(op, entries, group, kernel);
    }
  }
  for (std::size_t i : singles) single(entries[i]);
}

void check_lengths(const char* op,
                   std::initializer_list<std::pair<const char*, std::size_t>> spans) {
  const std::size_t n = spans.begin()->second;
  for (const auto& [name, size] : spans) {
    if (size == n) continue;
    std::string sizes;
    for (const auto& [other, count] : spans) {
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(count) + " " + other;
    }
    throw Error(std::string("tandem: ") + op + ": needs one array of each kind per entry, got " +
                sizes);
  }
}

}  // namespace

void multi_sgd_update(std::span<NDArray> weights, std::span<const NDArray> grads,
                      const SgdUpdateOptions& options) {
  const char* op = "multi_sgd_update";
  check_lengths(op, {{"weights", weights.size()}, {"gradients", grads.size()}});
  std::vector<UpdateEntry> entries(weights.size());
  for (std::size_t i = 0; i < entries.size(); ++i) entries[i] = {&weights[i], &grads[i]};
  const double grad_scale = options.learning_rate * options.rescale_grad;
  const double decay = options.learning_rate * options.wd;
  multi_update(
      op, entries, [&](const UpdateEntry& e) { sgd_update(*e.weight, *e.grad, options); },
      [grad_scale, decay](const ops::Kernels& k, Stream* s, const ops::UpdateGroup& group) {
        k.sgd_update_group(s, group, grad_scale, decay, 0.0);
      });
}

void multi_sgd_mom_update(std::span<NDArray> weights, std::span<const NDArray> grads,
                          std::span<NDArray> momenta, const SgdUpdateOptions& options) {
  const char* op = "multi_sgd_mom_update";
  check_lengths(
      op, {{"weights", weights.size()}, {"gradients", grads.size()}, {"momenta", momenta.size()}});
  std::vector<UpdateEntry> entries(weights.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i] = {&weights[i], &grads[i], &momenta[i]};
  }
  const double grad_scale = options.learning_rate * options.rescale_grad;
  const double decay = options.learning_rate * options.wd;
  const double rate = options.momentum;
  multi_update(
      op, entries,
      [&](const UpdateEntry& e) { sgd_mom_update(*e.weight, *e.grad, *e.first_moment, options); },
      [grad_scale, decay, rate](const ops::Kernels& k, Stream* s, const ops::UpdateGroup& group) {
        k.sgd_update_group(s, group, grad_scale, decay, rate);
      });
}

void multi_adam_update(std::span<NDArray> weights, std::span<const NDArray> grads,
                       std::span<NDArray> means, std::span<NDArray> vars,
                       const AdamUpdateOptions& options) {
  const char* op = "multi_adam_update";
  check_lengths(op, {{"weights", weights.size()},
                     {"gradients", grads.size()},
                     {"means", means.size()},
                     {"variances", vars.size()}});
  std::vector<UpdateEntry> entries(weights.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i] = {&weights[i], &grads[i], &means[i], &vars[i]};
  }
  const ops::AdamStep step = adam_step(options);
  multi_update(
      op, entries,
      [&](const UpdateEntry& e) {
        adam_update(*e.weight, *e.grad, *e.first_moment, *e.second_moment, options);
      },
      [step](const ops::Kernels& k, Stream* s, const ops::UpdateGroup& group) {
        k.adam_update_group(s, group, step);
      });
}

}  // namespace tandem::nd
