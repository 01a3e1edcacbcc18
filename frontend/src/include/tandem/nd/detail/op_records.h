// Every op's record (frontend/src/core/op_definition.h), for the tests that follow the records
// (tests/frontend/op_records_test.cc). Not installed: a test target that includes it adds
// frontend/src and frontend/src/include to its include path.
#pragma once

#include <vector>

#include "core/op_definition.h"

namespace tandem::nd::detail {

// The element-wise rows' records, the views' and copies', and every op file's, in the order
// the graph import reads them (graph/graph_ops.cc).
std::vector<const OpDefinition*> all_op_definitions();

}  // namespace tandem::nd::detail
