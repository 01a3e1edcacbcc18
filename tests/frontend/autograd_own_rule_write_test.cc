// Direct writes of own-rule ops' gradients: conv2d (weight and bias), batch_norm (gamma and
// beta) and a broadcast add (a bias added to a batch) form a parameter's gradient in the leaf's
// gradient buffer itself when backward offers it (overwritten for GradReq::write, added into by
// the same op for GradReq::add), as dot does. The bits must be those of the ordinary path,
// which autograd::grad still takes (it writes no buffer): the gradient returned, or the old
// buffer plus it. Backward then queues no more ops than grad() (before: one assign or add per
// parameter), and a parameter read twice still gets the sum of its gradients.
#include <vector>

#include "frontend_test_util.h"
#include "tandem/profiler.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

std::vector<double> values(const NDArray& x) {
  return x.to_vector<double>();
}

// The ops `queue` pushes that compute (the frees of arrays whose handles drop are left out:
// which temporaries die inside the call differs between grad() and backward()).
template <class Fn>
std::size_t computing_ops(Fn queue) {
  profiler::clear();
  profiler::start();
  queue();
  nd::waitall();
  profiler::stop();
  std::size_t count = 0;
  for (const profiler::OpEvent& event : profiler::events()) count += event.name != "delete_var";
  return count;
}

constexpr std::int64_t kBatch = 3, kChannels = 4, kSide = 5;

// The parameters of the small network below, attached with `request`, their gradient buffers
// holding `before` values (seeded draws) so that an add is visible.
struct Parameters {
  NDArray weight, bias, gamma, beta, dense_bias;
  NDArray running_mean, running_var;

  std::vector<NDArray> attached() const { return {weight, bias, gamma, beta, dense_bias}; }
};

Parameters parameters(Device device, ag::GradReq request) {
  nd::random::seed(7);
  Parameters p{nd::random::normal({kChannels, kChannels, 3, 3}, device),
               nd::random::normal({kChannels}, device),
               nd::random::uniform(0.5, 1.5, {kChannels}, device),
               nd::random::normal({kChannels}, device),
               nd::random::normal({kChannels * kSide * kSide}, device),
               nd::zeros({kChannels}, device),
               nd::ones({kChannels}, device)};
  for (NDArray* parameter : {&p.weight, &p.bias, &p.gamma, &p.beta, &p.dense_bias}) {
    parameter->attach_grad(request);
    parameter->grad().assign(nd::random::normal(parameter->shape(), device));
  }
  return p;
}

// conv2d (+ bias) -> batch_norm -> flatten + a bias over the batch -> a weighted sum. With
// `twice`, a second conv2d with the same weight and bias follows the first (each is then read
// by two ops, and gets the sum of two gradients).
NDArray loss_of(const Parameters& p, const NDArray& x, const NDArray& c, bool twice) {
  NDArray y = nd::conv2d(x, p.weight, p.bias, {.padding = nd::Size2d{1}});
  if (twice) y = nd::conv2d(nd::relu(y), p.weight, p.bias, {.padding = nd::Size2d{1}});
  y = nd::batch_norm(y, p.gamma, p.beta, p.running_mean, p.running_var);
  return nd::sum((y.reshape({kBatch, kChannels * kSide * kSide}) + p.dense_bias) * c);
}

}  // namespace

TEST_SUITE("frontend.autograd_own_rule_write") {
  TEST_CASE("own-rule ops write parameters' gradients into their buffers, bit for bit") {
    for (const Device device : {cpu(), sim(0)}) {
      if (device.kind == DeviceKind::sim && device_count(DeviceKind::sim) == 0) continue;
      for (const bool twice : {false, true}) {
        for (const ag::GradReq request : {ag::GradReq::write, ag::GradReq::add}) {
          CAPTURE(to_string(device));
          CAPTURE(twice);
          CAPTURE(static_cast<int>(request));
          const Parameters p = parameters(device, request);
          const NDArray x = nd::random::normal({kBatch, kChannels, kSide, kSide}, device);
          const NDArray c = nd::random::normal({kBatch, kChannels * kSide * kSide}, device);
          std::vector<NDArray> before;
          for (const NDArray& parameter : p.attached()) before.push_back(parameter.grad().copy());
          NDArray loss;
          {
            auto recording = ag::record();
            loss = loss_of(p, x, c, twice);
          }
          // The ordinary path: grad() forms every gradient in a fresh array.
          std::vector<NDArray> returned;
          const std::size_t grad_ops =
              computing_ops([&] { returned = ag::grad({loss}, p.attached(), {}, true); });
          const std::size_t backward_ops = computing_ops([&] { loss.backward(); });
          // Read once, every parameter's gradient is written by the op that forms it; read
          // twice, the conv2d's weight and bias are summed first and delivered (two more ops).
          CHECK(backward_ops == grad_ops + (twice ? 2 : 0));
          for (std::size_t i = 0; i < returned.size(); ++i) {
            CAPTURE(i);
            const NDArray expected =
                request == ag::GradReq::add ? before[i] + returned[i] : returned[i];
            CHECK(values(p.attached()[i].grad()) == values(expected));
          }
        }
      }
    }
  }
}

}  // namespace tandem::testing
