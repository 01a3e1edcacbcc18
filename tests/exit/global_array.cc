// A program whose arrays live at namespace scope: they are created before main, used in main,
// and their last handles are dropped by static destructors after main returns. The process
// must exit 0 with every op finished. Run by exit_tests (exit_test.cc).
#include <tandem/nd/creation.h>
#include <tandem/nd/elementwise.h>
#include <tandem/nd/ndarray.h>

#include <cstdio>

namespace nd = tandem::nd;

namespace {

// Constructed before the arrays below, so destroyed after them: it uses the front end once
// every other namespace-scope array is gone.
struct ExitTimeArrays {
  ~ExitTimeArrays() {
    nd::NDArray x = nd::full({3}, 5.0) * 2;
    nd::NDArray y = nd::full({3}, 1.0, tandem::sim(0)) + 6;
    std::printf("exit-time arrays %g %g\n", static_cast<double>(x.to_vector<float>()[2]),
                static_cast<double>(y.to_vector<float>()[0]));
  }
} exit_time_arrays;

// Small (inline storage), large (freed by an early, urgent op) and accelerator storage.
nd::NDArray bias = nd::zeros({4});
nd::NDArray big = nd::full({1 << 16}, 2.0);
nd::NDArray on_sim = nd::ones({8}, nd::float32, tandem::sim(0));

}  // namespace

int main() {
  bias = bias + 1;
  big = big * 3;
  on_sim = on_sim + 2;
  float total = 0;
  for (float x : bias.to_vector<float>()) total += x;
  std::printf("bias total %g\n", static_cast<double>(total));
  // Queued, not waited for: these finish after main returns, before the process exits.
  bias = bias + big.slice(0, 4);
  on_sim = on_sim * on_sim;
  std::printf("main returns\n");
  return 0;
}
