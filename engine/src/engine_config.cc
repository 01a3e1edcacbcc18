// The one place tandem reads its environment variables (documented in docs/environment.md).
//
// Every value is trimmed of surrounding whitespace before it is parsed, whatever the variable
// (' 2', '2 ' and '2' are all 2), so a stray space in a shell script never decides between
// accepted and rejected. A value that still does not parse is an error that names the variable,
// the value, what is accepted, and how to get past it: the process-wide engine (or the
// accelerator registry) reads the environment on first use and fails the same way on every
// call until the variable is fixed or a configuration built in code replaces it.
#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cpu_executor.h"
#include "tandem/detail/fault_injection.h"
#include "tandem/engine_config.h"
#include "tandem/errors.h"

namespace tandem {

namespace {

// Which configuration the variable feeds, for the way out named in its error.
enum class Part { engine, accelerators };

std::string trimmed(const char* text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const std::string_view value = text;
  const std::size_t begin = value.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const std::size_t end = value.find_last_not_of(kSpace);
  return std::string(value.substr(begin, end - begin + 1));
}

[[noreturn]] void reject(Part part, const char* name, const char* text,
                         const std::string& accepted) {
  const std::string fix =
      part == Part::engine
          ? "call tandem::Engine::set_default(config) (nd::set_default_engine(config) in the "
            "NDArray API) with an EngineConfig built in code"
          : "call tandem::configure_accelerators(config) with an AcceleratorConfig built in "
            "code before the first use of a sim or cuda device";
  throw Error(std::string("tandem: environment variable ") + name + "='" + text +
              "' is not valid: expected " + accepted + ". Every call that needs the " +
              (part == Part::engine ? "process-wide engine" : "accelerators") +
              " reads it and fails until then: set it to a valid value, unset it, or " + fix);
}

long long parse_integer(Part part, const char* name, const char* text, long long min,
                        long long max) {
  const std::string value = trimmed(text);
  errno = 0;
  char* end = nullptr;
  const long long number = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || errno != 0 || *end != '\0' || number < min || number > max) {
    reject(part, name, text,
           "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return number;
}

double parse_positive(Part part, const char* name, const char* text) {
  const std::string value = trimmed(text);
  errno = 0;
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  if (value.empty() || errno != 0 || *end != '\0' || !(number > 0) || number > 1e18) {
    reject(part, name, text, "a positive number (at most 1e18)");
  }
  return number;
}

bool parse_flag(Part part, const char* name, const char* text) {
  const std::string value = trimmed(text);
  if (value == "1" || value == "true" || value == "on") return true;
  if (value == "0" || value == "false" || value == "off" || value.empty()) return false;
  reject(part, name, text, "a flag (1/0, true/false, on/off)");
}

EngineKind parse_engine_kind(const char* text) {
  const std::string value = trimmed(text);
  if (value == "threaded") return EngineKind::threaded;
  if (value == "naive") return EngineKind::naive;
  reject(Part::engine, "TANDEM_ENGINE", text, "an engine kind (threaded, naive)");
}

std::string parse_log_level(const char* text) {
  const std::string value = trimmed(text);
  for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    if (value == level) return value;
  }
  reject(Part::engine, "TANDEM_LOG_LEVEL", text,
         "a log level (trace, debug, info, warn, error, critical, off)");
}

AcceleratorConfig read_accelerator_config(const char* (*getenv)(const char*)) {
  constexpr Part part = Part::accelerators;
  AcceleratorConfig accel;
  if (const char* v = getenv("TANDEM_SIM_DEVICES")) {
    accel.sim_devices = static_cast<int>(parse_integer(part, "TANDEM_SIM_DEVICES", v, 0, 64));
  }
  if (const char* v = getenv("TANDEM_ACCEL_STREAMS")) {
    accel.compute_streams = static_cast<int>(parse_integer(part, "TANDEM_ACCEL_STREAMS", v, 1, 64));
  }
  if (const char* v = getenv("TANDEM_SIM_GFLOPS")) {
    accel.sim_gflops = parse_positive(part, "TANDEM_SIM_GFLOPS", v);
  }
  if (const char* v = getenv("TANDEM_SIM_MEMORY_GBPS")) {
    accel.sim_memory_gbps = parse_positive(part, "TANDEM_SIM_MEMORY_GBPS", v);
  }
  if (const char* v = getenv("TANDEM_SIM_BUS_GBPS")) {
    accel.sim_bus_gbps = parse_positive(part, "TANDEM_SIM_BUS_GBPS", v);
  }
  if (const char* v = getenv("TANDEM_SIM_LATENCY_US")) {
    accel.sim_latency_us =
        static_cast<double>(parse_integer(part, "TANDEM_SIM_LATENCY_US", v, 0, 10'000'000));
  }
  if (const char* v = getenv("TANDEM_SIM_MEMORY_MB")) {
    accel.sim_memory_mb =
        static_cast<std::size_t>(parse_integer(part, "TANDEM_SIM_MEMORY_MB", v, 1, 1LL << 30));
  }
  if (const char* v = getenv("TANDEM_ACCEL_SYNC")) {
    accel.synchronize_each_op = parse_flag(part, "TANDEM_ACCEL_SYNC", v);
  }
  if (const char* v = getenv("TANDEM_ALLOW_TF32")) {
    accel.allow_tf32 = parse_flag(part, "TANDEM_ALLOW_TF32", v);
  }
  if (const char* v = getenv("TANDEM_CUDNN")) {
    accel.use_cudnn = parse_flag(part, "TANDEM_CUDNN", v);
  }
  return accel;
}

const char* real_getenv(const char* name) {
  return std::getenv(name);
}

}  // namespace

AcceleratorConfig AcceleratorConfig::from_env() {
  return read_accelerator_config(&real_getenv);
}

EngineConfig EngineConfig::from_env() {
  return from_env(&real_getenv);
}

EngineConfig EngineConfig::from_env(const char* (*getenv)(const char*)) {
  constexpr Part part = Part::engine;
  EngineConfig config;
  if (const char* v = getenv("TANDEM_ENGINE")) config.kind = parse_engine_kind(v);
  if (const char* v = getenv("TANDEM_CPU_WORKERS")) {
    config.cpu_workers = static_cast<int>(parse_integer(part, "TANDEM_CPU_WORKERS", v, 0, 1024));
  }
  if (const char* v = getenv("TANDEM_PRIORITY_WORKERS")) {
    config.priority_workers =
        static_cast<int>(parse_integer(part, "TANDEM_PRIORITY_WORKERS", v, 0, 64));
  }
  if (const char* v = getenv("TANDEM_MAX_OPS_IN_FLIGHT")) {
    config.max_ops_in_flight =
        static_cast<std::size_t>(parse_integer(part, "TANDEM_MAX_OPS_IN_FLIGHT", v, 0, 1LL << 40));
  }
  if (const char* v = getenv("TANDEM_SPIN_US")) {
    config.spin_before_park =
        std::chrono::microseconds(parse_integer(part, "TANDEM_SPIN_US", v, 0, 1000000));
  }
  if (const char* v = getenv("TANDEM_SHUTDOWN_TIMEOUT_MS")) {
    config.shutdown_timeout = std::chrono::milliseconds(
        parse_integer(part, "TANDEM_SHUTDOWN_TIMEOUT_MS", v, 0, 1LL << 40));
  }
  if (const char* v = getenv("TANDEM_WAIT_WARN_S")) {
    config.wait_warn_after =
        std::chrono::seconds(parse_integer(part, "TANDEM_WAIT_WARN_S", v, 0, 1LL << 30));
  }
  if (const char* v = getenv("TANDEM_LOG_LEVEL")) config.log_level = parse_log_level(v);
  if (const char* v = getenv("TANDEM_PROFILE")) config.profile_path = trimmed(v);
  if (const char* v = getenv("TANDEM_DEVICE_GRAPHS")) {
    config.device_graphs = parse_flag(part, "TANDEM_DEVICE_GRAPHS", v);
  }
  if (const char* v = getenv("TANDEM_FAULTS")) {
    config.faults = trimmed(v);
    try {
      (void)testing::parse_fault_plan(config.faults);
    } catch (const Error& e) {
      reject(part, "TANDEM_FAULTS", v, std::string("a fault plan (") + e.what() + ")");
    }
  }
  config.accel = read_accelerator_config(getenv);
  return config;
}

}  // namespace tandem

namespace tandem::detail {

unsigned max_idle_poll_pauses() {
  if (const char* v = std::getenv("TANDEM_IDLE_POLL_PAUSES")) {
    return static_cast<unsigned>(
        parse_integer(Part::engine, "TANDEM_IDLE_POLL_PAUSES", v, 1, 4096));
  }
  return kDefaultMaxIdlePollPauses;
}

unsigned stream_gap_pauses() {
  if (const char* v = std::getenv("TANDEM_STREAM_GAP_PAUSES")) {
    return static_cast<unsigned>(
        parse_integer(Part::engine, "TANDEM_STREAM_GAP_PAUSES", v, 0, 4096));
  }
  return kDefaultStreamGapPauses;
}

}  // namespace tandem::detail
