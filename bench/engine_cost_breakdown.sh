#!/usr/bin/env bash
# Where an empty op's time goes: instructions per op of tandem's engine, function by function,
# against the plain mutex + condvar queue, counted by callgrind on one of the engine suite's
# workloads (`independent` by default: 20000 empty ops, each writing its own var; 3 repetitions
# after a warm-up). Instruction counts repeat from run to run, unlike times on a shared 2-core
# VM; they do not show what cache-line transfers between cores cost (see docs/benchmarks.md).
#
#   bench/engine_cost_breakdown.sh                 # builds build-bench/ if needed, prints markdown
#   bench/engine_cost_breakdown.sh chains_1000     # the same on another workload (fan_out, ...)
#   BENCH_ENGINE=/path/to/bench_engine bench/engine_cost_breakdown.sh   # another build (an older
#                                                  # commit's, to compare function by function)
#
# The plain queue runs only where ops are independent; on other workloads its column is empty.
# Needs valgrind.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
command -v valgrind > /dev/null || {
  echo "engine_cost_breakdown.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
}
workload=${1:-independent}
binary=${BENCH_ENGINE:-}
if [[ -z $binary ]]; then
  if [[ ! -f build-bench/CMakeCache.txt ]]; then
    cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_BENCH=ON \
      -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_EXAMPLES=OFF -DTANDEM_CUDA=OFF > /dev/null
  fi
  cmake --build build-bench --target bench_engine -j "$(nproc)" >&2
  binary=build-bench/bench/bench_engine
fi
systems=(tandem)
[[ $workload == independent ]] && systems+=(plain_queue)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Each system twice, 1 and 3 repetitions: the differences are the 2 extra repetitions alone,
# in steady state (the first repetition fills the engine's pools; the harness's setup and its
# timing calibration cancel out).
for system in "${systems[@]}"; do
  for reps in 1 3; do
    echo "engine_cost_breakdown.sh: callgrind, $system, $reps repetition(s)" >&2
    BENCH_CORE_TO_CORE=0 valgrind --tool=callgrind --callgrind-out-file="$work/$system.$reps.cg" \
      "$binary" --quick --workloads "$workload" --systems "$system" \
      --repetitions "$reps" --out "$work/$system.$reps.json" > /dev/null 2>&1
    callgrind_annotate --inclusive=yes --tree=caller "$work/$system.$reps.cg" \
      > "$work/$system.$reps.inclusive"
    callgrind_annotate --inclusive=no "$work/$system.$reps.cg" > "$work/$system.$reps.self"
  done
done

python3 - "$work" "$(git rev-parse --short HEAD)" "$workload" "${BENCH_ENGINE:+$binary}" << 'PY'
import os, re, sys
work, commit, workload, binary = sys.argv[1:5]
has_queue = os.path.exists(f"{work}/plain_queue.3.inclusive")

def read(name):
    return open(f"{work}/{name}").read()

def inclusive(text, function):
    m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\*\s+\S*" + re.escape(function) + r"\(", text, re.M)
    return int(m.group(1).replace(",", "")) if m else 0

def calls(text, function):
    found = re.findall(r"<\s+\S*" + re.escape(function) + r"\(.*\(([\d,]+)x\)", text)
    return max(int(n.replace(",", "")) for n in found) if found else 0

def self_costs(text):
    costs = {}
    for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\S*?:(\S.*?)(?: \[.*)?$", text, re.M):
        name = m.group(2).strip()
        if "tandem::detail" not in name:
            continue
        name = name.replace("tandem::detail::", "").replace("(anonymous namespace)::", "")
        name = re.sub(r"\(.*", "", name)
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs

def extra(system, measure):
    # measure(text of the 3-repetition run) - measure(text of the 1-repetition run)
    return measure(read(f"{system}.3.inclusive")) - measure(read(f"{system}.1.inclusive"))

pushes = extra("tandem", lambda t: calls(t, "ThreadedEngine::submit"))
submit_alone = extra("tandem", lambda t: inclusive(t, "ThreadedEngine::submit"))
push_side = submit_alone + extra("tandem", lambda t: inclusive(t, "acquire_op_record"))
worker_side = extra("tandem", lambda t: inclusive(t, "EngineCore::execute"))
if has_queue:
    queue_pushes = extra("plain_queue", lambda t: calls(t, "PlainQueue::push"))
    queue_push = extra("plain_queue", lambda t: inclusive(t, "PlainQueue::push")) / queue_pushes
    queue_serve = extra("plain_queue", lambda t: inclusive(t, "PlainQueue::serve")) / queue_pushes
    queue = [f"{queue_push:.0f}", f"{queue_serve:.0f}", f"{queue_push + queue_serve:.0f}"]
else:
    queue = ["-", "-", "-"]

built = f"the build at {binary}" if binary else f"commit {commit}"
command = "bench/engine_cost_breakdown.sh" + ("" if workload == "independent" else f" {workload}")
print(f"Reproduce with `{command}` ({built}): `{workload}`, the "
      f"{pushes:,} pushes of 2 repetitions in steady state (3 repetitions minus 1).\n")
print("| instructions per op | tandem | plain_queue |")
print("|---|---|---|")
print(f"| pushing thread (tandem: op record + `submit`; queue: `push`) | "
      f"{push_side / pushes:.0f} | {queue[0]} |")
print(f"| of which `submit` alone (tandem; the op record's pool refills move with timing) | "
      f"{submit_alone / pushes:.0f} | - |")
print(f"| worker (tandem: `execute`: run, finish, release the vars, recycle; queue: `serve`) | "
      f"{worker_side / pushes:.0f} | {queue[1]} |")
print(f"| total | {(push_side + worker_side) / pushes:.0f} | {queue[2]} |")
print()
print("tandem's functions by self cost, instructions per op (functions inlined into them count")
print("as theirs):\n")
print("| function | instructions per op |")
print("|---|---|")
three, one = self_costs(read("tandem.3.self")), self_costs(read("tandem.1.self"))
rows = sorted(((three[n] - one.get(n, 0)) / pushes, n) for n in three)
for cost, name in reversed(rows):
    if cost >= 8:
        print(f"| `{name}` | {cost:.0f} |")
PY
