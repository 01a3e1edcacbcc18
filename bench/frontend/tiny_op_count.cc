// `y = x + 1` on a 1x2 float32 array, N times (the first argument), then waitall: the tiny
// front-end op whose instructions bench/front_end_op_cost.sh counts under callgrind (checks,
// allocation, push, the autograd/trace/capture checks, the release of the previous y). With
// `where` as the second argument, `y = nd::where(x, x, x)` instead: an op with a record, which
// runs through detail::invoke (bench/front_end_op_cost.sh counts both).
#include <tandem/tandem.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  namespace nd = tandem::nd;
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const nd::NDArray x = nd::ones({1, 2});
  nd::NDArray y;
  if (argc > 2 && std::strcmp(argv[2], "where") == 0) {
    for (int i = 0; i < n; ++i) y = nd::where(x, x, x);
  } else {
    for (int i = 0; i < n; ++i) y = x + 1;
  }
  nd::waitall();
  return y.shape().num_elements() == 2 ? 0 : 1;
}
