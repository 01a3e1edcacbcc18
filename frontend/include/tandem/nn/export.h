// Export: save a block's forward as a graph of ops plus its parameters, to run it later without
// the block's C++ code (nn::ImportedBlock, tandem/nn/imported_block.h; Gluon's export).
//
//   nn::Sequential net = ...;                         // trained
//   auto files = nn::export_block(net, example_batch, "digits");
//   // files.graph == "digits-graph.json", files.params == "digits-params.tnd"
//   ...                                               // another process, without net's code:
//   auto model = nn::ImportedBlock::load("digits-graph.json", "digits-params.tnd");
//   nd::NDArray logits = (*model)(batch);             // the same values as net(batch)
//
// export_block runs block(example_input) once in predict mode (autograd::predict_mode, not
// recording; BatchNorm uses its running statistics, Dropout is the identity) while every op it
// calls reports itself to a trace, and writes:
// - <prefix>-graph.json: the ops in the order they ran, each with its attributes (scalars,
//   axes, shapes, strides, paddings, dtypes), its inputs and its output's shape and dtype; the
//   example's shape and dtype; the parameters by their collect_params() names. The format is in
//   docs/file-format.md. The graph names no device: load it on any.
// - <prefix>-params.tnd (nd::save): every parameter, and the constants: arrays the forward read
//   that are neither its input nor a parameter (a tensor the block holds, nd::ones(...) made in
//   forward), under the reserved names "__constant.0", ... Constants keep their exported shape.
//
// Parameters whose shape is still deferred get it from one ordinary forward on the example
// first. A hybridized block (and its children) runs its forward eagerly while exporting.
// Throws tandem::Error naming the op when the forward calls one a graph cannot hold: a random
// draw, an in-place write (+=, assign, copyto into an array), an op of your own recorded with
// autograd::record_op; and for a null example, a parameter that is not initialized, a name
// starting with "__constant.", or a file that cannot be written. Hybridized blocks and
// functions (nd::hybridize) called inside forward run eagerly while the trace is on, so their
// ops are traced, not their replays.
#pragma once

#include <string>

#include "tandem/nd/ndarray.h"
#include "tandem/nn/block.h"

namespace tandem::nn {

struct ExportedFiles {
  std::string graph;   // <prefix>-graph.json
  std::string params;  // <prefix>-params.tnd
};

// See the top of the file. A sync point (the parameters and constants are read back to save).
ExportedFiles export_block(Block& block, const nd::NDArray& example_input,
                           const std::string& path_prefix);

}  // namespace tandem::nn
