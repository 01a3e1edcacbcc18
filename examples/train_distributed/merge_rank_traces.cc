// merge_rank_traces: one timeline of a step on several ranks, from the traces train_distributed
// --trace PREFIX wrote (one per rank, each on its own profiler clock):
//
//   merge_rank_traces OUT.svg [--window FROM_MS TO_MS] PREFIX.rank0.json PREFIX.rank1.json ...
//
// Each rank's lanes get "rank R" in front of their names, and its clock is shifted so that its
// first cross-rank allreduce ("dist.allreduce") ends at 0 on every rank (a collective completes
// at nearly the same moment everywhere, to the comm threads' polling), so the lanes line up.
// --window keeps the ops that overlap [FROM_MS, TO_MS] on that common clock (e.g. one step); it
// prints the aligned end times of rank 0's collectives to choose a window from.
#include <tandem/profiler.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

namespace profiler = tandem::profiler;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: merge_rank_traces OUT.svg [--window FROM_MS TO_MS] RANK0.json ...\n";
    return 2;
  }
  const std::string out_path = argv[1];
  int first = 2;
  double from_ms = -std::numeric_limits<double>::infinity();
  double to_ms = std::numeric_limits<double>::infinity();
  if (std::string(argv[2]) == "--window" && argc >= 6) {
    from_ms = std::atof(argv[3]);
    to_ms = std::atof(argv[4]);
    first = 5;
  }
  try {
    std::vector<profiler::OpEvent> merged;
    for (int i = first; i < argc; ++i) {
      const int rank = i - first;
      std::vector<profiler::OpEvent> events = profiler::load(argv[i]);
      std::int64_t anchor = -1;
      for (const profiler::OpEvent& event : events) {
        if (event.name == "dist.allreduce" && !event.skipped) {
          anchor = event.end_ns;
          break;
        }
      }
      if (anchor < 0) {
        std::cerr << "merge_rank_traces: " << argv[i] << " has no dist.allreduce to align on\n";
        return 1;
      }
      for (profiler::OpEvent& event : events) {
        event.push_ns -= anchor;
        event.ready_ns -= anchor;
        event.start_ns -= anchor;
        event.end_ns -= anchor;
        if (rank == 0 && event.name == "dist.allreduce")
          std::printf("rank 0 allreduce ends at %.3f ms\n",
                      static_cast<double>(event.end_ns) / 1e6);
        if (static_cast<double>(event.end_ns) / 1e6 < from_ms ||
            static_cast<double>(event.start_ns) / 1e6 > to_ms) {
          continue;
        }
        event.lane = "rank " + std::to_string(rank) + " " + event.lane;
        event.depends_on.clear();  // ids are per rank
        event.id += static_cast<std::uint64_t>(rank) << 40;
        merged.push_back(std::move(event));
      }
    }
    // The picture's clock starts at its first op.
    std::int64_t origin = std::numeric_limits<std::int64_t>::max();
    for (const profiler::OpEvent& event : merged) origin = std::min(origin, event.push_ns);
    for (profiler::OpEvent& event : merged) {
      event.push_ns -= origin;
      event.ready_ns -= origin;
      event.start_ns -= origin;
      event.end_ns -= origin;
    }
    std::ofstream out(out_path);
    out << profiler::timeline_svg(merged, 1200);
    if (!out) {
      std::cerr << "merge_rank_traces: cannot write " << out_path << "\n";
      return 1;
    }
    std::printf("wrote %s (%zu ops)\n", out_path.c_str(), merged.size());
  } catch (const std::exception& error) {
    std::cerr << "merge_rank_traces: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
