#!/usr/bin/env python3
"""The JAX peer of the training suite, and the suite's targets.

    jax_peer.py --results bench/results/training.json --digits data/digits [--quick]
    jax_peer.py --results bench/results/training.json --skip "why JAX could not run"

Runs, on the CPU, the networks bench_training ran with tandem: the tiny MLP's step (64-64-10,
batch 16), the lenet_step model's step at batch 256, and lenet_digits' training (jax_jit only),
in eager mode (`jax_eager`: op-by-op asynchronous dispatch, what a Python loop without jit
gets) and under `jax.jit`. Adds its records to the results file (replacing earlier JAX
records), then the targets of issue 13 computed from the file's records. With --skip, or when
jax cannot be imported, the JAX records say skipped and why.
"""

import argparse
import gzip
import json
import resource
import statistics
import struct
import sys
import time
from pathlib import Path

TINY = {"batch": 16, "hidden": 64}
LR = 0.1


def read_idx(path):
    data = Path(path).read_bytes()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    import numpy as np
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_digits(directory):
    import numpy as np
    d = Path(directory)
    train_x = read_idx(str(d / "train-images-idx3-ubyte")).astype(np.float32) / 16.0
    train_y = read_idx(str(d / "train-labels-idx1-ubyte")).astype(np.int32)
    test_x = read_idx(str(d / "test-images-idx3-ubyte")).astype(np.float32) / 16.0
    test_y = read_idx(str(d / "test-labels-idx1-ubyte")).astype(np.int32)
    return (train_x.reshape(len(train_x), -1), train_y, test_x.reshape(len(test_x), -1), test_y)


