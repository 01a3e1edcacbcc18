#include "records.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace tandem::bench {

const nlohmann::json* Records::find(const std::string& workload, const std::string& system) const {
  for (const auto& record : records_) {
    if (record.value("workload", "") == workload && record.value("system", "") == system) {
      return &record;
    }
  }
  return nullptr;
}

std::optional<double> Records::number(const std::string& workload, const std::string& system,
                                      const std::string& field) const {
  const nlohmann::json* record = find(workload, system);
  if (record == nullptr || !record->contains(field) || !(*record)[field].is_number()) {
    return std::nullopt;
  }
  return (*record)[field].get<double>();
}

void Records::write(const std::string& path) const {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!out) throw std::runtime_error("cannot write " + temporary);
    out << records_.dump(2) << '\n';
    if (!out) throw std::runtime_error("error while writing " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + temporary + " to " + path);
  }
}

}  // namespace tandem::bench
