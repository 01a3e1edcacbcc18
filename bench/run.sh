#!/usr/bin/env bash
# Builds and runs one benchmark suite, then regenerates docs/benchmarks.md.
#
#   bench/run.sh engine --quick     # < 3 min on 2 cores, build included
#   bench/run.sh engine             # the full run (~2 min on 2 quiet cores)
#   bench/run.sh training --quick   # < 10 min on 2 cores: autograd, layers, the digits, JAX,
#                                   # and LeNet from scratch on Fashion-MNIST (seed 003, 8.4;
#                                   # BENCH_SCRATCH_LIMIT=N: its first N images only)
#   bench/run.sh multi_device --quick   # data, pipeline and model parallel on sim devices
#   bench/run.sh graph --quick      # hybridize_mlp: eager vs hybridized vs jax.jit forward calls
#   bench/run.sh gpu [--quick]      # cuda(0) against PyTorch on the same GPU (the machine's own
#                                   # torch, never installed); without a GPU: "skipped: no CUDA
#                                   # device", exit 0. On a lent GPU machine scripts/gpu-check.sh
#                                   # runs it from the bundle.
#   bench/run.sh distributed --quick    # 1, 2, 4 MPI ranks: lenet_bn throughput, allreduce cost
#   bench/run.sh soak [--quick]     # 10^8 mixed ops (--quick: 10^7; SOAK_OPS=N): vars alive, RSS
#                                   # and throughput over time, into bench/results/soak.json
#   bench/run.sh all                # engine, frontend, overlap and training
#   BENCH_NOTE="..." bench/run.sh engine   # a remark shown with the results (e.g. a local patch)
#   TASKFLOW_DIR=/path/to/taskflow bench/run.sh engine   # adds Taskflow as a peer of the engine
#                                   # suite (a checkout of github:taskflow/taskflow kept outside
#                                   # the repository; header-only, not packaged by Debian)
#
# Each suite writes bench/results/SUITE.json (its records) and bench/results/SUITE.meta.json
# (how, where and when it ran); bench/report.py turns every results file into a table between
# the suite's markers in docs/benchmarks.md. Builds go to build-bench/ (Release, no tests, no
# CUDA unless TANDEM_BENCH_CUDA=ON), which is reused between runs.
set -euo pipefail

usage() {
  echo "usage: bench/run.sh engine|frontend|overlap|training|multi_device|graph|gpu|distributed|soak|all [--quick]" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
suite=$1
shift
quick=()
for arg in "$@"; do
  case $arg in
    --quick) quick=(--quick) ;;
    *) usage ;;
  esac
done
case $suite in engine | frontend | overlap | training | multi_device | graph | gpu | distributed | soak | all) ;; *) usage ;; esac

# The gpu suite needs a GPU: without one there is nothing to build or measure.
if [[ $suite == gpu ]] && ! nvidia-smi -L > /dev/null 2>&1; then
  echo "bench/run.sh gpu: skipped: no CUDA device (nvidia-smi finds none); nothing was built or" \
    "changed. On a lent GPU machine, scripts/gpu-check.sh runs this suite from the bundle."
  exit 0
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build-bench
results=$repo/bench/results
jobs=$(nproc)

