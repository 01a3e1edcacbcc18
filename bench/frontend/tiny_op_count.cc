// `y = x + 1` on a 1x2 float32 array, N times (the first argument), then waitall: the tiny
// front-end op whose instructions bench/front_end_op_cost.sh counts under callgrind (checks,
// allocation, push, the autograd/trace/capture checks, the release of the previous y).
#include <tandem/tandem.h>

#include <cstdlib>

int main(int argc, char** argv) {
  namespace nd = tandem::nd;
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const nd::NDArray x = nd::ones({1, 2});
  nd::NDArray y;
  for (int i = 0; i < n; ++i) y = x + 1;
  nd::waitall();
  return y.shape().num_elements() == 2 ? 0 : 1;
}
