// Crash-safe files (issue 27, item 4): a writer killed with SIGKILL at random points never
// leaves a file that does not load whole, temporaries of killed writers do not pile up, and
// every reader of the array format (nd::load, load_parameters, Trainer::load_states, an exported
// graph's parameters) refuses a file with any byte changed.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "crash_writer.h"
#include "frontend_test_util.h"
#include "scratch_dir.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nd/reduce.h"
#include "tandem/nn/nn.h"

extern char** environ;

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

// The files in `directory` whose name starts with `prefix`.
int count_files(const std::string& directory, const std::string& prefix) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().filename().string().starts_with(prefix)) ++count;
  }
  return count;
}

pid_t start_writer(const std::string& path, std::int64_t first) {
  std::string program = TANDEM_CRASH_WRITER;
  std::string path_arg = path;
  std::string first_arg = std::to_string(first);
  std::vector<char*> argv{program.data(), path_arg.data(), first_arg.data(), nullptr};
  pid_t child = 0;
  REQUIRE(posix_spawn(&child, program.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
  return child;
}

// The save number the file at `path` holds, after checking that it is whole: "n" and "data"
// agree (crash_writer.h).
std::int64_t check_whole(const std::string& path) {
  const nd::NamedArrays arrays = nd::load(path);
  REQUIRE(arrays.size() == 2);
  REQUIRE(arrays[0].first == "n");
  const std::int64_t n = arrays[0].second.to_vector<std::int64_t>().at(0);
  const std::vector<std::int64_t> data = arrays[1].second.to_vector<std::int64_t>();
  CHECK(static_cast<std::int64_t>(data.size()) == crash_writer_data_size(n));
  CHECK(std::count(data.begin(), data.end(), n) == static_cast<std::int64_t>(data.size()));
  return n;
}

// Every single-byte change of the file at `path` (every byte of a small file, a sample of 400
// of a large one) makes `load` throw a tandem::Error naming the file: the format's CRC-32 covers
// every byte before it, and a changed CRC no longer matches them.
template <class Load>
void check_every_changed_byte_is_refused(const std::string& path, Load&& load) {
  const std::vector<unsigned char> good = read_bytes(path);
  REQUIRE(!good.empty());
  load();  // the file as written loads
  const std::size_t stride = std::max<std::size_t>(1, good.size() / 400);
  int refused = 0;
  int tried = 0;
  for (std::size_t at = 0; at < good.size(); at += stride) {
    std::vector<unsigned char> bad = good;
    bad[at] ^= 0x5a;
    write_bytes(path, bad);
    ++tried;
    try {
      load();
      FAIL_CHECK("byte " << at << " of " << good.size() << " changed, and it still loaded");
    } catch (const Error& e) {
      ++refused;
      const std::string message = e.what();
      CHECK_MESSAGE(contains(message, std::filesystem::path(path).filename().string()), message);
    }
  }
  write_bytes(path, good);
  CHECK(refused == tried);
}

std::shared_ptr<nn::Sequential> small_net() {
  nd::random::seed(3);
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Dense(6, nn::ActivationType::relu, {.in_units = 5}))
      .add(nn::Dense(3, nn::ActivationType::none, {.in_units = 6}));
  net->initialize(nn::Xavier(), {cpu()});
  return net;
}

}  // namespace

