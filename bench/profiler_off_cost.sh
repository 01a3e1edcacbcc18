#!/usr/bin/env bash
# What the profiler costs while it is off: the engine with its profiler hooks compiled in (the
# normal build, build-bench/) against the same engine with them compiled out
# (-DTANDEM_PROFILER_HOOKS=OFF, build-bench-nohooks/), on the engine suite's empty-op workloads.
#
#   bench/profiler_off_cost.sh [--runs N]      # N timed runs per build, alternating (default 5)
#
# Two measures, both for tandem only:
# - instructions per pushed op under callgrind, in the engine's own per-op code (see
#   instructions_per_op below): repeatable to a few instructions, whatever else the machine
#   does, unlike time on a shared 2-core VM.
# - ns per op, median over N runs of each build, the builds alternating so that they share the
#   machine's state (noisy: separate processes on a shared VM).
# Writes bench/results/profiler_off.json and prints a markdown table for docs/benchmarks.md.
set -euo pipefail

runs=5
while (($# > 0)); do
  case $1 in
    --runs)
      runs=$2
      shift 2
      ;;
    *)
      echo "usage: bench/profiler_off_cost.sh [--runs N]" >&2
      exit 2
      ;;
  esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
command -v valgrind > /dev/null || {
  echo "profiler_off_cost.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
}

build() {
  local dir=$1 hooks=$2
  if [[ ! -f $dir/CMakeCache.txt ]]; then
    cmake -S "$repo" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_BENCH=ON \
      -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_EXAMPLES=OFF -DTANDEM_CUDA=OFF \
      -DTANDEM_PROFILER_HOOKS="$hooks" > /dev/null
  fi
  cmake -S "$repo" -B "$dir" -DTANDEM_PROFILER_HOOKS="$hooks" > /dev/null
  cmake --build "$dir" --target bench_engine -j "$(nproc)" >&2
}
build build-bench ON
build build-bench-nohooks OFF

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Instructions per pushed op of `independent` for one binary: the inclusive cost of the
# engine's two halves of an op's life, ThreadedEngine::submit (on the pushing thread: prepare,
# enqueue on the vars, dispatch) and EngineCore::execute (on a worker: run, finish, release the
# vars, hand on the next ops), over the number of pushes. Workers' idle polling and the
# harness's timing calibration (both time-dependent, so not repeatable) are outside them.
instructions_per_op() {
  local binary=$1 name=$2
  valgrind --tool=callgrind --callgrind-out-file="$work/$name.cg" "$binary" --quick \
    --workloads independent --systems tandem --repetitions 3 --out "$work/$name.json" \
    > "$work/$name.log" 2>&1
  callgrind_annotate --inclusive=yes --tree=caller "$work/$name.cg" > "$work/$name.txt"
  python3 - "$work/$name.txt" << 'PY'
import re, sys
text = open(sys.argv[1]).read()
def inclusive(function):
    m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\*\s+\S*" + function + r"\(", text, re.M)
    return int(m.group(1).replace(",", ""))
calls = max(int(n.replace(",", "")) for n in
            re.findall(r"<\s+\S*ThreadedEngine::submit\(.*\(([\d,]+)x\)", text))
print((inclusive("ThreadedEngine::submit") + inclusive("EngineCore::execute")) / calls)
PY
}

echo "profiler_off_cost.sh: callgrind, hooks compiled in" >&2
with_hooks=$(instructions_per_op build-bench/bench/bench_engine hooks)
echo "profiler_off_cost.sh: callgrind, hooks compiled out" >&2
without_hooks=$(instructions_per_op build-bench-nohooks/bench/bench_engine nohooks)

workloads=independent,chains_1000,one_chain
for ((i = 0; i < runs; ++i)); do
  echo "profiler_off_cost.sh: timed run $((i + 1)) of $runs" >&2
  build-bench/bench/bench_engine --quick --workloads "$workloads" --systems tandem \
    --out "$work/timed.hooks.$i.json" > /dev/null
  build-bench-nohooks/bench/bench_engine --quick --workloads "$workloads" --systems tandem \
    --out "$work/timed.nohooks.$i.json" > /dev/null
done

python3 - "$work" "$runs" "$with_hooks" "$without_hooks" "$repo/bench/results/profiler_off.json" \
  "$(git -C "$repo" rev-parse --short HEAD)" << 'PY'
import json, statistics, sys
work, runs, with_hooks, without_hooks, out, commit = sys.argv[1:7]
runs, with_hooks, without_hooks = int(runs), float(with_hooks), float(without_hooks)
def medians(kind):
    per = {}
    for i in range(runs):
        for r in json.load(open(f"{work}/timed.{kind}.{i}.json")):
            if r.get("system") == "tandem" and "ns_per_op" in r:
                per.setdefault(r["workload"], []).append(r["ns_per_op"])
    return {w: statistics.median(v) for w, v in per.items()}
on, off = medians("hooks"), medians("nohooks")
records = [{"workload": "independent", "measure": "instructions_per_op",
            "hooks_compiled_in": with_hooks, "hooks_compiled_out": without_hooks,
            "ratio": with_hooks / without_hooks, "commit": commit}]
for w in on:
    records.append({"workload": w, "measure": "ns_per_op_median", "runs": runs,
                    "hooks_compiled_in": on[w], "hooks_compiled_out": off[w],
                    "ratio": on[w] / off[w], "commit": commit})
json.dump(records, open(out, "w"), indent=2)
print(f"Reproduce with `bench/profiler_off_cost.sh --runs {runs}` (commit {commit}).\n")
print("| workload | measure | hooks compiled in (profiler off) | hooks compiled out | in / out |")
print("|---|---|---|---|---|")
for r in records:
    unit = "instructions/op" if r["measure"] == "instructions_per_op" else f"ns/op, median of {runs}"
    print(f"| {r['workload']} | {unit} | {r['hooks_compiled_in']:.1f} | "
          f"{r['hooks_compiled_out']:.1f} | {r['ratio']:.3f} |")
PY
