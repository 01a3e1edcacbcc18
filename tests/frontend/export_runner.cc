// Loads an exported model and runs it, with no code of the exported network linked in: what a
// deployment does. Used by export_test.cc as a separate process.
//   export_runner GRAPH PARAMS INPUT OUTPUT [sim]
// INPUT holds one array (nd::save); OUTPUT gets the model's output the same way.
#include <tandem/tandem.h>

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: export_runner GRAPH PARAMS INPUT OUTPUT [sim]\n");
    return 2;
  }
  try {
    const tandem::Device device =
        argc == 6 && std::string(argv[5]) == "sim" ? tandem::sim(0) : tandem::cpu();
    const auto model = tandem::nn::ImportedBlock::load(argv[1], argv[2], device);
    const tandem::nd::NDArray input = tandem::nd::load_array(argv[3], device);
    tandem::nd::save(argv[4], (*model)(input));
    std::printf("ran %zu nodes\n", model->num_nodes());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "export_runner: %s\n", e.what());
    return 1;
  }
}
