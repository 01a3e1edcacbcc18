// The frontend benchmark's result records (one JSON object each) and the targets of issue #3.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tandem::bench {

using Records = std::vector<nlohmann::json>;

// A target of the issue, judged from measured values: met when `value` is on the right side of
// `limit` (`at_most`: value <= limit, else value >= limit).
nlohmann::json target_record(const std::string& target, const std::string& limit_text, double value,
                             double limit, bool at_most, bool measured = true);

// Prints the targets among `records` as a table on stdout (nothing when there are none).
void print_targets(const Records& records);

// Writes `records` as a JSON list to `path`; false (after a message on stderr naming `program`
// and the path) when the file cannot be written.
bool write_records(const Records& records, const std::string& path, const char* program);

}  // namespace tandem::bench
