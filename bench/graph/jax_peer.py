#!/usr/bin/env python3
"""The JAX peer of the graph suite: hybridize_mlp's network under jax.jit and in eager JAX.

    jax_peer.py --results bench/results/graph.json [--quick]
    jax_peer.py --results bench/results/graph.json --skip "why JAX could not run"

bench_graph times forward calls of an MLP 512-256-128-2 on a (1, 512) float32 input with tandem,
eager and hybridized, waiting once at the end, the best of interleaved rounds. This script does
the same on the CPU with JAX: `jax_jit` (the function compiled once by jax.jit, then called;
JAX's counterpart of hybridize) and `jax_eager` (op-by-op dispatch). It adds its records to the
results file, replacing earlier JAX records and keeping everything else. With --skip, or when
jax cannot be imported, the JAX records say skipped and why.
"""

import argparse
import json
import sys
import time
from pathlib import Path

SIZES = [512, 256, 128, 2]


def jax_records(quick):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_platforms", "cpu")
    calls = 1000 if quick else 5000
    rounds = 5 if quick else 9
    key = jax.random.PRNGKey(0)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        key, sub = jax.random.split(key)
        scale = (3.0 / ((fan_in + fan_out) / 2)) ** 0.5  # Xavier uniform, as tandem's net
        params.append((jax.random.uniform(sub, (fan_out, fan_in), jnp.float32, -scale, scale),
                       jnp.zeros((fan_out,), jnp.float32)))
    x = jax.random.normal(key, (1, SIZES[0]), jnp.float32)

    def forward(params, x):
        for i, (w, b) in enumerate(params):
            x = x @ w.T + b
            if i + 1 < len(params):
                x = jax.nn.relu(x)
        return x

    jitted = jax.jit(forward)
    jax.block_until_ready(jitted(params, x))  # compiles
    jax.block_until_ready(forward(params, x))

    def time_calls(fn):
        start = time.perf_counter()
        y = None
        for _ in range(calls):
            y = fn(params, x)
        jax.block_until_ready(y)
        return time.perf_counter() - start

    best = {"jax_jit": float("inf"), "jax_eager": float("inf")}
    for _ in range(rounds):  # interleaved rounds, the best of each: the machine is noisy
        best["jax_jit"] = min(best["jax_jit"], time_calls(jitted))
        best["jax_eager"] = min(best["jax_eager"], time_calls(forward))
    print(f"jax_peer: hybridize_mlp {calls} calls, jax.jit {best['jax_jit']:.4f} s, "
          f"eager JAX {best['jax_eager']:.4f} s (jax {jax.__version__})")
    return [{"workload": "hybridize_mlp", "system": system, "seconds": seconds, "calls": calls,
             "model": "mlp 512-256-128-2, batch 1", "device": "cpu", "jax": jax.__version__}
            for system, seconds in best.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", help="record the JAX peer as skipped, with this reason")
    args = parser.parse_args()
    path = Path(args.results)
    existing = json.loads(path.read_text()) if path.exists() else []
    kept = [r for r in existing if not str(r.get("system", "")).startswith("jax")]
    reason = args.skip
    peer = []
    if reason is None:
        try:
            peer = jax_records(args.quick)
        except ImportError as error:
            reason = f"jax is not importable ({error})"
        except Exception as error:  # a failed peer must not lose tandem's records
            reason = f"the JAX peer failed: {type(error).__name__}: {error}"
    if reason is not None:
        print(f"jax_peer: skipped: {reason}", file=sys.stderr)
        peer = [{"workload": "hybridize_mlp", "system": system, "skipped": True, "reason": reason}
                for system in ("jax_jit", "jax_eager")]
    path.write_text(json.dumps(kept + peer, indent=2) + "\n")


if __name__ == "__main__":
    main()
