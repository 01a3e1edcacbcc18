#!/usr/bin/env python3
"""JAX peer of bench_gpu: a jitted SGD step of the 64-256-128-10 MLP on the GPU.

Issue 22, item 7: tandem's whole replayed training step (nn::TrainingStep, workload
mlp_step_whole) against a jax.jit-compiled step on the same GPU. Uses the machine's own jax
(never installed here); records itself as skipped, with the reason, when jax is missing or sees
no GPU. Adds {"workload": "mlp_step_whole", "system": "jax_jit", ...} to the results file.

    python3 bench/gpu/jax_peer.py --results bench/results/gpu.json [--quick]
"""
import statistics
import time

from peer_main import run_peer


def peer_records(quick):
    import jax
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        raise RuntimeError("jax sees no GPU (devices: %s)" % jax.devices())
    key = jax.random.PRNGKey(2)
    sizes = [(64, 256), (256, 128), (128, 10)]
    params = []
    for fan_in, fan_out in sizes:
        key, sub = jax.random.split(key)
        limit = (6.0 / (fan_in + fan_out)) ** 0.5
        params.append((jax.random.uniform(sub, (fan_in, fan_out), minval=-limit, maxval=limit),
                       jnp.zeros((fan_out,))))
    key, kx, ky = jax.random.split(key, 3)
    x = jax.random.uniform(kx, (32, 64))
    y = jax.random.randint(ky, (32,), 0, 10)

    def loss_fn(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i + 1 < len(params):
                h = jax.nn.relu(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    @jax.jit
    def step(params, x, y):
        grads = jax.grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)

    steps = 200 if quick else 1000

    def round_us():
        p = params
        for _ in range(3):
            p = step(p, x, y)
        jax.block_until_ready(p)
        start = time.perf_counter()
        for _ in range(steps):
            p = step(p, x, y)
        jax.block_until_ready(p)
        return (time.perf_counter() - start) * 1e6 / steps

    rounds = [round_us() for _ in range(3)]
    value = statistics.median(rounds)
    print(f"  mlp_step_whole         jax_jit    {value:12.3f} us")
    return [{"workload": "mlp_step_whole", "system": "jax_jit", "value": value,
             "round_values": rounds, "unit": "us", "higher_is_better": False, "rounds": 3,
             "detail": "MLP 64-256-128-10, batch 32, cross-entropy, SGD, one jax.jit step",
             "device": str(gpus[0]), "jax": jax.__version__}]


def main():
    run_peer(__doc__.split("\n")[0], "jax_jit", "JAX", peer_records)


if __name__ == "__main__":
    main()
