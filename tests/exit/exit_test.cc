// Programs that use tandem after main returns (global arrays, pushes from static destructors),
// run as real processes: each must exit 0 and print what its exit-time ops computed, on both
// engine kinds. The program paths come from the build (TANDEM_EXIT_PROGRAM_DIR).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr
};

ProcessResult run_program(const std::string& name, const char* engine_kind) {
  const std::string command = std::string("TANDEM_ENGINE=") + engine_kind + " " +
                              TANDEM_EXIT_PROGRAM_DIR + "/" + name + " 2>&1";
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run ", command);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) {
    result.output += buffer.data();
  }
  const int status = pclose(pipe);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

void check_exits_cleanly(const ProcessResult& result) {
  INFO("output:\n", result.output);
  CHECK(result.signal == 0);
  CHECK(result.exit_code == 0);
  CHECK(result.output.find("[tandem error]") == std::string::npos);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("namespace-scope arrays are freed after main returns, and the process exits 0") {
  for (const char* kind : {"threaded", "naive"}) {
    CAPTURE(kind);
    const ProcessResult result = run_program("exit_global_array", kind);
    check_exits_cleanly(result);
    INFO("output:\n", result.output);
    CHECK(contains(result.output, "bias total 4\n"));
    CHECK(contains(result.output, "main returns\n"));
    // Computed by a namespace-scope object's destructor after every other global array died.
    CHECK(contains(result.output, "exit-time arrays 10 7\n"));
  }
}

TEST_CASE("a static destructor can push, wait and delete vars on cpu and sim after main") {
  for (const char* kind : {"threaded", "naive"}) {
    CAPTURE(kind);
    const ProcessResult result = run_program("exit_push", kind);
    check_exits_cleanly(result);
    INFO("output:\n", result.output);
    CHECK(contains(result.output, "in main: result 42\n"));
    CHECK(contains(result.output, "late op ran\n"));  // pushed by main, not waited for
    CHECK(contains(result.output, "function-local static: result 42\n"));
    CHECK(contains(result.output, "function-local static: deleter ran\n"));
    CHECK(contains(result.output, "namespace-scope object: result 42\n"));
    CHECK(contains(result.output, "namespace-scope object: deleter ran\n"));
  }
}