def jax_records(args):
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_platforms", "cpu")
    train_x, train_y, test_x, test_y = load_digits(args.digits)
    version = jax.__version__

    def xavier(key, shape):
        receptive = 1
        for d in shape[2:]:
            receptive *= d
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        scale = (3.0 / ((fan_in + fan_out) / 2)) ** 0.5
        return jax.random.uniform(key, shape, jnp.float32, -scale, scale)

    def init_mlp(key, sizes):
        params = []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            key, sub = jax.random.split(key)
            params.append((xavier(sub, (fan_out, fan_in)), jnp.zeros((fan_out,), jnp.float32)))
        return params

    def mlp_forward(params, x):
        x = x.reshape(x.shape[0], -1)
        for i, (w, b) in enumerate(params):
            x = x @ w.T + b
            if i + 1 < len(params):
                x = jax.nn.relu(x)
        return x

    # examples/train_lenet/models.h's make_lenet: Conv2D(6, 3x3, padding 1) relu, MaxPool2D(2),
    # Conv2D(16, 3x3) relu, MaxPool2D(2), Flatten, Dense(10); NCHW, weights OIHW.
    def init_lenet(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return [(xavier(k1, (6, 1, 3, 3)), jnp.zeros((6,), jnp.float32)),
                (xavier(k2, (16, 6, 3, 3)), jnp.zeros((16,), jnp.float32)),
                (xavier(k3, (10, 16)), jnp.zeros((10,), jnp.float32))]

    def conv_relu_pool(x, w, b, padding):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), padding,
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        y = jax.nn.relu(y + b[None, :, None, None])
        return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                                     "VALID")

    def lenet_forward(params, x):
        x = x.reshape(x.shape[0], 1, 8, 8)
        (w1, b1), (w2, b2), (w3, b3) = params
        x = conv_relu_pool(x, w1, b1, ((1, 1), (1, 1)))
        x = conv_relu_pool(x, w2, b2, ((0, 0), (0, 0)))
        return x.reshape(x.shape[0], -1) @ w3.T + b3

    models = {"mlp": (lambda key: init_mlp(key, [64, 64, 10]), mlp_forward),
              "lenet": (init_lenet, lenet_forward)}
    current = {"forward": mlp_forward}

    def forward(params, x):
        return current["forward"](params, x)

    def loss_fn(params, x, y):
        logits = forward(params, x)
        return -jnp.sum(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    grad_fn = jax.grad(loss_fn)

    def sgd_step(params, x, y, batch):
        grads = grad_fn(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - (LR / batch) * g, params, grads)

    def momentum_step(state, x, y, batch):
        params, moms = state
        grads = grad_fn(params, x, y)
        moms = jax.tree_util.tree_map(lambda m, g: 0.9 * m - (LR / batch) * g, moms, grads)
        params = jax.tree_util.tree_map(lambda p, m: p + m, params, moms)
        return params, moms

    jit_sgd = jax.jit(sgd_step, static_argnums=3)

    def time_steps(step, params, batches, steps, rounds):
        for i in range(10):
            params = step(params, *batches[i % len(batches)])
        jax.block_until_ready(params)
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            for i in range(steps):
                params = step(params, *batches[i % len(batches)])
            jax.block_until_ready(params)
            times.append((time.perf_counter() - start) / steps)
        return statistics.median(times)

    records = []
    common = {"device": "cpu(0)", "jax_version": version}

    # tiny_mlp_step
    b = TINY["batch"]
    batches = [(jnp.asarray(train_x[i:i + b]), jnp.asarray(train_y[i:i + b]))
               for i in range(0, len(train_x) - b + 1, b)]
    params = init_mlp(jax.random.PRNGKey(1), [64, TINY["hidden"], 10])
    current["forward"] = mlp_forward
    steps = 100 if args.quick else 300
    rounds = 3
    eager = time_steps(lambda p, x, y: sgd_step(p, x, y, b), params, batches, steps, rounds)
    jitted = time_steps(lambda p, x, y: jit_sgd(p, x, y, b), params, batches, steps * 20, rounds)
    for system, seconds in (("jax_eager", eager), ("jax_jit", jitted)):
        records.append({"workload": "tiny_mlp_step", "system": system, "seconds_per_step": seconds,
                        "batch_size": b, "hidden": TINY["hidden"], **common})
    print(f"jax_peer: tiny_mlp_step eager {eager * 1e6:.1f} us, jit {jitted * 1e6:.1f} us")

    # lenet_step and lenet_digits on the model tandem ran
    model = next((r.get("model") for r in args.existing if r.get("workload") == "lenet_step"),
                 "mlp")
    if model not in models:
        reason = f"the JAX peer has no '{model}' model (it has: {', '.join(models)})"
        for workload in ("lenet_step", "lenet_digits"):
            for system in ("jax_eager", "jax_jit"):
                records.append({"workload": workload, "system": system, "model": model,
                                "skipped": True, "reason": reason, **common})
        return records
    init, current["forward"] = models[model]
    # Fresh jit caches: the step functions trace the current model.
    jit_sgd = jax.jit(sgd_step, static_argnums=3)
    b = 256
    big = [(jnp.asarray(train_x[:b]), jnp.asarray(train_y[:b]))]
    params = init(jax.random.PRNGKey(1))
    steps = 30 if args.quick else 100
    eager = time_steps(lambda p, x, y: sgd_step(p, x, y, b), params, big, steps, 3)
    jitted = time_steps(lambda p, x, y: jit_sgd(p, x, y, b), params, big, steps * 20, 3)
    for system, seconds in (("jax_eager", eager), ("jax_jit", jitted)):
        records.append({"workload": "lenet_step", "system": system, "model": model,
                        "batch_size": b, "seconds_per_step": seconds, **common})
    print(f"jax_peer: lenet_step ({model}, batch {b}) eager {eager * 1e6:.1f} us, "
          f"jit {jitted * 1e6:.1f} us")

    epochs = next((r.get("epochs") for r in args.existing if r.get("workload") == "lenet_digits"),
                  10)
    b = 64
    jit_momentum = jax.jit(momentum_step, static_argnums=3)
    params = init(jax.random.PRNGKey(1))
    state = (params, jax.tree_util.tree_map(jnp.zeros_like, params))
    rng = np.random.default_rng(1)
    epoch_times = []
    for _ in range(epochs):
        start = time.perf_counter()
        order = rng.permutation(len(train_x))
        for i in range(0, len(order), b):
            idx = order[i:i + b]
            state = jit_momentum(state, jnp.asarray(train_x[idx]), jnp.asarray(train_y[idx]),
                                 len(idx))
        jax.block_until_ready(state)
        epoch_times.append(time.perf_counter() - start)
    logits = forward(state[0], jnp.asarray(test_x))
    accuracy = float(jnp.mean(jnp.argmax(logits, axis=1) == jnp.asarray(test_y)))
    per_epoch = statistics.mean(epoch_times[1:]) if len(epoch_times) > 1 else epoch_times[0]
    records.append({"workload": "lenet_digits", "system": "jax_jit", "model": model,
                    "test_accuracy": accuracy, "seconds_per_epoch": per_epoch,
                    "first_epoch_seconds": epoch_times[0],
                    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                    "epochs": epochs, "batch_size": b, **common})
    print(f"jax_peer: lenet_digits ({model}, jit) test accuracy {accuracy:.4f}, "
          f"{per_epoch:.3f} s/epoch")
    return records


def target(name, limit_text, value, limit, measured=True, at_least=False):
    met = measured and value is not None and (value >= limit if at_least else value <= limit)
    return {"workload": "targets", "system": "tandem", "target": name, "limit_text": limit_text,
            "value": value if value is not None else 0.0, "limit": limit, "met": met,
            "measured": measured and value is not None}


def targets(records):
    def seconds(workload, system):
        r = next((r for r in records if r.get("workload") == workload and
                  r.get("system") == system and not r.get("skipped")), None)
        return r.get("seconds_per_step") if r else None

    def ratio(workload, a, b):
        x, y = seconds(workload, a), seconds(workload, b)
        return x / y if x and y else None

    model = next((r.get("model") for r in records if r.get("workload") == "lenet_step"), "lenet")
    # The accuracy target on tandem's lenet_digits rows (cpu), judged on the worst seed.
    accuracy = [target(f"lenet_digits ({r['model']}, {len(r.get('test_accuracy_per_seed', []))} "
                       "seeds): worst test accuracy", ">= 0.97",
                       r.get("test_accuracy_worst", r.get("test_accuracy")), 0.97, at_least=True)
                for r in records if r.get("workload") == "lenet_digits" and
                r.get("system") == "tandem" and r.get("device") == "cpu(0)"]
    return accuracy + [
        target("tiny_mlp_step: tandem (autograd) / tandem_handwritten", "<= 1.3",
               ratio("tiny_mlp_step", "tandem", "tandem_handwritten"), 1.3),
        target("tiny_mlp_step: tandem / jax_eager", "<= 0.5",
               ratio("tiny_mlp_step", "tandem", "jax_eager"), 0.5),
        target(f"lenet_step ({model}, batch 256): tandem / jax_jit", "<= 1.5",
               ratio("lenet_step", "tandem", "jax_jit"), 1.5),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", required=True)
    parser.add_argument("--digits", default="data/digits")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", help="record the JAX peer as skipped, with this reason")
    args = parser.parse_args()
    path = Path(args.results)
    existing = json.loads(path.read_text()) if path.exists() else []
    args.existing = [r for r in existing if not str(r.get("system", "")).startswith("jax")
                     and r.get("workload") != "targets"]
    reason = args.skip
    peer = []
    if reason is None:
        try:
            peer = jax_records(args)
        except ImportError as error:
            reason = f"jax is not importable ({error})"
        except Exception as error:  # a failed peer must not lose tandem's records
            reason = f"the JAX peer failed: {type(error).__name__}: {error}"
    if reason is not None:
        print(f"jax_peer: skipped: {reason}", file=sys.stderr)
        peer = [{"workload": w, "system": s, "skipped": True, "reason": reason}
                for w in ("tiny_mlp_step", "lenet_step") for s in ("jax_eager", "jax_jit")]
    records = args.existing + peer
    records += targets(records)
    path.write_text(json.dumps(records, indent=2) + "\n")
    for t in records[-3:]:
        status = "not measured" if not t["measured"] else ("met" if t["met"] else "MISSED")
        print(f"jax_peer: target {t['target']} {t['limit_text']}: {t['value']:.3f} {status}")


if __name__ == "__main__":
    main()
