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
# Writes bench/results/profiler_off.json (with its provenance) and regenerates its table in
# docs/benchmarks.md; also prints a markdown table.
set -euo pipefail

runs=5
started=$SECONDS
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

# Instructions per pushed op of `independent` for one binary, in steady state (a 3-repetition
# run minus a 1-repetition run, so setup and the harness's calibration cancel out), from
# callgrind's self cost per function. Prints two numbers: the functions that hold the hooks
# (prepare, submit, enqueue_on_vars and queue_on_vars, dispatch, execute, finish,
# release_op_record: their cost hardly depends on thread timing), and every engine function
# (tandem::detail::*), whose total also holds spin-lock and idle-polling instructions that
# vary by +-25 per op between runs. ThreadedEngine::release is left out of the first: how
# often it takes its "a thread is blocked in wait_all" path depends on timing (+-10 per op
# between two builds). Its one hook, the test before a completion hands a readied op on
# (dispatch_on_completion), does not run in `independent`, where no op readies another.
instructions_per_op() {
  local binary=$1 name=$2 reps
  for reps in 1 3; do
    valgrind --tool=callgrind --callgrind-out-file="$work/$name.$reps.cg" "$binary" --quick \
      --workloads independent --systems tandem --repetitions "$reps" \
      --out "$work/$name.$reps.json" > /dev/null 2>&1
    callgrind_annotate --inclusive=no "$work/$name.$reps.cg" > "$work/$name.$reps.self"
    callgrind_annotate --inclusive=yes --tree=caller "$work/$name.$reps.cg" \
      > "$work/$name.$reps.tree"
  done
  python3 - "$work/$name" << 'PY'
import re, sys
base = sys.argv[1]
HOOKED = {"EngineCore::prepare", "ThreadedEngine::submit", "ThreadedEngine::enqueue_on_vars",
          "ThreadedEngine::queue_on_vars<false>", "ThreadedEngine::dispatch",
          "EngineCore::execute", "EngineCore::finish", "release_op_record"}
def costs(path):
    out = {}
    for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\S*?:(\S.*?)(?: \[.*)?$", open(path).read(), re.M):
        name = m.group(2).strip()
        if "tandem::detail" not in name:
            continue
        name = re.sub(r"\(.*", "", name.replace("tandem::detail::", "").replace("(anonymous namespace)::", ""))
        out[name] = out.get(name, 0) + int(m.group(1).replace(",", ""))
    return out
def pushes(path):
    found = re.findall(r"<\s+\S*ThreadedEngine::submit\(.*\(([\d,]+)x\)", open(path).read())
    return max(int(n.replace(",", "")) for n in found)
three, one = costs(base + ".3.self"), costs(base + ".1.self")
n = pushes(base + ".3.tree") - pushes(base + ".1.tree")
hooked = sum(three.get(f, 0) - one.get(f, 0) for f in HOOKED) / n
total = sum(three[f] - one.get(f, 0) for f in three) / n
print(f"{hooked} {total}")
PY
}

echo "profiler_off_cost.sh: callgrind, hooks compiled in" >&2
read -r hooked_in total_in <<< "$(instructions_per_op build-bench/bench/bench_engine hooks)"
echo "profiler_off_cost.sh: callgrind, hooks compiled out" >&2
read -r hooked_out total_out <<< "$(instructions_per_op build-bench-nohooks/bench/bench_engine nohooks)"

workloads=independent,chains_1000,one_chain
for ((i = 0; i < runs; ++i)); do
  echo "profiler_off_cost.sh: timed run $((i + 1)) of $runs" >&2
  build-bench/bench/bench_engine --quick --workloads "$workloads" --systems tandem \
    --out "$work/timed.hooks.$i.json" > /dev/null
  build-bench-nohooks/bench/bench_engine --quick --workloads "$workloads" --systems tandem \
    --out "$work/timed.nohooks.$i.json" > /dev/null
done

python3 - "$work" "$runs" "$hooked_in" "$hooked_out" "$total_in" "$total_out" \
  "$repo/bench/results/profiler_off.json" "$(git -C "$repo" rev-parse --short HEAD)" << 'PY'
import json, statistics, sys
work, runs, hooked_in, hooked_out, total_in, total_out, out, commit = sys.argv[1:9]
runs = int(runs)
hooked_in, hooked_out, total_in, total_out = map(float, (hooked_in, hooked_out, total_in, total_out))
def medians(kind):
    per = {}
    for i in range(runs):
        for r in json.load(open(f"{work}/timed.{kind}.{i}.json")):
            if r.get("system") == "tandem" and "ns_per_op" in r:
                per.setdefault(r["workload"], []).append(r["ns_per_op"])
    return {w: statistics.median(v) for w, v in per.items()}
on, off = medians("hooks"), medians("nohooks")
records = [
    {"workload": "independent", "measure": "instructions_per_op_hooked_functions",
     "hooks_compiled_in": hooked_in, "hooks_compiled_out": hooked_out,
     "added_share_of_op": (hooked_in - hooked_out) / total_out, "commit": commit},
    {"workload": "independent", "measure": "instructions_per_op_all_engine_functions",
     "hooks_compiled_in": total_in, "hooks_compiled_out": total_out,
     "ratio": total_in / total_out, "commit": commit},
]
for w in on:
    records.append({"workload": w, "measure": "ns_per_op_median", "runs": runs,
                    "hooks_compiled_in": on[w], "hooks_compiled_out": off[w],
                    "ratio": on[w] / off[w], "commit": commit})
json.dump(records, open(out, "w"), indent=2)
print(f"Reproduce with `bench/profiler_off_cost.sh --runs {runs}` (commit {commit}).\n")
print("| workload | measure | hooks compiled in (profiler off) | hooks compiled out | in vs out |")
print("|---|---|---|---|---|")
r = records[0]
print(f"| independent | instructions/op in the functions holding the hooks | {hooked_in:.1f} | "
      f"{hooked_out:.1f} | +{hooked_in - hooked_out:.1f} instructions = "
      f"{100 * r['added_share_of_op']:.1f}% of the op's {total_out:.0f} |")
print(f"| independent | instructions/op in all engine functions (± 25 run to run) | "
      f"{total_in:.1f} | {total_out:.1f} | {total_in / total_out:.3f} |")
for r in records[2:]:
    print(f"| {r['workload']} | ns/op, median of {runs} | {r['hooks_compiled_in']:.1f} | "
          f"{r['hooks_compiled_out']:.1f} | {r['ratio']:.3f} |")
PY
# Provenance (command, commit, machine) for the generated table in docs/benchmarks.md.
python3 "$repo/bench/report.py" --record-run profiler_off \
  --command "bench/profiler_off_cost.sh --runs $runs" --seconds $((SECONDS - started))
python3 "$repo/bench/report.py" >&2
