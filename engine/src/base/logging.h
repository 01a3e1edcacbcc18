// The engine's spdlog logger ("tandem"), writing to stderr. Its level comes from
// EngineConfig::log_level (TANDEM_LOG_LEVEL); at the default "warn" a healthy program prints
// nothing.
#pragma once

#include <spdlog/logger.h>

#include <string>

namespace tandem::detail {

spdlog::logger& log();
// Throws tandem::Error for a name spdlog does not know.
void set_log_level(const std::string& level);

}  // namespace tandem::detail
