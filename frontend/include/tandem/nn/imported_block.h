// ImportedBlock: a block read from the files nn::export_block wrote (tandem/nn/export.h), run
// without the C++ code of the block that was exported (Gluon's SymbolBlock.imports).
//
//   auto model = nn::ImportedBlock::load("digits-graph.json", "digits-params.tnd", sim(0));
//   nd::NDArray logits = (*model)(batch);    // batch on sim(0)
//
// forward(x) runs the graph's nodes in order, each through the front-end function the exported
// forward called, so its outputs equal the original block's bit for bit (same device kind and
// dtype). x must have the example's dtype and shape, except that axis 0 (the batch) may differ:
// the shapes are inferred again by running the ops, and a reshape that kept axis 0 (flatten,
// Dense) keeps the new batch size; a node that cannot take it (a constant of the example's
// batch size) throws that op's error.
//
// It is a Block: collect_params() has the loaded parameters under their exported names (with
// their grad_req; a dotted name "0.weight" lives in a child block "0" that only holds
// parameters), so it can be fine-tuned (autograd, Trainer), saved with save_parameters,
// hybridized, or registered as another block's child.
//
// load() checks everything before it returns and throws tandem::Error naming the file and what
// is wrong: a file that is missing or not JSON, another format or version, a node whose op this
// build lacks ("op 'x' (node 7) is not known to this build"), a malformed node, a parameter or
// constant that the params file lacks, has in excess, or has with another shape or dtype (both
// named). forward throws tandem::Error for an input of another dtype or shape, and for a node
// attribute of the wrong type (named with its node: attributes are read when the node runs).
#pragma once

#include <memory>
#include <string>

#include "tandem/device.h"
#include "tandem/nd/ndarray.h"
#include "tandem/nn/block.h"

namespace tandem::nn {

class ImportedBlock : public Block {
 public:
  // The graph and parameters on `device`.
  static std::shared_ptr<ImportedBlock> load(const std::string& graph_path,
                                             const std::string& params_path, Device device = cpu());
  ~ImportedBlock() override;
  ImportedBlock(ImportedBlock&&) noexcept;
  ImportedBlock& operator=(ImportedBlock&&) noexcept;

  nd::NDArray forward(const nd::NDArray& x) override;

  // The example's shape and dtype at export (axis 0 may vary).
  const nd::Shape& input_shape() const;
  nd::DType input_dtype() const;
  std::size_t num_nodes() const;

 private:
  struct Program;
  explicit ImportedBlock(std::unique_ptr<Program> program);
  // Registers the parameter `full_name` ("a.b.weight": in child blocks "a", then "b").
  std::shared_ptr<Parameter> add_parameter(const std::string& full_name, nd::Shape shape,
                                           ParameterOptions options);
  std::unique_ptr<Program> program_;
};

}  // namespace tandem::nn