TEST_SUITE("frontend.crash_safe_files") {
  TEST_CASE("a writer killed at random points leaves a file that loads whole, old or new") {
    ScratchDir dir;
    const std::string path = dir.file("growing.tnd");
    const std::string directory = std::filesystem::path(path).parent_path().string();
    std::mt19937 random(27);
    std::uniform_int_distribution<int> delay_us(0, 40000);
    const int kills = static_cast<int>(scaled(50, 10));
    std::int64_t last = 0;
    int cut_mid_write = 0;
    int most_temporaries = 0;
    for (int kill = 0; kill < kills; ++kill) {
      CAPTURE(kill);
      const pid_t child = start_writer(path, last + 1);
      // Wait for the first save of this writer (the file is always whole, so reading it while
      // the writer runs is safe), then let it run a random while.
      const auto start = std::chrono::steady_clock::now();
      while ((!std::filesystem::exists(path) || check_whole(path) <= last) &&
             std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
      REQUIRE(::kill(child, SIGKILL) == 0);
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      REQUIRE(std::filesystem::exists(path));
      const std::int64_t n = check_whole(path);
      CHECK(n >= last);  // never older than a save that completed before
      last = n;
      const int temporaries = count_files(directory, "growing.tnd.tmp.");
      if (temporaries > 0) ++cut_mid_write;
      most_temporaries = std::max(most_temporaries, temporaries);
      // Nothing else: the target and, at most, the killed writer's temporary.
      CHECK(count_files(directory, "") == 1 + temporaries);
    }
    MESSAGE(kills << " kills: the last save whole was number " << last << "; " << cut_mid_write
                  << " kills left a temporary (removed by the next writer)");
    // Each writer removes the temporaries of dead writers: they never pile up.
    CHECK(most_temporaries <= 1);
    CHECK(last > kills);  // the writers made progress
    // A write from this process clears what the last killed writer left.
    nd::save(path, nd::from_vector(std::vector<std::int64_t>{1}));
    CHECK(count_files(directory, "") == 1);
  }

  TEST_CASE("two writers of one path never share a temporary: the file is one of theirs") {
    ScratchDir dir;
    const std::string path = dir.file("shared.tnd");
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, w] {
        for (int i = 0; i < 30; ++i) {
          const std::int64_t n = w * 1000 + i;
          nd::NamedArrays arrays;
          arrays.emplace_back("n", nd::from_vector(std::vector<std::int64_t>{n}));
          arrays.emplace_back("data", nd::from_vector(std::vector<std::int64_t>(
                                          static_cast<std::size_t>(crash_writer_data_size(n)), n)));
          nd::save(path, arrays);
        }
      });
    }
    for (std::thread& writer : writers) writer.join();
    const std::int64_t n = check_whole(path);
    CHECK((n == 29 || n == 1029));
    CHECK(count_files(std::filesystem::path(path).parent_path().string(), "") == 1);
  }

  TEST_CASE("nd::load refuses a file with any byte changed") {
    ScratchDir dir;
    const std::string path = dir.file("a.tnd");
    nd::save(path, {{"x", nd::arange(0, 40)}, {"y", nd::full({3, 2}, 1.5)}});
    check_every_changed_byte_is_refused(path, [&] { (void)nd::load(path); });
  }

  TEST_CASE("load_parameters refuses a file with any byte changed") {
    ScratchDir dir;
    const std::string path = dir.file("net.params");
    auto net = small_net();
    net->save_parameters(path);
    auto other = small_net();
    check_every_changed_byte_is_refused(path, [&] { other->load_parameters(path, {cpu()}); });
  }

  TEST_CASE("Trainer::load_states refuses a file with any byte changed") {
    ScratchDir dir;
    const std::string path = dir.file("net.states");
    auto net = small_net();
    nn::Trainer trainer(net->collect_params(), nn::SGD(0.1, 0.9));
    const nd::NDArray x = nd::ones({4, 5});
    const nd::NDArray label = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 0});
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::mean(nd::softmax_cross_entropy((*net)(x), label));
    }
    loss.backward();
    trainer.step(4);  // momentum states exist now
    trainer.save_states(path);
    check_every_changed_byte_is_refused(path, [&] { trainer.load_states(path); });
  }

  TEST_CASE("an exported graph's parameters file with any byte changed is refused") {
    ScratchDir dir;
    auto net = small_net();
    const nn::ExportedFiles files = nn::export_block(*net, nd::ones({2, 5}), dir.file("model"));
    check_every_changed_byte_is_refused(
        files.params, [&] { (void)nn::ImportedBlock::load(files.graph, files.params); });
  }
}

}  // namespace tandem::testing
