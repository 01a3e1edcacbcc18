#!/usr/bin/env bash
# Instructions per front-end op, counted by callgrind: `y = x + 1` on a 1x2 float32 array
# (bench/frontend/tiny_op_count.cc), 3000 times minus 1000 times, so that start-up and the
# first ops (which fill the pools) cancel out. Two counts:
# - `operator+`: the front-end call alone on the default (threaded) engine: checks, allocation,
#   push, the autograd / trace checks (the op itself runs on a worker);
# - naive engine, whole program: the call, the kernel run inline, and the release of the
#   previous y (TANDEM_ENGINE=naive: one thread, so the count repeats exactly).
#
# - `nd::where(x, x, x)`: the front-end call alone (threaded engine) of an op with a record
#   (frontend/src/core/op_definition.h), which runs through detail::invoke.
#
#   bench/front_end_op_cost.sh              # builds build-bench/ if needed, prints markdown
#   BUILD=build bench/front_end_op_cost.sh  # another build tree (configured with the bench)
#
# Needs valgrind.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
command -v valgrind > /dev/null || {
  echo "front_end_op_cost.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
}
build=${BUILD:-build-bench}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_BENCH=ON \
    -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_EXAMPLES=OFF -DTANDEM_CUDA=OFF > /dev/null
fi
cmake --build "$build" --target bench_tiny_op_count -j "$(nproc)" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for engine in threaded naive; do
  for n in 1000 3000; do
    TANDEM_ENGINE=$engine valgrind --tool=callgrind --callgrind-out-file="$work/$engine.$n.cg" \
      "$build/bench/frontend/bench_tiny_op_count" "$n" > /dev/null 2>&1
    callgrind_annotate --inclusive=yes "$work/$engine.$n.cg" > "$work/$engine.$n.txt"
  done
done
for n in 1000 3000; do
  valgrind --tool=callgrind --callgrind-out-file="$work/where.$n.cg" \
    "$build/bench/frontend/bench_tiny_op_count" "$n" where > /dev/null 2>&1
  callgrind_annotate --inclusive=yes "$work/where.$n.cg" > "$work/where.$n.txt"
done

python3 - "$work" "$(git rev-parse --short HEAD)" << 'PY'
import re, sys
work, commit = sys.argv[1:3]

def text(name):
    return open(f"{work}/{name}.txt").read()

def total(t):
    return int(re.search(r"^([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", t, re.M).group(1).replace(",", ""))

def inclusive(t, function):
    m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*" + re.escape(function), t, re.M)
    return int(m.group(1).replace(",", "")) if m else 0

plus = "tandem::nd::operator+(tandem::nd::NDArray const&, double)"
call = (inclusive(text("threaded.3000"), plus) - inclusive(text("threaded.1000"), plus)) / 2000
whole = (total(text("naive.3000")) - total(text("naive.1000"))) / 2000
print(f"Reproduce with `bench/front_end_op_cost.sh` (commit {commit}): `y = x + 1`, 1x2 float32, "
      "3000 ops minus 1000.\n")
print("| instructions per front-end op | count |")
print("|---|---|")
print(f"| `operator+` (threaded engine: checks, allocation, push, mode checks) | {call:.0f} |")
print(f"| whole program per op (naive engine: call, kernel, release) | {whole:.0f} |")
where = "tandem::nd::where(tandem::nd::NDArray const&, tandem::nd::NDArray const&, tandem::nd::NDArray const&)"
wcall = (inclusive(text("where.3000"), where) - inclusive(text("where.1000"), where)) / 2000
print(f"| `nd::where` (threaded engine: an op with a record, through detail::invoke) | {wcall:.0f} |")
PY
