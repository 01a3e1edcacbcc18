#include "records.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace tandem::bench {

nlohmann::json target_record(const std::string& target, const std::string& limit_text, double value,
                             double limit, bool at_most, bool measured) {
  const bool met = measured && (at_most ? value <= limit : value >= limit);
  return {
      {"workload", "targets"}, {"system", "tandem"}, {"target", target}, {"limit_text", limit_text},
      {"value", value},        {"limit", limit},     {"met", met},       {"measured", measured}};
}

void print_targets(const Records& records) {
  const bool any = std::any_of(records.begin(), records.end(), [](const nlohmann::json& r) {
    return r.value("workload", "") == "targets";
  });
  if (!any) return;
  std::printf("\n%-58s %-10s %10s  %s\n", "target", "limit", "measured", "status");
  for (const auto& r : records) {
    if (r.value("workload", "") != "targets") continue;
    std::printf("%-58s %-10s %10.3f  %s\n", r["target"].get<std::string>().c_str(),
                r["limit_text"].get<std::string>().c_str(), r["value"].get<double>(),
                !r["measured"].get<bool>() ? "not measured"
                : r["met"].get<bool>()     ? "met"
                                           : "MISSED");
  }
}

bool write_records(const Records& records, const std::string& path, const char* program) {
  std::ofstream file(path);
  file << nlohmann::json(records).dump(2) << "\n";
  if (!file) {
    std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
    return false;
  }
  return true;
}

}  // namespace tandem::bench
