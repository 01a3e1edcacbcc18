// tandem-trace: reads a trace written by tandem's profiler (profiler::dump or TANDEM_PROFILE).
//
//   tandem-trace summary trace.json            per-op table and per-device overlap figures
//   tandem-trace timeline trace.json out.svg   the lanes as a picture
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "tandem/profiler.h"

namespace {

int usage() {
  std::cerr << "usage: tandem-trace summary TRACE.json\n"
               "       tandem-trace timeline TRACE.json OUT.svg [WIDTH_PX]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string command = argv[1];
  try {
    const auto events = tandem::profiler::load(argv[2]);
    if (command == "summary" && argc == 3) {
      std::cout << events.size() << " ops in " << argv[2] << "\n\n"
                << tandem::profiler::summary(events);
      return 0;
    }
    if (command == "timeline" && (argc == 4 || argc == 5)) {
      const int width = argc == 5 ? std::stoi(argv[4]) : 1200;
      std::ofstream out(argv[3]);
      out << tandem::profiler::timeline_svg(events, width);
      if (!out) {
        std::cerr << "tandem-trace: cannot write " << argv[3] << "\n";
        return 1;
      }
      std::cout << "wrote " << argv[3] << " (" << events.size() << " ops)\n";
      return 0;
    }
    return usage();
  } catch (const std::exception& e) {
    std::cerr << "tandem-trace: " << e.what() << "\n";
    return 1;
  }
}
