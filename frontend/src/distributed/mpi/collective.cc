// Collective: how a collective names itself in errors.
#include "collective.h"

namespace tandem::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::mean:
      return "mean";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

}  // namespace tandem::dist

namespace tandem::dist::detail {

const char* collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::allreduce:
      return "allreduce";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::allgather:
      return "allgather";
    case CollectiveKind::barrier:
      return "barrier";
  }
  return "unknown collective";
}

std::string CollectiveHeader::describe() const {
  if (kind < 1 || kind > 4) return "an unknown collective (kind " + std::to_string(kind) + ")";
  const auto collective_kind = static_cast<CollectiveKind>(kind);
  std::string text = collective_kind_name(collective_kind);
  if (collective_kind == CollectiveKind::barrier) return text;
  if (collective_kind == CollectiveKind::allreduce)
    text += std::string("(") + reduce_op_name(static_cast<ReduceOp>(reduce_op)) + ")";
  if (collective_kind == CollectiveKind::broadcast) text += " from rank " + std::to_string(root);
  const bool known_dtype = dtype >= 0 && dtype <= 3;
  return text + " of " + std::to_string(count) + " " +
         (known_dtype ? nd::dtype_name(static_cast<nd::DType>(dtype)) : "elements");
}

std::string Collective::what() const {
  return std::string(collective_kind_name(static_cast<CollectiveKind>(header.kind))) + " #" +
         std::to_string(header.sequence) + " (" + header.describe() + ")";
}

}  // namespace tandem::dist::detail
