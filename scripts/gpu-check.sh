#!/usr/bin/env bash
# shellcheck disable=SC2317  # the stage functions are called through `stage`
# The one command for the day a GPU machine is lent: builds tandem with the CUDA backend
# (Release), runs the whole test suite on the GPU, runs the benchmarks with CUDA, and collects
# everything in one folder (copied to $OUT when set).
#
#   bash scripts/gpu-check.sh            # full benchmarks
#   bash scripts/gpu-check.sh --quick    # benchmarks in their --quick form
#
# Environment: TANDEM_GPU_BUILD_DIR (default build-gpu), TANDEM_JOBS (default: all cores),
# CMAKE_CUDA_ARCHITECTURES (default 90: H100/H200), OUT (where results are copied).
# Every stage runs even after an earlier one failed; the exit status is non-zero if any failed,
# and summary.txt says which. The machine needs the packages of scripts/setup.sh already
# installed (lent GPU machines may have no network).
set -uo pipefail

quick=()
for arg in "$@"; do
  case $arg in
    --quick) quick=(--quick) ;;
    *)
      echo "usage: scripts/gpu-check.sh [--quick]" >&2
      exit 2
      ;;
  esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${TANDEM_GPU_BUILD_DIR:-$repo/build-gpu}"
jobs="${TANDEM_JOBS:-$(nproc)}"
arch="${CMAKE_CUDA_ARCHITECTURES:-90}"
results="$build/gpu-check"
mkdir -p "$results"
summary="$results/summary.txt"
: > "$summary"
failed=0

# stage NAME COMMAND...: runs COMMAND with its output in $results/NAME.log and a line in the
# summary.
stage() {
  local name=$1
  shift
  echo "== gpu-check: $name"
  local start=$SECONDS
  if "$@" > "$results/$name.log" 2>&1; then
    echo "$name: ok ($((SECONDS - start)) s)" | tee -a "$summary"
  else
    echo "$name: FAILED ($((SECONDS - start)) s), see $results/$name.log" | tee -a "$summary"
    tail -n 40 "$results/$name.log"
    failed=1
  fi
}

device_info() {
  command -v nvidia-smi > /dev/null && nvidia-smi
  /usr/local/cuda/bin/nvcc --version
}

configure() {
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DTANDEM_BUILD_TESTS=ON -DTANDEM_BUILD_EXAMPLES=ON
}

build_all() {
  cmake --build "$build" --parallel "$jobs"
}

run_tests() {
  ctest --test-dir "$build" --output-on-failure --no-tests=error --timeout 1200 -j "$jobs"
}

# On a GPU machine the gpu(i) tests must really run: a "SKIPPED: no CUDA device" is a failure.
gpu_tests_ran() {
  ctest --test-dir "$build" -R cuda -V --timeout 1200 | tee "$results/cuda-tests-verbose.log"
  if grep -q "SKIPPED: no CUDA device" "$results/cuda-tests-verbose.log"; then
    echo "gpu-check: the CUDA tests were skipped: the runtime sees no device" >&2
    return 1
  fi
}

benchmark() {
  local suite=$1
  TANDEM_BENCH_CUDA=ON bash "$repo/bench/run.sh" "$suite" "${quick[@]}"
}

stage device device_info
stage configure configure
stage build build_all
stage tests run_tests
stage gpu-tests gpu_tests_ran
for suite in overlap frontend engine; do
  stage "bench-$suite" benchmark "$suite"
done

# What the day produced: logs, benchmark records and the regenerated tables.
cp -r "$repo/bench/results" "$results/bench-results" 2> /dev/null
cp "$repo/docs/benchmarks.md" "$results/" 2> /dev/null
cp "$build/Testing/Temporary/LastTest.log" "$results/ctest.log" 2> /dev/null
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT/gpu-check"
  cp -r "$results/." "$OUT/gpu-check/"
  echo "gpu-check: results copied to $OUT/gpu-check"
fi
echo "== gpu-check summary"
cat "$summary"
exit "$failed"
