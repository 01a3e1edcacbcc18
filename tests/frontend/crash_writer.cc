// The writer that crash_safe_files_test.cc kills: saves `path` over and over with growing
// contents until it is killed. Save number n holds "n" = [n] and "data" = data_size(n) values
// equal to n (crash_writer.h), so a reader can tell a whole file of any save from a torn one.
//
//   crash_writer PATH FIRST     saves FIRST, FIRST + 1, ... to PATH, forever
#include <tandem/tandem.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "crash_writer.h"

namespace nd = tandem::nd;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_writer PATH FIRST\n");
    return 2;
  }
  const std::string path = argv[1];
  for (std::int64_t n = std::atoll(argv[2]);; ++n) {
    nd::NamedArrays arrays;
    arrays.emplace_back("n", nd::from_vector(std::vector<std::int64_t>{n}));
    arrays.emplace_back(
        "data", nd::from_vector(std::vector<std::int64_t>(
                    static_cast<std::size_t>(tandem::testing::crash_writer_data_size(n)), n)));
    nd::save(path, arrays);
  }
}
