#include "logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "tandem/errors.h"

namespace tandem::detail {

spdlog::logger& log() {
  // Leaked on purpose: engines log from their destructors, which may run during static
  // destruction.
  static spdlog::logger* logger = [] {
    auto* l = new spdlog::logger("tandem", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[tandem %l] %v");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return *logger;
}

void set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  // from_str answers "off" for any unknown name; only accept "off" when it was asked for.
  if (parsed == spdlog::level::off && level != "off") {
    throw Error("tandem: TANDEM_LOG_LEVEL='" + level +
                "' is not a log level (trace, debug, info, warn, error, critical, off)");
  }
  log().set_level(parsed);
}

}  // namespace tandem::detail
