#include "distributed/collective_ops.h"

#include <algorithm>
#include <utility>

#include "core/access.h"
#include "core/backend.h"
#include "core/kernels.h"
#include "core/lazy_view.h"
#include "core/transfer.h"

namespace tandem::nd::detail {

namespace {

void add_once(std::vector<Var>& vars, Var var) {
  if (std::find(vars.begin(), vars.end(), var) == vars.end()) vars.push_back(var);
}

}  // namespace

void require_device(Device device, const char* op) {
  require_backend(device, op);
}

void require_copy_path(const char* op, Device from, Device to) {
  check_transfer(op, from, to);
}

NDArray copy_to_device_as(const NDArray& source, Device device, const char* op) {
  return copy_to_device_named(source, device, op);
}

NDArray send_to_device_as(const NDArray& source, Device device, const char* op) {
  return copy_to_device_sent(source, device, op);
}

NDArray allocate_on(Engine& engine, const Shape& shape, DType dtype, Device device,
                    const char* op) {
  return allocate_array(engine, shape, dtype, device, op);
}

void push_copies(const std::vector<NDArray>& sources, const std::vector<NDArray>& destinations,
                 Device device, const char* name) {
  std::vector<std::pair<LazyView, LazyView>> copies;
  std::vector<Var> reads;
  std::vector<Var> writes;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    copies.emplace_back(lazy_view(sources[i]), lazy_view(destinations.at(i)));
    add_once(reads, sources[i].var());  // the slabs of one flat array share its var
    add_once(writes, destinations[i].var());
  }
  sources.front().engine().push(
      [copies = std::move(copies)](RunContext& ctx) {
        const ops::Kernels& table = kernels(ctx);
        for (const auto& [from, to] : copies)
          table.copy(ctx.stream(), from.resolve(), to.resolve());
      },
      device, reads, writes, {.name = name});
}

void push_sum_in_device_order(const std::vector<std::vector<NDArray>>& addends, std::size_t here,
                              const NDArray& after, Device device, const char* name) {
  const std::size_t count = addends.size();
  const std::vector<NDArray>& own = addends.at(here);
  // Per member: its own addend and, per device, that device's addend (parts[here] is unused).
  struct Member {
    DenseRef own;
    std::vector<DenseRef> parts;
    std::int64_t elements = 0;
  };
  std::vector<Member> members;
  for (std::size_t m = 0; m < own.size(); ++m) {
    Member member{dense_ref(own[m]), {}, own[m].size()};
    for (std::size_t d = 0; d < count; ++d) {
      member.parts.push_back(d == here ? member.own : dense_ref(addends[d].at(m)));
    }
    members.push_back(std::move(member));
  }
  std::vector<Var> writes;
  for (const NDArray& array : own) add_once(writes, array.var());
  if (here >= 2) {
    for (const NDArray& array : addends[0]) add_once(writes, array.var());
  }
  std::vector<Var> reads;
  const auto read = [&](Var var) {
    if (std::find(writes.begin(), writes.end(), var) == writes.end() &&
        std::find(reads.begin(), reads.end(), var) == reads.end()) {
      reads.push_back(var);
    }
  };
  for (std::size_t d = (here >= 2 ? 1 : 0); d < count; ++d) {
    if (d == here) continue;
    for (const NDArray& array : addends[d]) read(array.var());
  }
  if (after.defined()) read(after.var());
  const ops::DType dtype = own.front().dtype();
  own.front().engine().push(
      [members = std::move(members), here, count, dtype](RunContext& ctx) {
        const ops::Kernels& table = kernels(ctx);
        const auto add = [&](const DenseRef& a, const DenseRef& b, const DenseRef& out,
                             std::int64_t n) {
          table.binary_dense(ctx.stream(), ops::BinaryOp::add, dtype, a.resolve(), b.resolve(),
                             out.resolve(), n);
        };
        for (const Member& member : members) {
          const std::int64_t n = member.elements;
          for (std::size_t d = 1; d < here; ++d) {
            add(member.parts[0], member.parts[d], member.parts[0], n);
          }
          if (here > 0) add(member.own, member.parts[0], member.own, n);
          for (std::size_t d = here + 1; d < count; ++d)
            add(member.own, member.parts[d], member.own, n);
        }
      },
      device, reads, writes, {.name = name});
}

}  // namespace tandem::nd::detail
