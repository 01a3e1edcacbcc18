#include "hybridize_mlp.h"

#include <cblas.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "mlp_model.h"

namespace tandem::bench {

namespace {

namespace nd = tandem::nd;
namespace nn = tandem::nn;

// Seconds for `calls` forward calls, waiting once at the end (as the seed does); `keep`: each
// output copied (what keeping every result of a hybridized block costs).
double time_calls(nn::Sequential& net, const nd::NDArray& x, int calls, bool keep = false) {
  const auto start = std::chrono::steady_clock::now();
  nd::NDArray y;
  for (int i = 0; i < calls; ++i) y = keep ? net(x).copy() : net(x);
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The floor under both: the same three layers as plain C++ on one thread (OpenBLAS's sgemm, as
// tandem's cpu dot calls it, then the bias and relu loops), no engine at all.
double time_plain_loops(int calls) {
  struct Layer {
    int in, out;
    bool relu;
    std::vector<float> weight, bias, output;
  };
  std::vector<Layer> layers;
  for (const auto& [in, out, relu] :
       {std::tuple{512, 256, true}, {256, 128, true}, {128, 2, false}}) {
    layers.push_back({in, out, relu, std::vector<float>(static_cast<std::size_t>(in * out), 0.01f),
                      std::vector<float>(static_cast<std::size_t>(out), 0.1f),
                      std::vector<float>(static_cast<std::size_t>(out))});
  }
  const std::vector<float> input(512, 1.0f);
  openblas_set_num_threads(1);  // what tandem's gemm sets
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    const float* x = input.data();
    for (Layer& layer : layers) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, layer.out, layer.in, 1.0f, x,
                  layer.in, layer.weight.data(), layer.in, 0.0f, layer.output.data(), layer.out);
      for (int j = 0; j < layer.out; ++j) {
        const float v =
            layer.output[static_cast<std::size_t>(j)] + layer.bias[static_cast<std::size_t>(j)];
        layer.output[static_cast<std::size_t>(j)] = layer.relu && v < 0 ? 0.0f : v;
      }
      x = layer.output.data();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (layers.back().output[0] < 0) std::printf(" ");  // keeps the loop's results observable
  return seconds;
}

}  // namespace

void run_hybridize_mlp(bool quick, Records& records) {
  const int calls = quick ? 1000 : 5000;
  const int rounds = quick ? 5 : 9;
  nn::Sequential net = make_graph_suite_mlp();
  const nd::NDArray x = nd::random::normal({1, 512});
  const std::vector<float> eager_output = net(x).to_vector<float>();  // creates the parameters
  net.hybridize();
  if (net(x).to_vector<float>() != eager_output) {
    throw std::runtime_error("hybridize_mlp: the hybridized output differs from the eager one");
  }
  // Interleaved rounds, the best of each: the machine is shared and noisy.
  double eager = 1e30, hybridized = 1e30, kept = 1e30, plain = 1e30;
  for (int round = 0; round < rounds; ++round) {
    net.hybridize(false);
    eager = std::min(eager, time_calls(net, x, calls));
    net.hybridize();
    net(x);  // records
    hybridized = std::min(hybridized, time_calls(net, x, calls));
    kept = std::min(kept, time_calls(net, x, calls, true));
    plain = std::min(plain, time_plain_loops(calls));
  }
  std::printf(
      "hybridize_mlp: %d calls, eager %.4f s, hybridized %.4f s (%.2fx), hybridized and copied "
      "%.4f s, plain loops %.4f s\n",
      calls, eager, hybridized, eager / hybridized, kept, plain);
  for (const auto& [system, seconds] : {std::pair{"eager", eager},
                                        {"hybridized", hybridized},
                                        {"hybridized_copied", kept},
                                        {"plain_loops", plain}}) {
    records.push_back({{"workload", "hybridize_mlp"},
                       {"system", system},
                       {"seconds", seconds},
                       {"calls", calls},
                       {"model", "mlp 512-256-128-2, batch 1"},
                       {"device", "cpu(0)"}});
  }
  records.push_back(target_record("hybridize_mlp: eager / hybridized seconds", ">= 3",
                                  eager / hybridized, 3.0, false));
}

}  // namespace tandem::bench
