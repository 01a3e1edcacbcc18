// nd::sgd_update, sgd_mom_update and adam_update: one fused op each, bit for bit the unfused
// element-wise ops they replace, on every test device (cuda(0) when present), float32 and
// float64, dense and strided; one op per update (profiled on sim); the errors. Their multi_
// forms: each entry's bits those of its single update, across devices, dtypes, sizes that span
// several chunks and launch tables, strided and aliased entries; one op per device and dtype,
// launches as the plan says; nothing queued for a bad entry; the Trainer's step as grouped ops.
#include "frontend_test_util.h"
#include "tandem/nn/nn.h"
#include "tandem/profiler.h"
#include "test_devices.h"

#include <cstring>
#include <functional>
#include <map>

namespace tandem::testing {

namespace {

NDArray random_array(const Shape& shape, DType dtype, Device device, std::uint64_t seed,
                     double low = -1, double high = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(low, high);
  std::vector<double> values(static_cast<std::size_t>(shape.num_elements()));
  for (double& v : values) v = u(rng);
  return nd::from_vector(values, shape, device).astype(dtype);
}

void check_same_bits(const NDArray& fused, const NDArray& unfused, const char* what) {
  CAPTURE(what);
  CHECK(fused.to_vector<double>() == unfused.to_vector<double>());
}

// Three steps of each update, fused against the unfused ops written out here.
void check_updates(Device device, DType dtype, bool strided) {
  CAPTURE(to_string(device));
  CAPTURE(dtype_name(dtype));
  CAPTURE(strided);
  const Shape shape{37, 5};  // odd sizes: no vector width divides them
  const auto make = [&](std::uint64_t seed, double low = -1, double high = 1) {
    NDArray a = random_array(strided ? Shape{5, 37} : shape, dtype, device, seed, low, high);
    return strided ? nd::transpose(a) : a;
  };
  const NDArray grad = make(1);
  for (const double wd : {0.0, 1e-3}) {
    CAPTURE(wd);
    const nd::SgdUpdateOptions options{
        .learning_rate = 0.1, .momentum = 0.9, .wd = wd, .rescale_grad = 1.0 / 64};
    // SGD without momentum.
    NDArray w = make(2), w_ref = make(2);
    for (int step = 0; step < 3; ++step) {
      nd::sgd_update(w, grad, options);
      const double decay = 0.1 * wd;
      if (decay != 0.0) w_ref *= 1.0 - decay;
      w_ref -= grad * (0.1 / 64);
    }
    check_same_bits(w, w_ref, "sgd_update");
    // SGD with momentum.
    NDArray m = nd::zeros_like(w), m_ref = nd::zeros_like(w);
    if (strided) {
      m = make(3) * 0.0;
      m_ref = make(3) * 0.0;
    }
    w = make(2);
    w_ref = make(2);
    for (int step = 0; step < 3; ++step) {
      nd::sgd_mom_update(w, grad, m, options);
      m_ref *= 0.9;
      m_ref -= grad * (0.1 / 64);
      if (wd != 0.0) m_ref -= w_ref * (0.1 * wd);
      w_ref += m_ref;
    }
    check_same_bits(w, w_ref, "sgd_mom_update weight");
    check_same_bits(m, m_ref, "sgd_mom_update momentum");
    // Adam.
    NDArray mean = nd::zeros_like(w), var = nd::zeros_like(w);
    NDArray mean_ref = nd::zeros_like(w), var_ref = nd::zeros_like(w);
    w = make(2);
    w_ref = make(2);
    for (int step = 1; step <= 3; ++step) {
      const nd::AdamUpdateOptions adam{.learning_rate = 1e-3 * step,
                                       .beta1 = 0.9,
                                       .beta2 = 0.999,
                                       .epsilon = 1e-8,
                                       .wd = wd,
                                       .rescale_grad = 1.0 / 64};
      nd::adam_update(w, grad, mean, var, adam);
      NDArray g = grad * (1.0 / 64);
      if (wd != 0.0) g = g + w_ref * wd;
      mean_ref *= 0.9;
      mean_ref += g * (1.0 - 0.9);
      var_ref *= 0.999;
      var_ref += nd::square(g) * (1.0 - 0.999);
      w_ref -= mean_ref / (nd::sqrt(var_ref) + 1e-8) * (1e-3 * step);
    }
    check_same_bits(w, w_ref, "adam_update weight");
    check_same_bits(mean, mean_ref, "adam_update mean");
    check_same_bits(var, var_ref, "adam_update var");
  }
}

enum class Rule { sgd, sgd_mom, adam };

const char* rule_name(Rule rule) {
  return rule == Rule::sgd ? "sgd" : rule == Rule::sgd_mom ? "sgd_mom" : "adam";
}

// The arrays of a multi_ update's entries.
struct Entries {
  std::vector<NDArray> weights, grads, first, second;
};

const nd::SgdUpdateOptions kSgd{
    .learning_rate = 0.1, .momentum = 0.9, .wd = 1e-3, .rescale_grad = 1.0 / 64};
const nd::AdamUpdateOptions kAdam{.learning_rate = 1e-3, .wd = 1e-3, .rescale_grad = 1.0 / 64};

void multi_step(Rule rule, Entries& e) {
  switch (rule) {
    case Rule::sgd:
      nd::multi_sgd_update(e.weights, e.grads, kSgd);
      break;
    case Rule::sgd_mom:
      nd::multi_sgd_mom_update(e.weights, e.grads, e.first, kSgd);
      break;
    case Rule::adam:
      nd::multi_adam_update(e.weights, e.grads, e.first, e.second, kAdam);
      break;
  }
}

// The single-entry updates, one after the other: what a multi_ update must equal.
void single_steps(Rule rule, Entries& e) {
  for (std::size_t i = 0; i < e.weights.size(); ++i) {
    switch (rule) {
      case Rule::sgd:
        nd::sgd_update(e.weights[i], e.grads[i], kSgd);
        break;
      case Rule::sgd_mom:
        nd::sgd_mom_update(e.weights[i], e.grads[i], e.first[i], kSgd);
        break;
      case Rule::adam:
        nd::adam_update(e.weights[i], e.grads[i], e.first[i], e.second[i], kAdam);
        break;
    }
  }
}

// make(i, seed) builds entry i's array of the given role; the same call twice builds equal
// arrays, so the grouped and the single updates start from the same values.
Entries build(std::size_t n, const std::function<NDArray(std::size_t, std::uint64_t)>& make) {
  Entries e;
  for (std::size_t i = 0; i < n; ++i) {
    e.weights.push_back(make(i, 1));
    e.grads.push_back(make(i, 2));
    e.first.push_back(make(i, 3) * 0.01);
    e.second.push_back(nd::abs(make(i, 4)) * 0.01);
  }
  return e;
}

void check_entries_equal(const Entries& grouped, const Entries& single, Rule rule) {
  for (std::size_t i = 0; i < grouped.weights.size(); ++i) {
    CAPTURE(i);
    check_same_bits(grouped.weights[i], single.weights[i], "weight");
    if (rule != Rule::sgd) check_same_bits(grouped.first[i], single.first[i], "first moment");
    if (rule == Rule::adam) check_same_bits(grouped.second[i], single.second[i], "second moment");
  }
}

// Three grouped steps against three rounds of single updates.
void check_multi(Rule rule, std::size_t n,
                 const std::function<NDArray(std::size_t, std::uint64_t)>& make) {
  CAPTURE(rule_name(rule));
  Entries grouped = build(n, make), single = build(n, make);
  for (int step = 0; step < 3; ++step) {
    multi_step(rule, grouped);
    single_steps(rule, single);
  }
  check_entries_equal(grouped, single, rule);
}

std::map<std::string, std::uint64_t> profiled_ops(const std::function<void()>& body,
                                                  std::map<std::string, std::uint64_t>* kernels) {
  nd::waitall();
  profiler::clear();
  profiler::start();
  body();
  nd::waitall();
  profiler::stop();
  std::map<std::string, std::uint64_t> calls;
  for (const auto& s : profiler::op_stats(profiler::events())) {
    calls[s.name] += s.count;
    if (kernels != nullptr) (*kernels)[s.name] += s.kernels;
  }
  return calls;
}

}  // namespace

TEST_SUITE("frontend.optimizer_updates") {
  TEST_CASE("fused updates give the bits of the unfused ops on every device") {
    for (Device device : test_devices()) {
      for (DType dtype : {nd::float32, nd::float64}) {
        check_updates(device, dtype, false);
        check_updates(device, dtype, true);
      }
    }
  }

  TEST_CASE("an update is one op; SGD and Adam queue one per parameter") {
    if (device_count(DeviceKind::sim) == 0) return;
    const Device device = sim(0);
    NDArray w = nd::ones({64}, nd::float32, device), g = nd::ones({64}, nd::float32, device);
    NDArray m = nd::zeros({64}, nd::float32, device), v = nd::zeros({64}, nd::float32, device);
    nd::waitall();
    profiler::clear();
    profiler::start();
    nd::sgd_update(w, g, {.learning_rate = 0.1, .wd = 1e-4});
    nd::sgd_mom_update(w, g, m, {.learning_rate = 0.1, .momentum = 0.9, .wd = 1e-4});
    nd::adam_update(w, g, m, v, {.learning_rate = 1e-3, .wd = 1e-4, .rescale_grad = 0.5});
    nd::waitall();
    profiler::stop();
    std::map<std::string, std::uint64_t> calls, launches;
    std::uint64_t total = 0;
    for (const auto& s : profiler::op_stats(profiler::events())) {
      calls[s.name] += s.count;
      launches[s.name] += s.kernels;
      total += s.count;
    }
    CHECK(calls["sgd_update"] == 1);
    CHECK(calls["sgd_mom_update"] == 1);
    CHECK(calls["adam_update"] == 1);
    CHECK(launches["adam_update"] == 1);
    CHECK(total == 3);
  }

  TEST_CASE("updates name what is wrong") {
    NDArray w = nd::ones({4}), m = nd::zeros({4});
    CHECK(contains(error_of([&] { nd::sgd_update(w, nd::ones({5}), {}); }), "shape 4"));
    CHECK(
        contains(error_of([&] { nd::sgd_update(w, nd::ones({4}, nd::float64), {}); }), "float64"));
    NDArray wi = nd::ones({4}, nd::int32);
    CHECK(contains(error_of([&] { nd::sgd_update(wi, nd::ones({4}, nd::int32), {}); }), "int32"));
    if (device_count(DeviceKind::sim) > 0) {
      CHECK(contains(
          error_of([&] { nd::sgd_mom_update(w, nd::ones({4}, nd::float32, sim(0)), m, {}); }),
          "different devices"));
    }
    NDArray mean = nd::zeros({4}), var = nd::zeros({3});
    CHECK(contains(error_of([&] { nd::adam_update(w, nd::ones({4}), mean, var, {}); }),
                   "shape 4, got 3"));
  }

  TEST_CASE("grouped updates give every entry the bits of its single update, on every device") {
    // Sizes: empty, one element, odd, and 2 and 3 chunks of the plan (32768 elements each).
    const std::vector<Shape> shapes{{0}, {1}, {37, 5}, {3, 7}, {65536}, {70001}, {16}, {4, 4, 4}};
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      for (DType dtype : {nd::float32, nd::float64}) {
        CAPTURE(dtype_name(dtype));
        for (Rule rule : {Rule::sgd, Rule::sgd_mom, Rule::adam}) {
          check_multi(rule, shapes.size(), [&](std::size_t i, std::uint64_t seed) {
            return random_array(shapes[i], dtype, device, seed * 100 + i);
          });
        }
      }
    }
  }

