#!/usr/bin/env python3
"""Turns bench/results/*.json into the tables of docs/benchmarks.md.

    bench/report.py                      # regenerate every suite's section of the doc
    bench/report.py --record-run engine --command "bench/run.sh engine --quick" --seconds 95 \
        [--note "what was special about this run"]

Each results file SUITE.json is a list of records ({"workload", "system", "ns_per_op", ...}).
Its companion SUITE.meta.json, written by --record-run right after the run, says how, where and
when it ran. Only the text between `<!-- BEGIN SUITE -->` and `<!-- END SUITE -->` in the doc is
replaced, so hand-written notes around the tables survive; a suite without markers yet gets a
new section at the end.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"

# Column order of the tables; systems a suite did not run are left out.
# taskflow is there only when bench_engine was built with TASKFLOW_DIR (bench/run.sh).
SYSTEMS = ["tandem", "tandem_profiled", "tandem_naive", "starpu", "tbb_flow", "taskflow",
           "plain_queue"]
PEERS = ["starpu", "tbb_flow", "taskflow", "plain_queue"]
ENGINE_WORKLOADS = ["independent", "chains_1000", "one_chain", "fan_out", "push_cost"]


# --- provenance ------------------------------------------------------------------------------


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def git(*args):
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def record_run(suite, command, seconds, note=None):
    meta = {
        "suite": suite,
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git_commit": git("rev-parse", "--short", "HEAD") or "unknown",
        # Other people's edits count too: the tree is what was built. The benchmarks' own
        # outputs (results and the tables) are not code, so another suite's fresh results do not
        # mark this run as made from uncommitted code.
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no", "--",
                                        ".", ":!bench/results", ":!docs/benchmarks.md")),
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model(),
        "seconds": seconds,
    }
    if note:
        meta["note"] = note
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{suite}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def provenance(meta):
    if not meta:
        return ["*Provenance unknown: the results were not produced by bench/run.sh.*", ""]
    commit = meta["git_commit"] + (" (with uncommitted changes)" if meta.get("uncommitted_changes")
                                   else "")
    lines = [
        f"Reproduce with `{meta['command']}` (took {meta['seconds']} s, build included).",
        "",
        f"Machine: {meta['nproc']} cores, {meta['cpu_model']}. Date: {meta['date']}. "
        f"Commit: {commit}.",
        "",
    ]
    if meta.get("note"):
        lines += [f"**Note on this run:** {meta['note']}", ""]
    return lines


# --- formatting ------------------------------------------------------------------------------


def fmt_ns(value):
    if value is None:
        return "—"
    if value >= 10000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}"


def fmt_ratio(value):
    if value is None:
        return "—"
    return f"{value:.3g}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines + [""]


def by_key(records):
    return {(r.get("workload"), r.get("system")): r for r in records}


def present_systems(records):
    seen = {r.get("system") for r in records}
    return [s for s in SYSTEMS if s in seen] + sorted(
        s for s in seen if s not in SYSTEMS and s is not None)


# --- the engine suite ------------------------------------------------------------------------


def engine_ns_table(records):
    index = by_key(records)
    rows_records = [r for r in records if r.get("workload") in ENGINE_WORKLOADS]
    systems = present_systems(rows_records)
    peers = [p for p in PEERS if p in systems]
    header = ["workload", "unit"] + systems + [f"tandem / {p}" for p in peers]
    rows = []
    for workload in ENGINE_WORKLOADS:
        cells = {s: index.get((workload, s), {}).get("ns_per_op") for s in systems}
        if all(v is None for v in cells.values()):
            continue
        unit = next((index[(workload, s)].get("unit", "ns/op") for s in systems
                     if (workload, s) in index), "ns/op")
        ratios = [cells["tandem"] / cells[p] if cells.get("tandem") and cells.get(p) else None
                  for p in peers]
        rows.append([workload, unit] + [fmt_ns(cells[s]) for s in systems] +
                    [fmt_ratio(r) for r in ratios])
    sample = next(iter(rows_records), {})
    lines = table(header, rows)
    lines.append(f"Median of {sample.get('repetitions', '?')} repetitions of "
                 f"{sample.get('ops', '?')} ops per system (fan_out: whole rounds of 1 write + "
                 "1000 reads); wall time from the first push to the last op's end, divided by "
                 "the op count. A ratio below 1 means tandem is faster. — : not run (see notes).")
    return lines + [""] + engine_state_table(records, peers)


def fmt_state_ratio(record, state):
    ratio, rounds = record.get(f"tandem_ratio_cores_{state}"), record.get(f"rounds_cores_{state}")
    return f"{fmt_ratio(ratio)} ({rounds})" if ratio is not None else "—"


def engine_state_table(records, peers):
    """tandem / peer over the rounds both ran with the VM's cores near, and far."""
    index = by_key(records)
    peers = [p for p in peers if any("tandem_ratio_cores_near" in index.get((w, p), {})
                                     for w in ENGINE_WORKLOADS)]
    if not peers:
        return []
    header = ["workload"] + [f"tandem / {p}, cores {state}" for p in peers
                             for state in ("near", "far")]
    rows = []
    for workload in ENGINE_WORKLOADS:
        found = [index.get((workload, p), {}) for p in peers]
        if not any(found):
            continue
        rows.append([workload] + [fmt_state_ratio(r, state) for r in found
                                  for state in ("near", "far")])
    return (["**By the state of the cores**: the same ratios over the rounds in which both "
             "systems ran with the VM's cores near (core to core <= 80 ns, measured after every "
             "run) or far (above it; 120-250 ns when it happens), rounds in parentheses:", ""] +
            table(header, rows))


