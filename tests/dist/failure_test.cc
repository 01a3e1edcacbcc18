// Failures across processes, one per run (each breaks its process group):
//   failure_test mismatch   ranks queue allreduces of different sizes: every rank gets a
//                           tandem::Error naming the mismatch, and later collectives fail at once
//   failure_test kinds      rank 0 queues an allreduce where the others queue a broadcast of the
//                           same array (their data collectives start before the check, which
//                           must still fail them on every rank, naming both)
//   failure_test stall      the last rank never queues the collective (it threw and went on):
//                           the others get a tandem::Error naming it within the timeout
//   failure_test death      the last rank exits after a first collective (run with
//                           --mca orte_abort_on_non_zero_status 0 so that mpirun lets the
//                           others report it): the others get a tandem::Error naming it
// Each rank prints "rank R: MODE ok" or "rank R: MODE FAILED: why" and exits 0 or 1.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "tandem/dist/process_group.h"
#include "tandem/engine.h"
#include "tandem/nd/creation.h"

namespace nd = tandem::nd;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(2000);

// Runs `queue` and reads `result` back; returns the error message ("" when none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const tandem::Error& error) {
    return error.what();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string mismatch(tandem::dist::ProcessGroup& group) {
  nd::NDArray a = nd::ones({group.rank() == 0 ? 10 : 12});
  group.allreduce(a);
  const std::string error = error_of([&] { (void)a.to_vector<float>(); });
  if (!contains(error, "collective mismatch at allreduce #0")) return "got '" + error + "'";
  if (!contains(error, "12 float32") || !contains(error, "10 float32"))
    return "the message does not name both sizes: " + error;
  // Broken: the next collective fails at once with the same error, instead of hanging.
  nd::NDArray b = nd::ones({3});
  group.allreduce(b);
  const std::string next = error_of([&] { (void)b.to_vector<float>(); });
  if (!contains(next, "collective mismatch")) return "the next collective gave '" + next + "'";
  return {};
}

std::string kinds(tandem::dist::ProcessGroup& group) {
  nd::NDArray a = nd::ones({64});
  if (group.rank() == 0) {
    group.allreduce(a);
  } else {
    group.broadcast(a, 0);
  }
  const std::string error = error_of([&] { (void)a.to_vector<float>(); });
  if (!contains(error, "collective mismatch at")) return "got '" + error + "'";
  if (!contains(error, "allreduce(sum) of 64 float32") ||
      !contains(error, "broadcast from rank 0 of 64 float32"))
    return "the message does not name both collectives: " + error;
  nd::NDArray b = nd::ones({3});
  group.allreduce(b);
  const std::string next = error_of([&] { (void)b.to_vector<float>(); });
  if (!contains(next, "collective mismatch")) return "the next collective gave '" + next + "'";
  return {};
}

std::string stall_or_death(tandem::dist::ProcessGroup& group, bool death) {
  const int last = group.size() - 1;
  nd::NDArray a = nd::ones({100});
  group.allreduce(a);
  if (a.to_vector<float>()[0] != static_cast<float>(group.size())) return "the first sum is wrong";
  if (group.rank() == last) {
    if (death) std::_Exit(3);
    // "Throws": stops queuing collectives, and outlives the others' timeout.
    std::this_thread::sleep_for(2 * kTimeout);
    return {};
  }
  nd::NDArray b = nd::ones({100});
  const auto start = Clock::now();
  group.allreduce(b);
  const std::string error = error_of([&] { (void)b.to_vector<float>(); });
  const auto waited = Clock::now() - start;
  if (!contains(error, "rank(s) " + std::to_string(last) + " did not reach allreduce #1"))
    return "got '" + error + "'";
  if (waited > kTimeout + std::chrono::seconds(3))
    return "the error came after " +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
           " ms";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "mismatch" && mode != "kinds" && mode != "stall" && mode != "death") {
    std::cerr << "usage: failure_test mismatch|kinds|stall|death\n";
    return 2;
  }
  tandem::dist::ProcessGroupOptions options;
  options.timeout = kTimeout;
  tandem::dist::ProcessGroup group(options);
  std::string failure;
  try {
    if (mode == "mismatch") {
      failure = mismatch(group);
    } else if (mode == "kinds") {
      failure = kinds(group);
    } else {
      failure = stall_or_death(group, mode == "death");
    }
    try {
      tandem::wait_all();
    } catch (const tandem::Error&) {
      // the errors checked above
    }
  } catch (const std::exception& error) {
    failure = std::string("unexpected exception: ") + error.what();
  }
  std::cout << "rank " << group.rank() << ": " << mode
            << (failure.empty() ? " ok" : " FAILED: " + failure) << std::endl;
  return failure.empty() ? 0 : 1;
}
