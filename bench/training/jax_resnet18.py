#!/usr/bin/env python3
"""The JAX peer of bench_resnet18, and the ResNet-18 targets of issue 25.

    jax_resnet18.py --results bench/results/resnet18.json [--quick]
    jax_resnet18.py --results bench/results/resnet18.json --skip "why JAX could not run"

Builds d2l's ResNet-18 for 28x28 images as bench_resnet18 does (3x3 stem of 64 channels with
bias, BatchNorm and relu; four stages of two residual blocks, 64-512 channels, 3x3
convolutions with bias, a 1x1 projection in the first block of stages 2-4; global average
pooling; Dense(10)), Normal(0.01) weights, BatchNorm with the batch's statistics, summed softmax
cross entropy and SGD with lr 0.1 / batch, NCHW. Times one training step on the CPU at the
batch tandem used (read from the results file), eagerly (`jax_eager`: op-by-op dispatch, what
a Python loop without jit gets) and under `jax.jit`, as the median of single steps each waited
for. Adds its records (replacing earlier JAX records) and the targets, computed from the file.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

LR = 0.1
STAGES = ((64, 2, True), (128, 2, False), (256, 2, False), (512, 2, False))


def jax_records(args, batch, steps):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_platforms", "cpu")

    def normal(key, shape):
        return 0.01 * jax.random.normal(key, shape, jnp.float32)

    def conv_params(key, out_c, in_c, k):
        return {"w": normal(key, (out_c, in_c, k, k)), "b": jnp.zeros((out_c,), jnp.float32)}

    def bn_params(c):
        return {"gamma": jnp.ones((c,), jnp.float32), "beta": jnp.zeros((c,), jnp.float32)}

    def init(key):
        keys = iter(jax.random.split(key, 64))
        params = {"stem": conv_params(next(keys), 64, 1, 3), "stem_bn": bn_params(64),
                  "blocks": []}
        in_c = 64
        for channels, residuals, first in STAGES:
            for i in range(residuals):
                project = i == 0 and not first
                block = {"conv1": conv_params(next(keys), channels, in_c, 3),
                         "conv2": conv_params(next(keys), channels, channels, 3),
                         "bn1": bn_params(channels), "bn2": bn_params(channels)}
                if project:
                    block["conv3"] = conv_params(next(keys), channels, in_c, 1)
                params["blocks"].append(block)
                in_c = channels
        params["dense"] = {"w": normal(next(keys), (10, 512)), "b": jnp.zeros((10,), jnp.float32)}
        return params

    def conv(x, p, stride, padding):
        y = jax.lax.conv_general_dilated(x, p["w"], (stride, stride),
                                         ((padding, padding), (padding, padding)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + p["b"][None, :, None, None]

    def batch_norm(x, p, eps=1e-5):
        mean = jnp.mean(x, axis=(0, 2, 3), keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=(0, 2, 3), keepdims=True)
        return ((x - mean) / jnp.sqrt(var + eps)) * p["gamma"][None, :, None, None] + \
            p["beta"][None, :, None, None]

    def forward(params, x):
        x = jax.nn.relu(batch_norm(conv(x, params["stem"], 1, 1), params["stem_bn"]))
        for block in params["blocks"]:
            stride = 2 if "conv3" in block else 1
            y = jax.nn.relu(batch_norm(conv(x, block["conv1"], stride, 1), block["bn1"]))
            y = batch_norm(conv(y, block["conv2"], 1, 1), block["bn2"])
            shortcut = conv(x, block["conv3"], stride, 0) if "conv3" in block else x
            x = jax.nn.relu(y + shortcut)
        x = jnp.mean(x, axis=(2, 3))
        return x @ params["dense"]["w"].T + params["dense"]["b"]

    def loss_fn(params, x, y):
        logits = forward(params, x)
        return -jnp.sum(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    grad_fn = jax.grad(loss_fn)

    def sgd_step(params, x, y):
        grads = grad_fn(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - (LR / batch) * g, params, grads)

    jit_step = jax.jit(sgd_step)

    key = jax.random.PRNGKey(1)
    x = jax.random.uniform(key, (batch, 1, 28, 28), jnp.float32)
    y = jnp.arange(batch, dtype=jnp.int32) % 10

    def time_steps(step):
        params = init(jax.random.PRNGKey(2))
        params = step(params, x, y)  # compile (jit) and first allocations
        jax.block_until_ready(params)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            params = step(params, x, y)
            jax.block_until_ready(params)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    common = {"workload": "resnet18_step", "device": "cpu(0)", "batch_size": batch,
              "steps": steps, "jax_version": jax.__version__}
    records = []
    for system, step in (("jax_jit", jit_step), ("jax_eager", sgd_step)):
        seconds = time_steps(step)
        records.append({"system": system, "seconds_per_step": seconds, **common})
        print(f"jax_resnet18: {system} batch {batch}: {seconds:.3f} s per step")
    return records


def target(name, limit_text, value, limit, at_least=False):
    met = value is not None and (value >= limit if at_least else value <= limit)
    return {"workload": "targets", "system": "tandem", "target": name, "limit_text": limit_text,
            "value": value if value is not None else 0.0, "limit": limit, "met": met,
            "measured": value is not None}


def targets(records):
    def step(system):
        r = next((r for r in records if r.get("workload") == "resnet18_step" and
                  r.get("system") == system and not r.get("skipped")), None)
        return r.get("seconds_per_step") if r else None

    def ratio(a, b):
        return a / b if a and b else None

    def parallel(devices):
        return next((r for r in records if r.get("workload") == "resnet18_data_parallel" and
                     r.get("devices") == devices), None)

    one = parallel(1)
    result = [
        target("resnet18_step (cpu): tandem / jax_eager", "<= 1.0",
               ratio(step("tandem"), step("jax_eager")), 1.0),
        target("resnet18_step (cpu): tandem / jax_jit", "<= 1.5",
               ratio(step("tandem"), step("jax_jit")), 1.5),
    ]
    for devices, limit in ((2, 1.85), (4, 3.4)):
        r = parallel(devices)
        speedup = one["seconds_per_step"] / r["seconds_per_step"] if one and r else None
        result.append(target(f"resnet18_data_parallel: {devices} sim devices / 1, speed-up",
                             f">= {limit}", speedup, limit, at_least=True))
        result.append(target(f"resnet18_data_parallel: {devices} sim devices, exchange hidden",
                             ">= 0.8", r.get("exchange_hidden") if r else None, 0.8,
                             at_least=True))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", help="record the JAX peer as skipped, with this reason")
    args = parser.parse_args()
    path = Path(args.results)
    existing = json.loads(path.read_text()) if path.exists() else []
    existing = [r for r in existing if not str(r.get("system", "")).startswith("jax")
                and r.get("workload") != "targets"]
    tandem_step = next((r for r in existing if r.get("workload") == "resnet18_step"), {})
    batch = tandem_step.get("batch_size", 16)
    steps = tandem_step.get("steps", 3 if args.quick else 5)
    reason = args.skip
    peer = []
    if reason is None:
        try:
            peer = jax_records(args, batch, steps)
        except ImportError as error:
            reason = f"jax is not importable ({error})"
        except Exception as error:  # a failed peer must not lose tandem's records
            reason = f"the JAX peer failed: {type(error).__name__}: {error}"
    if reason is not None:
        print(f"jax_resnet18: skipped: {reason}", file=sys.stderr)
        peer = [{"workload": "resnet18_step", "system": s, "skipped": True, "reason": reason}
                for s in ("jax_eager", "jax_jit")]
    records = existing + peer
    new_targets = targets(records)
    records += new_targets
    path.write_text(json.dumps(records, indent=2) + "\n")
    for t in new_targets:
        status = "not measured" if not t["measured"] else ("met" if t["met"] else "MISSED")
        print(f"jax_resnet18: target {t['target']} {t['limit_text']}: {t['value']:.3f} {status}")


if __name__ == "__main__":
    main()