# The packages the project and its benchmark peers build against (see docs/toolchain.md).
# Installed only when missing, so a second run touches nothing.
ensure_packages() {
  local wanted=(cmake ninja-build g++ pkg-config python3 libtbb-dev libspdlog-dev libfmt-dev
    libopenblas-dev librandom123-dev libstarpu-dev nlohmann-json3-dev)
  local missing=()
  for package in "${wanted[@]}"; do
    dpkg -s "$package" > /dev/null 2>&1 || missing+=("$package")
  done
  [[ ${#missing[@]} -eq 0 ]] && return
  echo "run.sh: installing missing packages: ${missing[*]}"
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

configure() {
  # The gpu suite needs the CUDA backend in the build.
  [[ $suite == gpu ]] && TANDEM_BENCH_CUDA=ON
  if [[ -f $build/CMakeCache.txt ]]; then
    [[ $suite != gpu ]] || cmake -DTANDEM_CUDA=ON "$build" > /dev/null
    return
  fi
  mkdir -p "$build"
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTANDEM_BUILD_BENCH=ON -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_EXAMPLES=OFF \
    -DTANDEM_CUDA="${TANDEM_BENCH_CUDA:-OFF}" > "$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    echo "run.sh: configuring $build failed (log above)" >&2
    return 1
  }
}

# Builds bench_SUITE and prints its path; fails with a message when the suite does not exist yet.
build_suite() {
  local name=$1 target=bench_$1
  if [[ $name != engine && ! -f $repo/bench/$name/CMakeLists.txt ]]; then
    echo "run.sh: $target is not built yet: bench/$name/ has no CMakeLists.txt (the $name suite" \
      "has not been written)" >&2
    return 1
  fi
  # Re-run CMake so that a suite folder added since the last configure is picked up, and so that
  # the engine suite has Taskflow exactly when TASKFLOW_DIR is set now.
  cmake "$build" -DTASKFLOW_DIR="${TASKFLOW_DIR:-}" > /dev/null
  cmake --build "$build" --target "$target" -j "$jobs" >&2 || {
    echo "run.sh: building $target failed" >&2
    return 1
  }
  local binary
  binary=$(find "$build/bench" -name "$target" -type f -perm -u+x -print -quit)
  if [[ -z $binary ]]; then
    echo "run.sh: $target is not built yet (no binary under $build/bench)" >&2
    return 1
  fi
  echo "$binary"
}

# d2l's ResNet-18 (issue 25): bench_resnet18's step on cpu and data parallel on 1, 2 and 4 sim
# devices, then its JAX peer and targets, into bench/results/resnet18.json. The sim devices
# model a compute rate (RESNET18_SIM_GFLOPS, default 1) slow enough that their modelled time
# dominates the real work the host's 2 cores do for all of them at once (docs/benchmarks.md,
# "ResNet-18"). RESNET18_BATCH (default 16) is the cpu step's batch.
run_resnet18() {
  cmake --build "$build" --target bench_resnet18 -j "$jobs" >&2 || return 1
  local binary=$build/bench/training/bench_resnet18 fresh=$results/.resnet18.json.new
  env TANDEM_SIM_DEVICES=4 TANDEM_SIM_GFLOPS="${RESNET18_SIM_GFLOPS:-1}" \
    TANDEM_MAX_OPS_IN_FLIGHT=16384 "$binary" "${quick[@]}" --batch "${RESNET18_BATCH:-16}" --steps 3 \
    --out "$fresh" || return 1
  mv "$fresh" "$results/resnet18.json"
  bash "$repo/bench/peer_jax.sh" "$repo/bench/training/jax_resnet18.py" "$results/resnet18.json" \
    "${quick[@]}" || echo "run.sh: the ResNet-18 JAX peer failed; tandem's records are kept" >&2
}

run_suite() {
  local name=$1 binary started
  started=$(date +%s)
  binary=$(build_suite "$name") || return 1
  mkdir -p "$results"
  # The multi-device suite runs on a sim model slow enough that modelled device time dominates
  # the host's real work (a device's compute streams share its rate, so their number does not
  # change its compute): docs/benchmarks.md, "multi_device". Every record repeats the model it
  # ran with.
  local environment=()
  if [[ $name == multi_device ]]; then
    environment=(TANDEM_SIM_DEVICES=4 TANDEM_SIM_GFLOPS=0.05 TANDEM_MAX_OPS_IN_FLIGHT=1024)
  fi
  echo "run.sh: ${environment[*]} $binary ${quick[*]} --out bench/results/$name.json"
  local fresh=$results/.$name.json.new
  rm -f "$fresh"
  env "${environment[@]}" "$binary" "${quick[@]}" --out "$fresh" || {
    echo "run.sh: $binary failed (exit $?); bench/results/$name.json was not updated" >&2
    return 1
  }
  if [[ ! -s $fresh ]]; then  # bench_gpu without a device: it said so, and wrote nothing
    echo "run.sh: $binary wrote no records; bench/results/$name.json was not updated"
    return 0
  fi
  mv "$fresh" "$results/$name.json"
  if [[ $name == training ]]; then
    # The JAX peer, in its own virtual environment, adds its records and the targets.
    bash "$repo/bench/peer_jax.sh" "$repo/bench/training/jax_peer.py" "$results/$name.json" \
      --digits "$repo/data/digits" "${quick[@]}" ||
      echo "run.sh: the JAX peer failed; tandem's records are kept" >&2
    run_resnet18 || echo "run.sh: the ResNet-18 runs failed; the other training records are kept" >&2
    # LeNet from scratch on Fashion-MNIST (seed 003, 8.4): examples/multi_device_scratch on cpu,
    # sim(0) and sim(0)+sim(1); BENCH_SCRATCH_LIMIT=N trains on the first N images only.
    cmake -DTANDEM_BUILD_EXAMPLES=ON "$build" > /dev/null
    if cmake --build "$build" --target multi_device_scratch -j "$jobs" >&2; then
      python3 "$repo/bench/training/lenet_scratch.py" \
        --binary "$build/examples/multi_device_scratch/multi_device_scratch" \
        --results "$results/$name.json" ${BENCH_SCRATCH_LIMIT:+--limit "$BENCH_SCRATCH_LIMIT"} \
        "${quick[@]}" || echo "run.sh: lenet_scratch failed; the other records are kept" >&2
    else
      echo "run.sh: building multi_device_scratch failed; lenet_scratch not run" >&2
    fi
  elif [[ $name == gpu ]]; then
    # PyTorch on the same GPU, only the machine's own (it records itself skipped without one).
    python3 "$repo/bench/gpu/torch_peer.py" --results "$results/$name.json" "${quick[@]}" ||
      echo "run.sh: the PyTorch peer failed; tandem's records are kept" >&2
    # A jax.jit training step beside nn::TrainingStep, with the machine's own jax (GPU build).
    python3 "$repo/bench/gpu/jax_peer.py" --results "$results/$name.json" "${quick[@]}" ||
      echo "run.sh: the JAX peer failed; the other records are kept" >&2
  elif [[ $name == graph ]]; then
    # The same MLP under jax.jit (and eager JAX), side by side with hybridize.
    bash "$repo/bench/peer_jax.sh" "$repo/bench/graph/jax_peer.py" "$results/$name.json" \
      "${quick[@]}" || echo "run.sh: the JAX peer failed; tandem's records are kept" >&2
  fi
  python3 "$repo/bench/report.py" --record-run "$name" \
    --command "bench/run.sh $name${quick:+ --quick}" --seconds $(($(date +%s) - started)) \
    ${BENCH_NOTE:+--note "$BENCH_NOTE"}
}

# The distributed suite: examples/train_distributed and allreduce_cost started by tandem-run
# with 1, 2 and 4 ranks, each rank with TANDEM_CPU_WORKERS = cores / ranks (at least 1). Its own
# Release build (examples on, no StarPU needed); the records go to
# bench/results/distributed.jsonl, one JSON object per line, and docs/benchmarks.md
# ("distributed") quotes them by hand (TANDEM_DIST_BUILD=DIR: an existing build tree with the
# examples instead). Per rank count: samples/s per epoch, the fraction of the
# exchange hidden behind backward in the last (profiled) epoch, and (2 and 4 ranks) the
# exchange of one lenet_bn step and single allreduces against plain MPI_Allreduce calls; at 2
# ranks, Task Bench's METG across the ranks (allreduce_cost --metg).
run_distributed() {
  local dist_build=${TANDEM_DIST_BUILD:-$repo/build-bench-dist} out=$results/distributed.jsonl
  local launcher=$repo/frontend/src/distributed/mpi/tandem-run
  command -v mpirun > /dev/null || { echo "run.sh: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; return 1; }
  [[ -f $dist_build/CMakeCache.txt ]] || cmake -S "$repo" -B "$dist_build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_EXAMPLES=ON \
    -DTANDEM_CUDA=OFF > /dev/null
  cmake --build "$dist_build" --target train_distributed allreduce_cost -j "$jobs" >&2 || return 1
  [[ -f $repo/data/digits/test-labels-idx1-ubyte ]] || bash "$repo/scripts/fetch-digits.sh"
  mkdir -p "$results"
  : > "$out"
  local np workers dataset epochs steps
  # lenet_bn on the digits (8x8: a backward far shorter than one collective) and, when Debian's
  # dataset-fashion-mnist is installed, on Fashion-MNIST (28x28), a fixed number of steps.
  local -a runs=("digits 3 0")
  [[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] && runs+=("fashion_mnist 2 60")
  [[ ${#quick[@]} -gt 0 ]] && runs=("digits 2 0")
  for np in 1 2 4; do
    workers=$(( $(nproc) / np )); (( workers >= 1 )) || workers=1
    for run in "${runs[@]}"; do
      read -r dataset epochs steps <<< "$run"
      echo "run.sh: distributed: $dataset, $np rank(s), TANDEM_CPU_WORKERS=$workers, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      "$launcher" --allow-run-as-root -np "$np" \
        "$dist_build/examples/train_distributed/train_distributed" --dataset "$dataset" \
        --epochs "$epochs" --steps "$steps" --profile |
        tee /dev/stderr |
        sed -n -e "s/^epoch \([0-9]*\):.* \([0-9.]*\) samples\/s$/{\"dataset\": \"$dataset\", \"ranks\": $np, \"workers\": $workers, \"epoch\": \1, \"samples_per_s\": \2}/p" \
          -e "s/^exchange: hidden \([0-9.]*\) (\([0-9.]*\) of \([0-9.]*\) ms.*, \([0-9]*\) buckets$/{\"dataset\": \"$dataset\", \"ranks\": $np, \"exchange_hidden\": \1, \"hidden_ms\": \2, \"exchange_ms\": \3, \"buckets\": \4}/p" >> "$out"
    done
    if (( np > 1 )); then
      "$launcher" --allow-run-as-root -np "$np" \
        "$dist_build/examples/train_distributed/allreduce_cost" --model lenet_bn "${quick[@]}" | tee -a "$out"
      "$launcher" --allow-run-as-root -np "$np" \
        "$dist_build/examples/train_distributed/allreduce_cost" "${quick[@]}" | tee -a "$out"
    fi
    if (( np == 2 )); then  # Task Bench's METG pattern across 2 ranks
      "$launcher" --allow-run-as-root -np 2 \
        "$dist_build/examples/train_distributed/allreduce_cost" --metg "${quick[@]}" | tee -a "$out"
    fi
  done
  echo "run.sh: distributed records in $out"
}

# The soak run (bench/soak/soak.cc): a mixed workload sampled 40 times, into
# bench/results/soak.json and docs/benchmarks.md ("soak").
run_soak() {
  cmake --build "$build" --target tandem_soak -j "$jobs" >&2 || return 1
  local ops=${SOAK_OPS:-100000000}
  [[ ${#quick[@]} -eq 0 ]] || ops=${SOAK_OPS:-10000000}
  mkdir -p "$results"
  echo "run.sh: tandem_soak --ops $ops --samples 40 --json bench/results/soak.json (load $(cut -d' ' -f1-3 /proc/loadavg))"
  local started
  started=$(date +%s)
  "$build/bench/tandem_soak" --ops "$ops" --samples 40 --json "$results/soak.json" || return 1
  python3 "$repo/bench/report.py" --record-run soak --command "bench/run.sh soak${quick:+ --quick}" \
    --seconds $(($(date +%s) - started)) ${BENCH_NOTE:+--note "$BENCH_NOTE"}
  python3 "$repo/bench/report.py"
}

cd "$repo"
if [[ $suite == distributed ]]; then
  run_distributed
  exit $?
fi
ensure_packages
configure
# The training suite trains on the digits (git-ignored data/digits, from Debian's sklearn).
if [[ $suite == training || $suite == multi_device || $suite == all ]] && [[ ! -f $repo/data/digits/test-labels-idx1-ubyte ]]; then
  bash "$repo/scripts/fetch-digits.sh"
fi

status=0
if [[ $suite == soak ]]; then
  run_soak
  exit $?
fi
if [[ $suite == all ]]; then
  for name in engine frontend overlap training multi_device graph; do run_suite "$name" || status=1; done
else
  run_suite "$suite" || status=1
fi
python3 "$repo/bench/report.py"
exit $status
