// Defects an outside round of tests found (issue 27's list), each pinned: values that would turn
// the weights into NaN refused by the optimizers with the value named; a parameter cast after the
// Trainer's first step named with its state; allreduce refusing arrays that share memory; the
// Xavier message giving the rank; astype's float-to-integer rule (NaN -> 0, saturation). The
// ignored label's zero gradient is in network_test.cc and tests/ops/softmax_test.cc.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "frontend_test_util.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/multi_device.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

TEST_SUITE("frontend.outside_defects") {
  TEST_CASE("optimizers refuse values that would make the weights NaN, naming the value") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(contains(error_of([&] { nn::SGD sgd(nan); }), "learning rate must be a finite number"));
    CHECK(contains(error_of([&] { nn::SGD sgd(inf); }), "got inf"));
    CHECK(contains(error_of([&] { nn::SGD sgd(-0.1); }), "got -0.1"));
    CHECK(contains(error_of([&] { nn::SGD sgd(0.1, -0.5); }), "momentum must be in [0, 1]"));
    CHECK(contains(error_of([&] { nn::SGD sgd(0.1, 0.9, nan); }), "weight decay"));
    CHECK(contains(error_of([&] { nn::Adam adam(0.001, 1.0); }), "beta1 must be in [0, 1)"));
    CHECK(contains(error_of([&] { nn::Adam adam(0.001, 0.9, 1.5); }), "beta2"));
    CHECK(contains(error_of([&] { nn::Adam adam(0.001, 0.9, 0.999, -1e-8); }),
                   "epsilon must be a finite number > 0"));
    nn::SGD sgd(0.1);
    CHECK(contains(error_of([&] { sgd.set_learning_rate(inf); }), "sgd: the learning rate"));
    CHECK(sgd.learning_rate() == 0.1);  // a refused value leaves the rate as it was
    nn::Sequential net;
    net.add(nn::Dense(2, nn::ActivationType::none, {.in_units = 3}));
    net.initialize(nn::Xavier());
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.1));
    CHECK(contains(error_of([&] { trainer.set_learning_rate(nan); }), "got nan"));
  }

  TEST_CASE("a parameter cast after the first step is named with its optimizer state") {
    nn::Sequential net;
    net.add(nn::Dense(2, nn::ActivationType::none, {.in_units = 3}));
    net.initialize(nn::Xavier());
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.1, 0.9));
    const auto step = [&](nd::DType dtype) {
      const NDArray x = nd::ones({4, 3}, dtype);
      NDArray loss;
      {
        auto recording = ag::record();
        loss = nd::sum(net(x));
      }
      loss.backward();
      trainer.step(4);
    };
    step(nd::float32);
    net.cast(nd::float64);
    const std::string message = error_of([&] { step(nd::float64); });
    CAPTURE(message);
    CHECK(contains(message, "parameter '"));
    CHECK(contains(message, "is float64"));
    CHECK(contains(message, "sgd state was made for float32"));
  }

  TEST_CASE("allreduce refuses arrays that share memory") {
    NDArray a = nd::ones({4});
    CHECK(contains(error_of([&] { nd::allreduce({a, a}); }), "share memory"));
    NDArray b = nd::ones({8});
    CHECK(contains(error_of([&] {
                     nd::allreduce({b.slice(0, 4), b.slice(2, 6)});
                   }),
                   "arrays 0 and 1"));
    CHECK(a.to_vector<double>() == std::vector<double>(4, 1.0));  // nothing was summed
    NDArray c = nd::ones({4});
    nd::allreduce({a, c});  // distinct replicas still sum
    CHECK(c.to_vector<double>() == std::vector<double>(4, 2.0));
  }

  TEST_CASE("Xavier on a 1-D parameter names the rank and the shape") {
    const std::string message = error_of([] { (void)nn::Xavier().create({5}, nd::float32); });
    CHECK(contains(message, "at least 2 dimensions, got 1 (shape 5)"));
  }

  TEST_CASE("astype from floating to integer: NaN -> 0, infinities saturate") {
    const NDArray x = nd::from_vector(std::vector<double>{std::nan(""), 1e300, -1e300, -2.7});
    const auto v = x.astype(nd::int32).to_vector<double>();
    CHECK(v == std::vector<double>{0, 2147483647, -2147483648.0, -2});
  }
}

}  // namespace tandem::testing
