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
  return config;
}

}  // namespace tandem