METG_PATTERNS = [("metg_stencil_1d", "stencil_1d", 3), ("metg_nearest", "nearest", 5),
                 ("metg_trivial", "trivial", 0)]


def fmt_metg(value, at_most=False):
    if value is None:
        return "not reached"
    return ("≤ " if at_most else "") + f"{value:,.0f} ns"


def metg_summary(records):
    """One row per system, one column per Task Bench pattern: METG(50%) vs cores available."""
    present = [(w, name) for w, name, _ in METG_PATTERNS
               if any(r.get("workload") == w for r in records)]
    index = by_key(records)
    systems = present_systems([r for r in records if r.get("workload") in dict(present)])
    rows = []
    for system in systems:
        row = [system]
        for workload, _ in present:
            r = index.get((workload, system))
            row.append(fmt_metg(r.get("metg_ns"), r.get("metg_at_most")) if r else "—")
        rows.append(row)
    return ["**METG(50%) per Task Bench pattern** (vs cores available; stencil_1d: 3 "
            "dependencies per task, nearest: 5, trivial: none):", ""] + \
        table(["system"] + [name for _, name in present], rows)


def metg_tables(records, workload="metg_stencil_1d", pattern="stencil_1d", radix=3):
    metg = [r for r in records if r.get("workload") == workload]
    if not metg:
        return []
    metg.sort(key=lambda r: SYSTEMS.index(r["system"]) if r["system"] in SYSTEMS else 99)

    dependencies = f"{radix} dependencies per task" if radix else "no dependencies"
    lines = [f"**METG(50%)**, Task Bench's {pattern} "
             f"({metg[0].get('width', '?')} columns, {dependencies}):", ""]
    lines += table(["system", "METG(50%) vs cores available", "METG(50%) vs all cores",
                    "METG(50%) in rounds with the cores near"],
                   [[r["system"], fmt_metg(r.get("metg_ns"), r.get("metg_at_most")),
                     fmt_metg(r.get("nominal_metg_ns")),
                     fmt_metg(r.get("metg_cores_near_ns")) if r.get("metg_cores_near_ns")
                     else "—"] for r in metg])

    granularities = [p["granularity_ns"] for p in metg[0].get("efficiency", [])]
    header = ["task granularity", "cores available"] + [r["system"] for r in metg]
    rows = []
    for i, g in enumerate(granularities):
        point = metg[0]["efficiency"][i]
        row = [f"{g:,.0f} ns", f"{point.get('available_cores', 0):.2f}"]
        for r in metg:
            points = r.get("efficiency", [])
            row.append(f"{100 * points[i]['efficiency']:.1f}%" if i < len(points) else "—")
        rows.append(row)
    lines += [f"Efficiency per task granularity, {pattern} (task work / (wall × cores available "
              "in the same round), median of the rounds):", ""]
    lines += table(header, rows)
    shapes = []
    for r in metg:
        if "monotonic_within_noise" not in r:
            continue
        dips = r.get("dips_beyond_noise", [])
        text = "monotonic within noise" if not dips else "dips " + ", ".join(
            f"{d['drop']:.2f} from {d['from_ns']:,.0f} to {d['to_ns']:,.0f} ns" for d in dips)
        shapes.append(f"{r['system']}: {text}")
    if shapes:
        lines += ["Curve shape (a dip: a coarser point whose best round is below a finer point's "
                  "worst round): " + "; ".join(shapes) + ".", ""]
    available = sorted(p.get("available_cores", 0) for p in metg[0].get("efficiency", []))
    cores = metg[0].get("cores", 0)
    if available and cores and available[len(available) // 2] < 0.75 * cores:
        lines += [f"**Warning:** the machine was busy during this sweep (median "
                  f"{available[len(available) // 2]:.2f} of {cores} cores available). With the "
                  "threads sharing fewer cores, cross-core traffic disappears and METG comes out "
                  "optimistic; rerun on a quieter machine before trusting it.", ""]
    return lines


def chain_table(records):
    chain = [r for r in records if r.get("workload") == "chain_plus_independent"]
    if not chain:
        return []
    chain.sort(key=lambda r: SYSTEMS.index(r["system"]) if r["system"] in SYSTEMS else 99)
    first = chain[0]
    lines = [f"**chain_plus_independent**: {first.get('batches', '?')} batches of a "
             f"{first.get('copy_ns', 0) / 1000:.0f} µs copy and a "
             f"{first.get('compute_ns', 0) / 1000:.0f} µs compute op; ideal "
             f"{first.get('ideal_ns', 0) / 1e6:.2f} ms (first copy + every compute):", ""]
    lines += table(["system", "µs per batch", "wall / ideal"],
                   [[r["system"], f"{r['ns_per_op'] / 1000:.1f}",
                     fmt_ratio(r.get("over_ideal"))] for r in chain])
    return lines


def idle_table(records):
    idle = [r for r in records if r.get("workload") == "idle_cpu"]
    if not idle:
        return []
    idle.sort(key=lambda r: SYSTEMS.index(r["system"]) if r["system"] in SYSTEMS else 99)
    window = idle[0].get("window_ms", "?")
    lines = [f"**Idle CPU**: process CPU time over {window} ms after a burst of "
             f"{idle[0].get('burst_ops', '?')} ops, in % of one core:", ""]
    rows = []
    for r in idle:
        cell = f"{r['cpu_percent']:.2f}%"
        if "cpu_percent_paused" in r:
            cell += f" (after starpu_pause: {r['cpu_percent_paused']:.2f}%)"
        rows.append([r["system"], cell])
    return lines + table(["system", "CPU while idle"], rows)


def targets_table(records):
    targets = [r for r in records if r.get("workload") == "targets"]
    if not targets:
        return []
    rows = []
    for t in targets:
        if not t.get("measured"):
            status, value = "not measured", "—"
        else:
            absolute = t["limit_text"].endswith("ns")  # a time, not a ratio
            value = fmt_ns(t["value"]) + " ns" if absolute else fmt_ratio(t["value"])
            at_least = t["limit_text"].lstrip().startswith(">=")
            if t["met"]:
                status = "met"
            elif not t["limit"]:  # a count that must be 0: say how many there are
                status = f"**missed**: {fmt_cell(t['value'])}"
            else:
                factor = (t["limit"] / t["value"] if at_least and t["value"]
                          else t["value"] / t["limit"])
                status = f"**missed** by {factor:.2f}×"
        rows.append([t["target"], t["limit_text"], value, status])
    return ["**Targets** (ratios between systems measured side by side in this run):", ""] + \
        table(["target", "limit", "measured", "status"], rows)


def render_engine(records, meta):
    lines = provenance(meta)
    lines += targets_table(records)
    lines += ["**ns per op** (push_cost: ns per push call on the pushing thread):", ""]
    lines += engine_ns_table(records)
    lines += chain_table(records)
    lines += metg_summary(records)
    for workload, pattern, radix in METG_PATTERNS:
        lines += metg_tables(records, workload, pattern, radix)
    lines += idle_table(records)
    return "\n".join(lines).rstrip() + "\n"


# --- the frontend suite ----------------------------------------------------------------------


def fmt_s(value):
    if value is None:
        return "—"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def render_frontend(records, meta):
    lines = provenance(meta)
    lines += targets_table(records)
    loop = [r for r in records if r.get("workload") == "add_scalar_loop"]
    if loop:
        by_size = {}
        for r in loop:
            by_size.setdefault((r.get("array_size"), r.get("shape")), {})[r["system"]] = r
        rows = []
        for (size, shape), systems in sorted(by_size.items(), key=lambda kv: kv[0][0] or 0):
            sync, asyn, naive = (systems.get(k, {}).get("seconds") for k in ("sync", "async", "naive"))
            speedup = fmt_ratio(sync / asyn) if sync and asyn else "—"
            over_sync = fmt_ratio(asyn / sync) if sync and asyn else "—"
            over_naive = fmt_ratio(asyn / naive) if naive and asyn else "—"
            rows.append([shape or size, f"{size:,}" if size else "—", fmt_s(sync), fmt_s(asyn),
                         fmt_s(naive), speedup, over_sync, over_naive])
        iterations = loop[0].get("iterations", 1000)
        lines += [f"**{iterations} × `y = x + 1`**: a sync after every op (`sync`), one `waitall` at "
                  "the end (`async`), the naive engine (every op inside its call):", ""]
        lines += table(["shape", "elements", "sync", "async", "naive", "speedup sync/async",
                        "async/sync", "async/naive"], rows)
    memory = [r for r in records if r.get("workload") == "memory_loop"]
    if memory:
        rows = [[r["system"], fmt_cell(r.get("max_ops_in_flight")), fmt_cell(r.get("peak_rss_mb")),
                 fmt_s(r.get("seconds"))] for r in memory]
        lines += ["**Memory of a training-like loop** (peak RSS of the loop):", ""]
        lines += table(["system", "max ops in flight", "peak RSS MB", "time"], rows)
    dots = [r for r in records if str(r.get("workload", "")).startswith("dot")]
    if dots:
        rows = [[r["workload"], r["system"], fmt_cell(r.get("n")), fmt_s(r.get("seconds"))]
                for r in dots]
        lines += ["**dot** (2000 × 2000, float32):", ""]
        lines += table(["workload", "system", "n", "time"], rows)
    return "\n".join(lines).rstrip() + "\n"


# --- the overlap suite -----------------------------------------------------------------------


def render_overlap(records, meta):
    lines = provenance(meta)
    lines += targets_table(records)
    runs = [r for r in records if "overlapped_s" in r]
    if runs:
        rows = []
        for r in runs:
            seq, ovl = r.get("sequential_s"), r.get("overlapped_s")
            rows.append([r["workload"], r.get("device", "—"), fmt_s(seq), fmt_s(ovl),
                         fmt_ratio(seq / ovl) if seq and ovl else "—",
                         fmt_ratio(r.get("overlap_efficiency"))])
        lines += ["overlap efficiency = (sum of lane busy − wall) / (sum of lane busy − max lane "
                  "busy), from the profiler's lanes of the overlapped run:", ""]
        lines += table(["workload", "device", "one after another", "overlapped", "speedup",
                        "overlap efficiency"], rows)
    small = [r for r in records if "event_based_s" in r]
    if small:
        rows = [[r.get("device", "—"), str(r.get("ops", "—")), fmt_s(r["event_based_s"]),
                 fmt_s(r["sync_per_op_s"]), fmt_ratio(r.get("speedup"))] for r in small]
        lines += ["", "Small dependent ops on the accelerator (`a += 1; b += a`, 1x16 arrays): "
                  "completed at launch with event fences (the engine's mode) vs a stream "
                  "synchronize per op (`TANDEM_ACCEL_SYNC=1`):", ""]
        lines += table(["device", "ops", "event-based", "synchronize per op", "speedup"], rows)
    return "\n".join(lines).rstrip() + "\n"


# --- the training suite ----------------------------------------------------------------------


TRAINING_SYSTEMS = ["tandem", "tandem_handwritten", "jax_eager", "jax_jit"]


# Seed 003, 8.4's own figures (MXNet on GPUs): seconds per epoch and the test accuracy after
# each of the 4 epochs.
SEED_SCRATCH = {"1 GPU": (1.4, [0.10, 0.60, 0.75, 0.68]), "2 GPUs": (2.5, [0.10, 0.69, 0.74, 0.74])}


def lenet_scratch_table(records):
    runs = [r for r in records
            if r.get("workload") == "lenet_scratch_fashion" and not r.get("skipped")]
    if not runs:
        return []
    rows = [[f"tandem {r['device']}", fmt_cell(r.get("epochs")),
             fmt_cell(r.get("limit")) if r.get("limit") else "all 60,000",
             fmt_s(r.get("seconds_per_epoch")),
             " ".join(f"{a:.2f}" for a in r.get("test_accuracy_per_epoch", []))]
            for r in runs]
    rows += [[f"seed 003 (MXNet, {name})", "4", "all 60,000", f"{seconds} s",
              " ".join(f"{a:.2f}" for a in accuracy)]
             for name, (seconds, accuracy) in SEED_SCRATCH.items()]
    lines = ["**lenet_scratch_fashion**: seed 003's section 8.4, examples/multi_device_scratch: "
             "the seed's LeNet written with plain arrays, data parallel with split_and_load, a "
             "hand-written allreduce and sgd; Fashion-MNIST, batch 256, lr 0.2. Per epoch: the "
             "mean of the epochs after the first. Target: test accuracy >= 0.74 after 4 epochs "
             "on the cpu (the seed's best).", ""]
    lines += table(["run", "epochs", "training images", "per epoch", "test acc per epoch"], rows)
    return lines


def render_training(records, meta):
    lines = provenance(meta)
    lines += targets_table(records)
    steps = [r for r in records if r.get("workload") in ("tiny_mlp_step", "lenet_step")]
    if steps:
        index = by_key(steps)
        header = ["workload", "model", "batch"] + TRAINING_SYSTEMS + [
            "tandem / hand-written", "tandem / jax_eager", "tandem / jax_jit"]
        rows = []
        for workload in ("tiny_mlp_step", "lenet_step"):
            found = {s: index.get((workload, s), {}) for s in TRAINING_SYSTEMS}
            if not any(found.values()):
                continue
            sample = found["tandem"] or next(r for r in found.values() if r)
            model = sample.get("model", "mlp 64-64-10")
            seconds = {s: (None if r.get("skipped") else r.get("seconds_per_step"))
                       for s, r in found.items()}

            def ratio(other):
                a, b = seconds.get("tandem"), seconds.get(other)
                return fmt_ratio(a / b) if a and b else "—"

            rows.append([workload, model, fmt_cell(sample.get("batch_size"))] +
                        [fmt_s(seconds[s]) for s in TRAINING_SYSTEMS] +
                        [ratio("tandem_handwritten"), ratio("jax_eager"), ratio("jax_jit")])
        lines += ["**Seconds per training step** (forward, backward, SGD update; the median of "
                  "the rounds, waiting once per round). A ratio below 1 means tandem is faster.",
                  ""]
        lines += table(header, rows)
    epochs = [r for r in records if r.get("workload") == "lenet_digits" and not r.get("skipped")]
    if epochs:
        rows = [[r["system"], r.get("device", "—"), r.get("model", "—"), fmt_cell(r.get("epochs")),
                 fmt_cell(len(r.get("test_accuracy_per_seed", [])) or 1),
                 fmt_cell(r.get("test_accuracy")), fmt_cell(r.get("test_accuracy_worst")),
                 fmt_s(r.get("seconds_per_epoch")),
                 fmt_s(r.get("first_epoch_seconds")), fmt_cell(r.get("peak_rss_mb"))]
                for r in epochs]
        lines += ["**lenet_digits**: training on the digits (1497 images, batch 64, SGD 0.1 with "
                  "momentum 0.9), then the accuracy on the 300 test images: the mean and the worst "
                  "over the seeds (initial weights and shuffling; one seed moves by about 1%). "
                  "tandem runs train_lenet's default recipe (random 1-pixel shifts, weight decay "
                  "5e-4, a cosine learning rate) on its default model lenet_bn and on the small "
                  "ResNet (--model resnet); the JAX peer trains the lenet_step "
                  "model with plain SGD, so its accuracy is not the same experiment. Seconds per "
                  "epoch "
                  "are the mean of the epochs after the first; peak RSS is the training "
                  "process's (JAX's includes the Python interpreter and XLA).", ""]
        lines += table(["system", "device", "model", "epochs", "seeds", "test accuracy (mean)",
                        "worst seed", "per epoch",
                        "first epoch", "peak RSS MB"], rows)
    lines += lenet_scratch_table(records)
    skipped = [r for r in records if r.get("skipped")]
    for r in skipped:
        lines.append(f"- {r['workload']} / {r['system']}: skipped ({r.get('reason', '?')})")
    if skipped:
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# --- the multi-device suite ------------------------------------------------------------------


def sim_setting_text(record):
    return (f"{fmt_cell(record.get('sim_gflops'))} GFLOP/s, "
            f"{fmt_cell(record.get('sim_memory_gbps'))} GB/s memory, "
            f"{fmt_cell(record.get('sim_bus_gbps'))} GB/s bus, "
            f"{fmt_cell(record.get('sim_compute_streams'))} compute stream(s)")


def render_multi_device(records, meta):
    lines = provenance(meta)
    lines += targets_table(records)
    data = [r for r in records if r.get("workload") in ("data_parallel",
                                                         "data_parallel_no_buckets",
                                                         "data_parallel_exchange_at_step")]
    if data:
        rows = [[fmt_cell(r.get("devices")), r.get("exchange", "—"),
                 fmt_s(r.get("seconds_per_epoch")), fmt_ratio(r.get("speedup_vs_one_device")),
                 fmt_cell(r.get("exchange_hidden")), fmt_cell(r.get("exchange_ms_per_epoch")),
                 fmt_cell(r.get("test_accuracy"))] for r in data]
        sample = data[0]
        lines += [f"**data_parallel** ({sample.get('model', '?')}, global batch "
                  f"{fmt_cell(sample.get('global_batch'))}; sim: {sim_setting_text(sample)}; "
                  f"at most {fmt_cell(sample.get('max_ops_in_flight'))} ops in flight):", ""]
        lines += table(["devices", "exchange", "s/epoch", "vs 1 device", "exchange hidden",
                        "exchange ms/epoch", "test accuracy"], rows)
    sweep = [r for r in records if r.get("workload") == "pipeline"]
    if sweep:
        one = next((r["seconds"] for r in sweep if r.get("devices") == 1), None)
        rows = [[fmt_cell(r.get("devices")), fmt_cell(r.get("split_size", "—")),
                 fmt_s(r.get("seconds")),
                 fmt_ratio(one / r["seconds"]) if one and r.get("seconds") else "—"]
                for r in sweep]
        sample = sweep[0]
        lines += [f"**pipeline** (seconds per step of a {fmt_cell(sample.get('layers'))}-layer, "
                  f"{fmt_cell(sample.get('width'))}-wide MLP at batch "
                  f"{fmt_cell(sample.get('batch'))}, split in two stages; sim: "
                  f"{sim_setting_text(sample)}):", ""]
        lines += table(["devices", "split size", "s/step", "vs 1 device"], rows)
    model = [r for r in records if r.get("workload") == "model_parallel"]
    if model:
        rows = [[fmt_cell(r.get("devices")), fmt_s(r.get("seconds"))] for r in model]
        lines += ["**model_parallel** (the same network, its two halves on two devices, no "
                  "micro-batches):", ""]
        lines += table(["devices", "s/step"], rows)
    return "\n".join(lines).rstrip() + "\n"


# --- profiler off-cost (bench/profiler_off_cost.sh) -------------------------------------------


def render_profiler_off(records, meta):
    lines = provenance(meta)
    rows = []
    for r in records:
        hooked, bare = r["hooks_compiled_in"], r["hooks_compiled_out"]
        if r["measure"] == "instructions_per_op_hooked_functions":
            share = r["added_share_of_op"]
            rows.append([r["workload"], "instructions/op in the functions holding the hooks",
                         f"{hooked:.1f}", f"{bare:.1f}",
                         f"+{hooked - bare:.1f} instructions = {100 * share:.1f}% of the op"])
        elif r["measure"] == "instructions_per_op_all_engine_functions":
            rows.append([r["workload"], "instructions/op in all engine functions (± 25 run to run)",
                         f"{hooked:.1f}", f"{bare:.1f}", fmt_ratio(r.get("ratio"))])
        else:
            rows.append([r["workload"], f"ns/op, median of {r.get('runs', '?')} runs",
                         fmt_ns(hooked), fmt_ns(bare), fmt_ratio(r.get("ratio"))])
    lines += table(["workload", "measure", "hooks compiled in (profiler off)", "hooks compiled out",
                    "in vs out"], rows)
    return "\n".join(lines).rstrip() + "\n"


# --- any other suite -------------------------------------------------------------------------


def render_generic(records, meta):
    """A workload x system table of ns_per_op when the records have one, else every field."""
    lines = provenance(meta)
    if not isinstance(records, list) or not records:
        return "\n".join(lines + ["*No records.*"]) + "\n"
    if all("workload" in r and "system" in r and "ns_per_op" in r for r in records):
        index = by_key(records)
        systems = present_systems(records)
        workloads = list(dict.fromkeys(r["workload"] for r in records))
        rows = [[w] + [fmt_ns(index.get((w, s), {}).get("ns_per_op")) for s in systems]
                for w in workloads]
        return "\n".join(lines + table(["workload (ns/op)"] + systems, rows)).rstrip() + "\n"
    keys = list(dict.fromkeys(k for r in records for k, v in r.items()
                              if not isinstance(v, (list, dict))))
    rows = [[fmt_cell(r.get(k)) for k in keys] for r in records]
    return "\n".join(lines + table(keys, rows)).rstrip() + "\n"


def render_soak(records, meta):
    """bench/soak/soak.cc's report: one run's fit and a few of its samples."""
    lines = provenance(meta)
    if not isinstance(records, dict) or "samples" not in records:
        return "\n".join(lines + ["*No records.*"]) + "\n"
    r = records
    mib = 1024.0 * 1024.0
    lines += table(
        ["ops", "rounds", "seconds", "vars alive (2nd half)", "RSS slope (KiB / 10^6 ops)",
         "RSS growth, 2nd half (MiB)", "throughput last / 2nd window", "injected errors reported",
         "other errors"],
        [[fmt_cell(r["ops"]), fmt_cell(r["rounds"]), f"{r['seconds']:.0f}",
          f"{r['vars_alive_min']}..{r['vars_alive_max']}",
          f"{r['rss_slope_bytes_per_million_ops'] / 1024.0:.1f}",
          f"{r['rss_growth_second_half_bytes'] / mib:.2f}",
          f"{r['throughput_last_over_second_window']:.2f}",
          fmt_cell(r["injected_failures_reported"]), fmt_cell(r["other_failures"])]])
    samples = r["samples"]
    step = max(1, len(samples) // 10)
    picked = samples[::step]
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    lines += [""] + table(
        ["ops", "seconds", "vars alive", "RSS (MiB)", "ops/s in the window"],
        [[fmt_cell(x["ops"]), f"{x['seconds']:.0f}", fmt_cell(x["vars_alive"]),
          f"{x['rss_bytes'] / mib:.1f}", f"{x['ops_per_second']:.0f}"] for x in picked])
    return "\n".join(lines).rstrip() + "\n"


def fmt_cell(value):
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# --- the doc ---------------------------------------------------------------------------------


def replace_section(doc, suite, body):
    begin, end = f"<!-- BEGIN {suite} -->", f"<!-- END {suite} -->"
    block = f"{begin}\n{body}{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(doc):
        return pattern.sub(lambda _: block, doc, count=1)
    return doc.rstrip() + f"\n\n## {suite}\n\n{block}\n"


# --- the graph suite -------------------------------------------------------------------------


GRAPH_SYSTEMS = ["eager", "hybridized", "hybridized_copied", "plain_loops", "jax_jit",
                 "jax_eager"]


def render_graph(records, meta):
    lines = provenance(meta)
    lines += targets_table(records)
    index = by_key([r for r in records if r.get("workload") == "hybridize_mlp"])
    found = {name: index.get(("hybridize_mlp", name)) for name in GRAPH_SYSTEMS}
    if any(found.values()):
        sample = next(r for r in found.values() if r)
        seconds = {name: (r or {}).get("seconds") for name, r in found.items()}

        def ratio(a, b):
            return fmt_ratio(seconds[a] / seconds[b]) if seconds[a] and seconds[b] else "—"

        lines += ["**hybridize_mlp** (d2l 8.1): forward calls of a small MLP, eager vs "
                  "`net.hybridize()` (recorded once, replayed), the same with each output copied "
                  "(`net(x).copy()`: keeping every result), the floor: the same layers as "
                  "plain C++ loops over OpenBLAS on one thread, and the peer: the same network in "
                  "JAX on the CPU under `jax.jit` and eager (bench/graph/jax_peer.py, in the "
                  "suite's private venv); waiting once at the end, the best of interleaved "
                  "rounds. A skipped peer shows —.", ""]
        lines += table(["model", "calls"] + GRAPH_SYSTEMS +
                       ["eager / hybridized", "hybridized / plain loops", "hybridized / jax_jit"],
                       [[sample.get("model", "—"), fmt_cell(sample.get("calls"))] +
                        [fmt_s(seconds[name]) for name in GRAPH_SYSTEMS] +
                        [ratio("eager", "hybridized"), ratio("hybridized", "plain_loops"),
                         ratio("hybridized", "jax_jit")]])
    train = by_key([r for r in records if r.get("workload") == "hybridize_mlp_train"])
    eager_train = train.get(("hybridize_mlp_train", "eager"))
    hybrid_train = train.get(("hybridize_mlp_train", "hybridized"))
    if eager_train or hybrid_train:
        sample = eager_train or hybrid_train
        eager_s = (eager_train or {}).get("seconds")
        hybrid_s = (hybrid_train or {}).get("seconds")
        lines += ["**hybridize_mlp_train**: training steps (forward under "
                  "`autograd::record()`, backward, SGD step) of the same MLP, eager vs "
                  "hybridized (the forward and the backward recorded once, replayed); waiting "
                  "once at the end, the best of interleaved rounds.", ""]
        lines += table(["model", "device", "steps", "eager", "hybridized", "eager / hybridized"],
                       [[sample.get("model", "—"), sample.get("device", "—"),
                         fmt_cell(sample.get("steps")), fmt_s(eager_s), fmt_s(hybrid_s),
                         fmt_ratio(eager_s / hybrid_s) if eager_s and hybrid_s else "—"]])
    lines += render_device_graphs(records)
    lines += render_train_step_sim(records)
    return "\n".join(lines).rstrip() + "\n"


DEVICE_GRAPH_SYSTEMS = ["push", "replay", "replay_device_graph"]


def render_device_graphs(records):
    index = by_key([r for r in records if r.get("workload") == "replay_sim_tiny_ops"])
    found = {name: index.get(("replay_sim_tiny_ops", name)) for name in DEVICE_GRAPH_SYSTEMS}
    if not any(found.values()):
        return []
    sample = next(r for r in found.values() if r)
    lines = ["**replay_sim_tiny_ops**: a chain of tiny ops on sim(0) (each one empty stream "
             "item: its modelled time is the launch latency), pushed one by one, replayed from a "
             "capture without device graphs (`TANDEM_DEVICE_GRAPHS=0`), and replayed as one "
             "device graph (one launch latency per replay); per round of the chain, medians.", ""]
    rows = []
    for name in DEVICE_GRAPH_SYSTEMS:
        r = found[name] or {}
        rows.append([name, fmt_cell(sample.get("ops")), fmt_cell(sample.get("latency_us")),
                     fmt_cell(r.get("modelled_us")),
                     fmt_cell(r["seconds"] * 1e6) if r.get("seconds") else "—"])
    lines += table(["system", "ops", "latency (us)", "modelled (us)", "wall (us)"], rows)
    return lines


def render_train_step_sim(records):
    index = by_key([r for r in records if r.get("workload") == "train_step_sim"])
    found = {name: index.get(("train_step_sim", name)) for name in ["eager", "training_step"]}
    if not any(found.values()):
        return []
    sample = next(r for r in found.values() if r)
    lines = ["", "**train_step_sim**: one SGD step of " + sample.get("model", "lenet_bn") +
             " on sim(0), eager and as a replayed `nn::TrainingStep` (its window fails as one "
             "unit: one device graph), per step: the sim's modelled device time and launches "
             "(the proxy for a GPU; the wall time is mostly the CPU bodies of the sim's "
             "kernels), medians of the rounds.", ""]
    rows = []
    for name in ["eager", "training_step"]:
        r = found[name] or {}
        rows.append([name, fmt_cell(sample.get("latency_us")), fmt_cell(r.get("modelled_us")),
                     fmt_cell(r.get("launches")),
                     fmt_cell(r["seconds"] * 1e6) if r.get("seconds") else "—"])
    lines += table(["system", "latency (us)", "modelled (us)", "launches", "wall (us)"], rows)
    return lines


# --- the gpu suite ---------------------------------------------------------------------------


# The PyTorch eager workload a hybridized tandem workload is compared with.
GPU_EAGER_PEER_OF = {"lenet_bn_epoch_hybridized": "lenet_bn_epoch",
                     "lenet_bn_epoch_hybridized_one_unit": "lenet_bn_epoch",
                     "lenet_bn_epoch_whole_step": "lenet_bn_epoch",
                     "mlp_step_hybridized": "mlp_step_eager",
                     "mlp_step_hybridized_one_unit": "mlp_step_eager",
                     "mlp_step_whole": "mlp_step_eager"}


def render_gpu(records, meta):
    """tandem vs PyTorch on one GPU (bench/gpu): one row per workload, the speed ratio."""
    lines = provenance(meta)
    measured = [r for r in records if not r.get("skipped") and "value" in r]
    skipped = [r for r in records if r.get("skipped")]
    devices = sorted({r["device"] for r in measured if r.get("device")})
    if devices:
        lines += [f"Device: {', '.join(devices)}.", ""]
    for r in skipped:
        lines += [f"*{r.get('system', 'a peer')} skipped: {r.get('reason', 'no reason given')}.*",
                  ""]
    if not measured:
        return "\n".join(lines + ["*No GPU records: `bench/run.sh gpu` skips without a CUDA "
                                   "device; run it through scripts/gpu-check.sh on a GPU "
                                   "machine.*"]) + "\n"
    lines += ["Each value is the median of 3 rounds in one run, tandem and PyTorch (eager, "
              "float32, TF32 off) on the same GPU one after the other. *speed vs PyTorch*: "
              "tandem's rate / PyTorch's, or PyTorch's time / tandem's; above 1 tandem is "
              "faster; a `_hybridized` row is set against PyTorch eager's row of the same work. "
              "*slowest round*: tandem's slowest of the 3 rounds against PyTorch's median. "
              "`tandem_cpu`: the same epoch on tandem's cpu.", ""]
    index = by_key(measured)
    workloads = list(dict.fromkeys(r["workload"] for r in measured))
    rows = []
    for workload in workloads:
        ours = index.get((workload, "tandem"))
        # A hybridized workload is set against PyTorch eager's same work (the target).
        peer = index.get((workload, "pytorch")) or index.get(
            (GPU_EAGER_PEER_OF.get(workload, ""), "pytorch"))
        on_cpu = index.get((workload, "tandem_cpu"))
        jax = index.get((workload, "jax_jit"))
        sample = ours or peer or on_cpu or jax
        higher = sample.get("higher_is_better")

        def speed(value):
            if not (ours and peer and value and peer["value"]):
                return "—"
            return fmt_ratio(value / peer["value"] if higher else peer["value"] / value)

        # tandem's slowest round against PyTorch's median: a target met "in every call".
        rounds = (ours or {}).get("round_values") or []
        slowest = (min(rounds) if higher else max(rounds)) if rounds else None
        rows.append([workload, sample.get("detail", "—"), sample.get("unit", "—"),
                     fmt_cell((ours or {}).get("value")), fmt_cell((peer or {}).get("value")),
                     speed((ours or {}).get("value")), speed(slowest),
                     fmt_cell((on_cpu or {}).get("value")), fmt_cell((jax or {}).get("value"))])
    lines += table(["workload", "what", "unit", "tandem", "PyTorch", "speed vs PyTorch",
                    "slowest round vs PyTorch", "tandem_cpu", "JAX jit"], rows)
    return "\n".join(lines).rstrip() + "\n"


def load_suites():
    suites = {}
    for path in sorted(RESULTS.glob("*.json")):
        if path.name.endswith(".meta.json"):
            continue
        suite = path.stem
        try:
            records = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            sys.exit(f"report.py: {path} is not valid JSON ({error}); rerun the suite")
        meta_path = RESULTS / f"{suite}.meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
        suites[suite] = (records, meta)
    return suites


RENDERERS = {
    "engine": render_engine,
    "frontend": render_frontend,
    "overlap": render_overlap,
    "profiler_off": render_profiler_off,
    "training": render_training,
    "multi_device": render_multi_device,
    "graph": render_graph,
    "gpu": render_gpu,
    "soak": render_soak,
}


def regenerate():
    doc = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    for suite, (records, meta) in load_suites().items():
        render = RENDERERS.get(suite, render_generic)
        doc = replace_section(doc, suite, render(records, meta))
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(doc)
    print(f"report.py: wrote {DOC.relative_to(REPO)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record-run", metavar="SUITE",
                        help="write bench/results/SUITE.meta.json for a run that just finished")
    parser.add_argument("--command", help="the command that ran the suite (with --record-run)")
    parser.add_argument("--seconds", type=int, default=0,
                        help="how long it took (with --record-run)")
    parser.add_argument("--note", help="anything special about the run (with --record-run)")
    args = parser.parse_args()
    if args.record_run:
        record_run(args.record_run, args.command or f"bench/run.sh {args.record_run}", args.seconds,
                   args.note)
    else:
        regenerate()


if __name__ == "__main__":
    main()
