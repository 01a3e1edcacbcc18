// The one place tandem reads its environment variables (documented in docs/environment.md).
#include <cerrno>
#include <cstdlib>
#include <string>

#include "tandem/engine_config.h"
#include "tandem/errors.h"

namespace tandem {

namespace {

long long parse_integer(const char* name, const char* text, long long min, long long max) {
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    throw Error(std::string("tandem: environment variable ") + name + "='" + text +
                "' is not an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                "]");
  }
  return value;
}

double parse_positive(const char* name, const char* text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(value > 0) || value > 1e18) {
    throw Error(std::string("tandem: environment variable ") + name + "='" + text +
                "' is not a positive number");
  }
  return value;
}

bool parse_flag(const char* name, const char* text) {
  const std::string value = text;
  if (value == "1" || value == "true" || value == "on") return true;
  if (value == "0" || value == "false" || value == "off" || value.empty()) return false;
  throw Error(std::string("tandem: environment variable ") + name + "='" + value +
              "' is not a flag (1/0, true/false, on/off)");
}

void read_accelerator_config(const char* (*getenv)(const char*), AcceleratorConfig& accel) {
  if (const char* v = getenv("TANDEM_SIM_DEVICES")) {
    accel.sim_devices = static_cast<int>(parse_integer("TANDEM_SIM_DEVICES", v, 0, 64));
  }
  if (const char* v = getenv("TANDEM_ACCEL_STREAMS")) {
    accel.compute_streams = static_cast<int>(parse_integer("TANDEM_ACCEL_STREAMS", v, 1, 64));
  }
  if (const char* v = getenv("TANDEM_SIM_GFLOPS")) {
    accel.sim_gflops = parse_positive("TANDEM_SIM_GFLOPS", v);
  }
  if (const char* v = getenv("TANDEM_SIM_MEMORY_GBPS")) {
    accel.sim_memory_gbps = parse_positive("TANDEM_SIM_MEMORY_GBPS", v);
  }
  if (const char* v = getenv("TANDEM_SIM_BUS_GBPS")) {
    accel.sim_bus_gbps = parse_positive("TANDEM_SIM_BUS_GBPS", v);
  }
  if (const char* v = getenv("TANDEM_SIM_LATENCY_US")) {
    accel.sim_latency_us =
        static_cast<double>(parse_integer("TANDEM_SIM_LATENCY_US", v, 0, 10'000'000));
  }
  if (const char* v = getenv("TANDEM_SIM_MEMORY_MB")) {
    accel.sim_memory_mb =
        static_cast<std::size_t>(parse_integer("TANDEM_SIM_MEMORY_MB", v, 1, 1LL << 30));
  }
  if (const char* v = getenv("TANDEM_ACCEL_SYNC")) {
    accel.synchronize_each_op = parse_flag("TANDEM_ACCEL_SYNC", v);
  }
}

}  // namespace

EngineConfig EngineConfig::from_env() {
  return from_env([](const char* name) -> const char* { return std::getenv(name); });
}

EngineConfig EngineConfig::from_env(const char* (*getenv)(const char*)) {
  EngineConfig config;
  if (const char* kind = getenv("TANDEM_ENGINE")) {
    std::string value = kind;
    if (value == "threaded") {
      config.kind = EngineKind::threaded;
    } else if (value == "naive") {
      config.kind = EngineKind::naive;
    } else {
      throw Error("tandem: TANDEM_ENGINE='" + value + "' is not an engine kind (threaded, naive)");
    }
  }
  if (const char* v = getenv("TANDEM_CPU_WORKERS")) {
    config.cpu_workers = static_cast<int>(parse_integer("TANDEM_CPU_WORKERS", v, 0, 1024));
  }
  if (const char* v = getenv("TANDEM_PRIORITY_WORKERS")) {
    config.priority_workers = static_cast<int>(parse_integer("TANDEM_PRIORITY_WORKERS", v, 0, 64));
  }
  if (const char* v = getenv("TANDEM_MAX_OPS_IN_FLIGHT")) {
    config.max_ops_in_flight =
        static_cast<std::size_t>(parse_integer("TANDEM_MAX_OPS_IN_FLIGHT", v, 0, 1LL << 40));
  }
  if (const char* v = getenv("TANDEM_SPIN_US")) {
    config.spin_before_park =
        std::chrono::microseconds(parse_integer("TANDEM_SPIN_US", v, 0, 1000000));
  }
  if (const char* v = getenv("TANDEM_SHUTDOWN_TIMEOUT_MS")) {
    config.shutdown_timeout =
        std::chrono::milliseconds(parse_integer("TANDEM_SHUTDOWN_TIMEOUT_MS", v, 0, 1LL << 40));
  }
  if (const char* v = getenv("TANDEM_LOG_LEVEL")) config.log_level = v;
  if (const char* v = getenv("TANDEM_PROFILE")) config.profile_path = v;
  read_accelerator_config(getenv, config.accel);
  return config;
}

}  // namespace tandem