  TEST_CASE("one call spans devices and dtypes, more tensors than one table, strided entries") {
    std::vector<Device> devices = test_devices();
    for (Rule rule : {Rule::sgd, Rule::sgd_mom, Rule::adam}) {
      // 70 entries: round-robin over the devices and both dtypes, every seventh a transposed
      // (strided) view, which gets its own update.
      check_multi(rule, 70, [&](std::size_t i, std::uint64_t seed) {
        const Device device = devices[i % devices.size()];
        const DType dtype = (i / devices.size()) % 2 == 0 ? nd::float32 : nd::float64;
        if (i % 7 == 3) {
          return nd::transpose(random_array({6, 9}, dtype, device, seed * 1000 + i));
        }
        return random_array({9 + static_cast<std::int64_t>(i)}, dtype, device, seed * 1000 + i);
      });
    }
  }

  TEST_CASE("entries that share memory update as the single updates would, in entry order") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      for (Rule rule : {Rule::sgd, Rule::sgd_mom, Rule::adam}) {
        CAPTURE(rule_name(rule));
        const auto make_entries = [&] {
          Entries e = build(5, [&](std::size_t i, std::uint64_t seed) {
            return random_array({33}, nd::float64, device, seed * 10 + i);
          });
          e.weights[2] = e.weights[0];  // one weight listed twice: updated twice, in order
          e.grads[3] = e.weights[1];    // a gradient that is another entry's weight
          e.grads[4] = e.grads[1];      // two entries reading one gradient
          return e;
        };
        Entries grouped = make_entries(), single = make_entries();
        multi_step(rule, grouped);
        single_steps(rule, single);
        check_entries_equal(grouped, single, rule);
      }
    }
  }

  TEST_CASE("random grouped updates on the threaded engine match single updates on the naive") {
    // Each program: entries whose arrays are views of a few shared base arrays per device and
    // dtype (rows [0,3), [3,6), [2,5) -- two overlapping --, or every other row: strided), so
    // weights listed twice, gradients that are other entries' weights or momenta, and entries
    // overlapping within themselves all occur. The grouped call on the threaded engine must
    // leave every base array with the bits of the single updates, entry by entry, on the naive.
    auto threaded = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
    struct Spec {
      int place, base, view;  // place: device x dtype; view: which rows
    };
    struct EntrySpec {
      Spec arrays[4];
    };
    const int programs = static_cast<int>(scaled(60, 10));
    for (int seed = 1; seed <= programs; ++seed) {
      CAPTURE(seed);
      std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
      const Rule rule = static_cast<Rule>(seed % 3);
      const int places = static_cast<int>(devices.size()) * 2;
      std::vector<EntrySpec> specs(std::uniform_int_distribution<std::size_t>(1, 9)(rng));
      for (EntrySpec& e : specs) {
        const int place = std::uniform_int_distribution<int>(0, places - 1)(rng);
        for (Spec& a : e.arrays) {
          a = {place, std::uniform_int_distribution<int>(0, 2)(rng),
               std::uniform_int_distribution<int>(0, 4)(rng)};
        }
      }
      const auto run = [&](Engine& engine, bool grouped) {
        nd::EngineScope scope(engine);
        std::vector<NDArray> bases;  // [place * 3 + base]
        for (int place = 0; place < places; ++place) {
          for (int base = 0; base < 3; ++base) {
            const DType dtype = place % 2 == 0 ? nd::float32 : nd::float64;
            NDArray b = random_array({6, 8}, dtype, devices[static_cast<std::size_t>(place / 2)],
                                     static_cast<std::uint64_t>(seed * 100 + place * 3 + base));
            if (base == 2) b = nd::abs(b);  // a base for variances (Adam takes their root)
            bases.push_back(b);
          }
        }
        const auto view = [&](const Spec& a) {
          const NDArray& b = bases[static_cast<std::size_t>(a.place * 3 + a.base)];
          switch (a.view) {
            case 0:
              return b.slice(0, 3);
            case 1:
              return b.slice(3, 6);
            case 2:
              return b.slice(2, 5);
            case 3:
              return b.slice(0, 6, 2);
            default:
              return b.slice(1, 6, 2);
          }
        };
        Entries e;
        for (const EntrySpec& spec : specs) {
          e.weights.push_back(view(spec.arrays[0]));
          e.grads.push_back(view(spec.arrays[1]));
          e.first.push_back(view(spec.arrays[2]));
          // Adam's variance from the non-negative base, so that no root is NaN.
          e.second.push_back(view({spec.arrays[3].place, 2, spec.arrays[3].view}));
        }
        for (int step = 0; step < 2; ++step) {
          if (grouped) {
            multi_step(rule, e);
          } else {
            single_steps(rule, e);
          }
        }
        std::vector<std::vector<double>> values;
        for (const NDArray& b : bases) values.push_back(b.to_vector<double>());
        return values;
      };
      // Bit for bit, NaN included (Adam's root of a variance that another entry's update made
      // negative): the same NaN in both runs counts as equal.
      const auto grouped = run(*threaded, true), single = run(*naive, false);
      REQUIRE(grouped.size() == single.size());
      for (std::size_t b = 0; b < grouped.size(); ++b) {
        CAPTURE(b);
        CHECK(std::memcmp(grouped[b].data(), single[b].data(),
                          grouped[b].size() * sizeof(double)) == 0);
      }
    }
  }

  TEST_CASE("a grouped update is one op per device and dtype, launching what the plan says") {
    if (device_count(DeviceKind::sim) == 0) return;
    const auto make = [](std::size_t n, std::int64_t size, Device device, DType dtype) {
      Entries e;
      for (std::size_t i = 0; i < n; ++i) {
        e.weights.push_back(nd::ones({size}, dtype, device));
        e.grads.push_back(nd::ones({size}, dtype, device));
        e.first.push_back(nd::zeros({size}, dtype, device));
        e.second.push_back(nd::zeros({size}, dtype, device));
      }
      return e;
    };
    std::map<std::string, std::uint64_t> kernels;
    // 10 parameters: one op, one launch. 40: one op, two launches (32 tensors a table).
    Entries ten = make(10, 100, sim(0), nd::float32), forty = make(40, 100, sim(0), nd::float32);
    auto calls = profiled_ops([&] { multi_step(Rule::sgd_mom, ten); }, &kernels);
    CHECK(calls["multi_sgd_mom_update"] == 1);
    CHECK(kernels["multi_sgd_mom_update"] == 1);
    CHECK(calls.size() == 1);
    kernels.clear();
    calls = profiled_ops([&] { multi_step(Rule::adam, forty); }, &kernels);
    CHECK(calls["multi_adam_update"] == 1);
    CHECK(kernels["multi_adam_update"] == 2);
    CHECK(calls.size() == 1);
    // Two devices and two dtypes: four ops. A group of one is the single-entry op.
    Entries mixed = make(3, 10, sim(0), nd::float32);
    for (Entries more : {make(3, 10, sim(0), nd::float64), make(3, 10, cpu(), nd::float32),
                         make(1, 10, cpu(), nd::float64)}) {
      for (std::size_t i = 0; i < more.weights.size(); ++i) {
        mixed.weights.push_back(more.weights[i]);
        mixed.grads.push_back(more.grads[i]);
        mixed.first.push_back(more.first[i]);
        mixed.second.push_back(more.second[i]);
      }
    }
    calls = profiled_ops([&] { multi_step(Rule::sgd, mixed); }, nullptr);
    CHECK(calls["multi_sgd_update"] == 3);
    CHECK(calls["sgd_update"] == 1);
    CHECK(calls.size() == 2);
  }

  TEST_CASE("grouped updates name the bad entry and queue nothing") {
    Entries e = build(4, [](std::size_t i, std::uint64_t seed) {
      return nd::full({3}, static_cast<double>(seed * 10 + i));
    });
    const std::vector<double> before = e.weights[0].to_vector<double>();
    // A length mismatch names the counts.
    std::vector<NDArray> three_grads(e.grads.begin(), e.grads.begin() + 3);
    CHECK(contains(error_of([&] { nd::multi_sgd_update(e.weights, three_grads, kSgd); }),
                   "4 weights, 3 gradients"));
    // Entry 2's momentum has another shape: an UpdateEntryError for entry 2, nothing updated.
    e.first[2] = nd::zeros({4});
    try {
      nd::multi_sgd_mom_update(e.weights, e.grads, e.first, kSgd);
      FAIL("no error");
    } catch (const nd::UpdateEntryError& error) {
      CHECK(error.entry() == 2);
      CHECK(contains(error.what(), "multi_sgd_mom_update"));
      CHECK(contains(error.what(), "shape 3, got 4"));
      CHECK(contains(error.what(), "entry 2 of 4"));
    }
    CHECK(e.weights[0].to_vector<double>() == before);
    e.first[2] = nd::zeros({3});
    // An integer weight, and (with sim) arrays of one entry on two devices.
    e.weights[1] = nd::ones({3}, nd::int32);
    e.grads[1] = nd::ones({3}, nd::int32);
    CHECK(contains(error_of([&] { nd::multi_sgd_update(e.weights, e.grads, kSgd); }), "int32"));
    CHECK(e.weights[0].to_vector<double>() == before);
    e.weights[1] = nd::ones({3});
    e.grads[1] = nd::ones({3});
    if (device_count(DeviceKind::sim) > 0) {
      e.second[3] = nd::zeros({3}, nd::float32, sim(0));
      CHECK(contains(
          error_of([&] { nd::multi_adam_update(e.weights, e.grads, e.first, e.second, kAdam); }),
          "different devices"));
      CHECK(e.weights[0].to_vector<double>() == before);
    }
    // No entries: nothing to do.
    std::vector<NDArray> none;
    nd::multi_sgd_update(none, none, kSgd);
  }

  TEST_CASE("a Trainer step queues one grouped update per device, the bits of one per parameter") {
    if (device_count(DeviceKind::sim) < 2) return;
    const std::vector<Device> devices{sim(0), sim(1)};
    const auto train = [&](bool grouped, std::map<std::string, std::uint64_t>* calls) {
      nd::random::seed(11);
      nn::Sequential net;
      net.add(std::make_shared<nn::Dense>(16, nn::ActivationType::relu));
      net.add(std::make_shared<nn::Dense>(4));
      net.initialize(nn::Xavier(), devices);
      // The reference: an optimizer that updates one parameter at a time (Optimizer's
      // update_all, the default).
      struct OneByOne : nn::SGD {
        using nn::SGD::SGD;
        void update_all(long t, std::span<const nn::ParameterUpdate> updates) const override {
          nn::Optimizer::update_all(t, updates);
        }
      };
      nn::Trainer trainer = grouped ? nn::Trainer(net.collect_params(), nn::SGD(0.1, 0.9, 1e-4))
                                    : nn::Trainer(net.collect_params(), OneByOne(0.1, 0.9, 1e-4));
      const NDArray x = nd::random::uniform({8, 5}, cpu());
      for (int step = 0; step < 3; ++step) {
        std::vector<NDArray> losses;
        {
          auto recording = autograd::record();
          for (std::size_t d = 0; d < devices.size(); ++d) {
            losses.push_back(nd::sum(net(x.copyto(devices[d]))));
          }
        }
        autograd::backward(losses);
        if (step == 2 && calls != nullptr) {
          *calls = profiled_ops([&] { trainer.step(16); }, nullptr);
        } else {
          trainer.step(16);
        }
      }
      std::vector<double> values;
      for (const auto& [name, parameter] : net.collect_params()) {
        for (const NDArray& copy : parameter->list_data()) {
          const std::vector<double> v = copy.to_vector<double>();
          values.insert(values.end(), v.begin(), v.end());
        }
      }
      return values;
    };
    std::map<std::string, std::uint64_t> calls;
    const std::vector<double> grouped = train(true, &calls);
    CHECK(train(false, nullptr) == grouped);
    CHECK(calls["multi_sgd_mom_update"] == 2);  // one per device, 4 parameters each
    CHECK(calls.count("sgd_mom_update") == 0);
  }

  TEST_CASE("a Trainer names the parameter whose update failed") {
    struct FailsOnBias : nn::SGD {
      using nn::SGD::SGD;
      void update(long t, NDArray& weight, const NDArray& grad,
                  std::vector<NDArray>& state) const override {
        if (weight.ndim() == 1) throw Error("tandem: test: no update for a bias");
        nn::SGD::update(t, weight, grad, state);
      }
      void update_all(long t, std::span<const nn::ParameterUpdate> updates) const override {
        nn::Optimizer::update_all(t, updates);
      }
    };
    nn::Dense dense(3);
    dense.initialize(nn::Ones());
    nn::Trainer trainer(dense.collect_params(), FailsOnBias(0.1));
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::sum(dense(nd::ones({2, 4})));
    }
    loss.backward();
    const std::string message = error_of([&] { trainer.step(2); });
    CHECK(contains(message, "no update for a bias"));
    CHECK(contains(message, "updating parameter '"));
    CHECK(contains(message, "bias"));
    CHECK(contains(message, "with sgd"));
  }
}

}  // namespace tandem::testing
