#!/usr/bin/env python3
"""The PyTorch peer of the gpu suite: bench_gpu's workloads with PyTorch on the same GPU.

    torch_peer.py --results bench/results/gpu.json [--quick]

Uses the machine's own PyTorch (never installs it): eager, float32, TF32 off (PyTorch's
default for matmul; set explicitly, cuDNN too), each value the median of 3 rounds timed like
bench_gpu's (torch.cuda.synchronize() where tandem waits). It adds "pytorch" records to the
results file, replacing earlier ones and keeping tandem's. When torch cannot be imported or sees
no GPU, the peer's records say skipped and why, and the script exits 0.
"""

import statistics
import time

from peer_main import run_peer

ROUNDS = 3
SAMPLES = 1437  # the digits' training split, as bench_gpu


def median_of_rounds(round_fn):
    """Every round's value, in the order they ran (add() records them and their median)."""
    return [round_fn() for _ in range(ROUNDS)]


def peer_records(quick):
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)
    sync = torch.cuda.synchronize
    name = torch.cuda.get_device_name(0)
    records = []

    def add(workload, rounds, unit, higher, detail):
        value = statistics.median(rounds)
        print(f"  {workload:22s} {value:12.3f} {unit}", flush=True)
        records.append({"workload": workload, "system": "pytorch", "value": value,
                        "round_values": rounds, "unit": unit, "higher_is_better": higher,
                        "detail": detail, "rounds": ROUNDS, "device": name,
                        "torch": torch.__version__})

    def tiny_ops_us(ops, wait_each):
        y = torch.zeros(1, device=dev)
        sync()
        start = time.perf_counter()
        for _ in range(ops):
            y = y + 1
            if wait_each:
                sync()
        sync()
        return (time.perf_counter() - start) * 1e6 / ops

    def add_gbps(n, repeats, wait_each):
        x = torch.ones(n, device=dev)
        y = x + 1
        sync()
        start = time.perf_counter()
        for _ in range(repeats):
            y = x + 1
            if wait_each:
                sync()
        sync()
        return 8.0 * n * repeats / (time.perf_counter() - start) / 1e9

    # bench_gpu's memory_kernel_gbps: the bytes each call must move (elements read, and written
    # for x + b and softmax) over the time.
    memory_kernels = {
        "bcast_add": (lambda x, b: x + b, True),
        "sum": (lambda x, b: x.sum(), False),
        "mean": (lambda x, b: x.mean(), False),
        "sum_rows": (lambda x, b: x.sum(-1), False),
        "sum_cols": (lambda x, b: x.sum(0), False),
        "softmax": (lambda x, b: torch.softmax(x, -1), True),
    }

    def memory_kernel_gbps(kernel, rows, cols, repeats):
        call, writes = memory_kernels[kernel]
        x = torch.rand(rows, cols, device=dev)
        b = torch.rand(cols, device=dev)
        call(x, b)
        sync()
        start = time.perf_counter()
        for _ in range(repeats):
            out = call(x, b)
        sync()
        del out
        seconds = time.perf_counter() - start
        return (8.0 if writes else 4.0) * rows * cols * repeats / seconds / 1e9

    def dot_tflops(n, repeats):
        a = torch.rand(n, n, device=dev)
        b = torch.rand(n, n, device=dev)
        a @ b
        sync()
        start = time.perf_counter()
        for _ in range(repeats):
            c = a @ b
        sync()
        del c
        return 2.0 * n ** 3 * repeats / (time.perf_counter() - start) / 1e12

    def copy_gbps(floats, to_device, pinned):
        host = torch.ones(floats)
        if pinned:
            host = host.pin_memory()
        device = torch.zeros(floats, device=dev)
        sync()

        def once():
            if to_device:
                device.copy_(host, non_blocking=True)
            else:
                host.copy_(device, non_blocking=True)
            sync()

        once()
        start = time.perf_counter()
        once()
        return 4.0 * floats / (time.perf_counter() - start) / 1e9

    def conv_ms(pass_name, repeats, batch=256, channels_in=64, channels_out=64, size=28):
        x = torch.rand(batch, channels_in, size, size, device=dev)
        w = torch.rand(channels_out, channels_in, 3, 3, device=dev)
        grad = torch.rand(batch, channels_out, size, size, device=dev)
        calls = {
            "conv_fwd": lambda: F.conv2d(x, w, padding=1),
            "conv_bwd_data": lambda: torch.nn.grad.conv2d_input(x.shape, w, grad, padding=1),
            "conv_bwd_weight": lambda: torch.nn.grad.conv2d_weight(x, w.shape, grad, padding=1),
        }
        call = calls[pass_name]
        call()
        sync()
        start = time.perf_counter()
        for _ in range(repeats):
            out = call()
        sync()
        del out
        return (time.perf_counter() - start) * 1e3 / repeats

    add("add_n1_async", median_of_rounds(lambda: tiny_ops_us(1000, False)), "us/op", False,
        "y = y + 1, n = 1, 1000 dependent ops, one synchronize")
    add("add_n1_wait", median_of_rounds(lambda: tiny_ops_us(1000, True)), "us/op", False,
        "y = y + 1, n = 1, torch.cuda.synchronize() after each op")
    for label, n, repeats in (("4M", 4_000_000, 200), ("64M", 64 << 20, 20)):
        for wait_each in (False, True):
            reps = repeats // 4 if quick else repeats
            add(f"add_{label}_{'sync' if wait_each else 'async'}",
                median_of_rounds(lambda: add_gbps(n, reps, wait_each)), "GB/s", True,
                "y = x + 1, float32")
    for label, rows, cols, repeats in (("4M", 4000, 1000, 200), ("64M", 65536, 1024, 20)):
        for kernel in memory_kernels:
            reps = repeats // 4 if quick else repeats
            add(f"{kernel}_{label}",
                median_of_rounds(lambda: memory_kernel_gbps(kernel, rows, cols, reps)), "GB/s",
                True, f"{rows} x {cols} float32")
    for n, repeats in ((1024, 200), (4096, 20), (8192, 4)):
        add(f"dot_{n}", median_of_rounds(lambda: dot_tflops(n, repeats)), "TFLOP/s", True,
            "float32, TF32 off")
    floats = (64 if quick else 256) << 20
    for to_device in (True, False):
        for pinned in (False, True):
            add(f"{'h2d' if to_device else 'd2h'}_{'pinned' if pinned else 'pageable'}",
                median_of_rounds(lambda: copy_gbps(floats, to_device, pinned)), "GB/s", True,
                f"{'256 MiB' if quick else '1 GiB'}, copy_ into an existing tensor")
    for pass_name in ("conv_fwd", "conv_bwd_data", "conv_bwd_weight"):
        add(pass_name, median_of_rounds(lambda: conv_ms(pass_name, 3 if quick else 10)), "ms",
            False, "batch 256, 64->64, 3x3, pad 1, 28x28, float32, cuDNN, TF32 off")
    # lenet_bn's second convolution: calls too small to keep the GPU busy (host cost per call).
    for pass_name in ("conv_fwd", "conv_bwd_data", "conv_bwd_weight"):
        add(pass_name.replace("conv_", "conv_lenet_"),
            median_of_rounds(lambda: 1e3 * conv_ms(pass_name, 200 if quick else 1000, 64, 16, 32,
                                                   4)),
            "us", False, "batch 64, 16->32, 3x3, pad 1, 4x4, float32, cuDNN, TF32 off")

    # lenet_bn: Conv(16, 3x3, pad 1) BN relu maxpool 2, Conv(32, 3x3, pad 1) BN relu maxpool 2,
    # flatten (128), Dense(10): train_lenet's default model (examples/train_lenet/models.h).
    def lenet_epoch_s(epochs):
        torch.manual_seed(1)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(128, 10)).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        images = torch.rand(SAMPLES, 1, 8, 8)
        labels = torch.randint(0, 10, (SAMPLES,))
        dataset = torch.utils.data.TensorDataset(images, labels)
        loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True,
                                             pin_memory=True)

        def epoch():
            for x, y in loader:
                x = x.to(dev, non_blocking=True)
                y = y.to(dev, non_blocking=True)
                opt.zero_grad()
                loss = F.cross_entropy(net(x), y, reduction="sum")
                loss.backward()
                opt.step()

        epoch()
        sync()
        start = time.perf_counter()
        for _ in range(epochs):
            epoch()
        sync()
        return (time.perf_counter() - start) / epochs

    add("lenet_bn_epoch", median_of_rounds(lambda: lenet_epoch_s(1 if quick else 3)), "s", False,
        "lenet_bn, batch 64, 1437 8x8 images, SGD, DataLoader(pin_memory=True)")

    def mlp_step_us(steps):
        torch.manual_seed(2)
        net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10)).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        x = torch.rand(32, 64, device=dev)
        y = torch.randint(0, 10, (32,), device=dev)

        def step():
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()

        for _ in range(3):
            step()
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        return (time.perf_counter() - start) * 1e6 / steps

    add("mlp_step_eager", median_of_rounds(lambda: mlp_step_us(200 if quick else 1000)), "us",
        False, "MLP 64-256-128-10, batch 32, cross-entropy, SGD, eager")
    return records


def main():
    run_peer(__doc__.split("\n")[0], "pytorch", "PyTorch", peer_records)


if __name__ == "__main__":
    main()
