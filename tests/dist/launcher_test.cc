// Started by tandem-run (tests/dist/CMakeLists.txt): launcher_test EXPECTED_SIZE EXPECTED_WORKERS
//   checks that the group has EXPECTED_SIZE ranks, all on this machine (local_rank == rank), and
//   that tandem-run gave each rank TANDEM_CPU_WORKERS=EXPECTED_WORKERS.
// Started alone with WORLD_SIZE set (as a torchrun-style launcher would): launcher_test torchrun
//   checks that making the group fails with an error naming WORLD_SIZE and tandem-run.
// Prints "rank R: launcher ok" or "... FAILED: why" and exits 0 or 1.
#include <cstdlib>
#include <iostream>
#include <string>

#include "tandem/dist/process_group.h"

namespace {

std::string check_torchrun() {
  try {
    tandem::dist::ProcessGroup group;
  } catch (const tandem::Error& error) {
    const std::string text = error.what();
    if (text.find("WORLD_SIZE=") != std::string::npos &&
        text.find("tandem-run -np") != std::string::npos) {
      return {};
    }
    return "the error does not name WORLD_SIZE and tandem-run: " + text;
  }
  return "a group was made although WORLD_SIZE differs from MPI's size";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "torchrun") {
    const std::string failure = check_torchrun();
    std::cout << "rank 0: torchrun" << (failure.empty() ? " ok" : " FAILED: " + failure) << "\n";
    return failure.empty() ? 0 : 1;
  }
  if (argc != 3) {
    std::cerr << "usage: launcher_test EXPECTED_SIZE EXPECTED_WORKERS | launcher_test torchrun\n";
    return 2;
  }
  tandem::dist::ProcessGroup group;
  std::string failure;
  const char* workers = std::getenv("TANDEM_CPU_WORKERS");
  if (group.size() != std::atoi(argv[1])) {
    failure = "size " + std::to_string(group.size()) + ", expected " + argv[1];
  } else if (group.local_size() != group.size() || group.local_rank() != group.rank()) {
    failure = "local rank " + std::to_string(group.local_rank()) + " of " +
              std::to_string(group.local_size()) + " on one machine";
  } else if (workers == nullptr || std::string(workers) != argv[2]) {
    failure = std::string("TANDEM_CPU_WORKERS=") + (workers ? workers : "(unset)") + ", expected " +
              argv[2];
  }
  std::cout << "rank " << group.rank() << ": launcher"
            << (failure.empty() ? " ok" : " FAILED: " + failure) << std::endl;
  return failure.empty() ? 0 : 1;
}
