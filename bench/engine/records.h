// The results of a run: a flat list of JSON records, one per (workload, system), written to
// bench/results/engine.json and turned into docs/benchmarks.md by bench/report.py.
//
//   {"workload": "chains_1000", "system": "tandem", "ns_per_op": 182.5, "ops": 20000, ...}
//   {"workload": "metg_stencil_1d", "system": "starpu", "metg_ns": 41000.0, "efficiency": [...]}
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace tandem::bench {

class Records {
 public:
  void add(nlohmann::json record) { records_.push_back(std::move(record)); }
  // The record of `workload` for `system`, if it was measured.
  const nlohmann::json* find(const std::string& workload, const std::string& system) const;
  // A numeric field of that record, if present and not null.
  std::optional<double> number(const std::string& workload, const std::string& system,
                               const std::string& field) const;
  const nlohmann::json& all() const { return records_; }

  // Writes atomically (a .tmp file renamed over `path`), so a crashed run never leaves half a
  // file for the report to read.
  void write(const std::string& path) const;

 private:
  nlohmann::json records_ = nlohmann::json::array();
};

}  // namespace tandem::bench
