#!/usr/bin/env python3
"""The LeNet-from-scratch workload of the training suite: seed 003, 8.4, on Fashion-MNIST.

Runs examples/multi_device_scratch (4 epochs, batch 256, lr 0.2, the seed's recipe) on cpu,
sim(0) and sim(0)+sim(1), parses its lines "epoch N, time T sec, test acc A" and appends one
record per device list to the training suite's results file:

  {"workload": "lenet_scratch_fashion", "system": "tandem", "device": "sim0,sim1",
   "epochs": 4, "batch_size": 256, "lr": 0.2, "limit": null, "seconds_per_epoch": ...,
   "epoch_seconds": [...], "test_accuracy": ..., "test_accuracy_per_epoch": [...]}

seconds_per_epoch is the mean of the epochs after the first (the first pays for allocation
and warm-up). Without Fashion-MNIST (Debian's dataset-fashion-mnist) one record says it was
skipped. --limit N trains on the first N images (for a machine where the full run does not fit);
--quick is --limit 4096 with 2 epochs.

  bench/training/lenet_scratch.py --binary PATH --results bench/results/training.json
      [--data DIR] [--limit N] [--epochs N] [--devices cpu sim0 sim0,sim1] [--quick]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

LINE = re.compile(r"^epoch (\d+), time ([0-9.]+) sec, test acc ([0-9.]+)$")
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def run(binary, devices, epochs, limit, data):
    command = [binary, "--devices", devices, "--epochs", str(epochs), "--batch-size", "256",
               "--lr", "0.2", "--data", data]
    if limit:
        command += ["--limit", str(limit)]
    print("lenet_scratch:", " ".join(command), flush=True)
    started = time.time()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    print(out, end="", flush=True)
    seconds, accuracy = [], []
    for line in out.splitlines():
        match = LINE.match(line.strip())
        if match:
            seconds.append(float(match.group(2)))
            accuracy.append(float(match.group(3)))
    if len(seconds) != epochs:
        raise RuntimeError(f"{binary} printed {len(seconds)} epoch lines, expected {epochs}")
    later = seconds[1:] or seconds
    env = {k: os.environ[k] for k in ("TANDEM_SIM_DEVICES", "TANDEM_SIM_GFLOPS",
                                       "TANDEM_CPU_WORKERS") if k in os.environ}
    return {"workload": "lenet_scratch_fashion", "system": "tandem", "device": devices,
            "model": "seed 003 LeNet (relu, avg pool)", "epochs": epochs, "batch_size": 256,
            "lr": 0.2, "limit": limit or None, "seconds_per_epoch": sum(later) / len(later),
            "epoch_seconds": seconds, "test_accuracy": accuracy[-1],
            "test_accuracy_per_epoch": accuracy, "wall_seconds": time.time() - started,
            "environment": env}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--devices", nargs="+", default=["cpu", "sim0", "sim0,sim1"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.limit = args.limit or 4096
        args.epochs = min(args.epochs, 2)
    with open(args.results) as f:
        records = [r for r in json.load(f) if r.get("workload") != "lenet_scratch_fashion"]
    names = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte"]
    present = all(os.path.exists(os.path.join(args.data, n)) or
                  os.path.exists(os.path.join(args.data, n + ".gz")) for n in names)
    if not present:
        records.append({"workload": "lenet_scratch_fashion", "system": "tandem", "skipped": True,
                        "reason": f"no Fashion-MNIST in {args.data} (bash scripts/setup.sh "
                                  "--bench installs dataset-fashion-mnist)"})
    else:
        for devices in args.devices:
            records.append(run(args.binary, devices, args.epochs, args.limit, args.data))
    with open(args.results, "w") as f:
        f.write(json.dumps(records, indent=2) + "\n")  # the suite's format (jax_peer.py)
    return 0


if __name__ == "__main__":
    sys.exit(main())
