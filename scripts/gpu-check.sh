#!/usr/bin/env bash
# The GPU check: one call on a lent GPU machine that has the NVIDIA driver and a CUDA 13
# installation but none of tandem's packages and no network. Two commands (docs/toolchain.md):
#
#   bash scripts/gpu-check.sh --bundle   # here, on the development machine: builds gpu-bundle/
#                                        # (scripts/gpu-bundle.sh) and prints the `run` call
#   bash scripts/gpu-check.sh            # there, with gpu-bundle/ carried in: runs the steps
#
# Steps, each with its own time limit, every one run even after an earlier one failed:
#   libraries      the bundle is complete (checksums) and every program finds its libraries
#   device         nvidia-smi and gpu_probe: the CUDA runtime sees a device (else exit 3)
#   cuda-tests     tests/cuda on gpu(0); a "SKIPPED: no CUDA device" fails the step
#   frontend-cuda  the front end's ops on cuda(0) against the cpu (frontend.devices,
#                  frontend.multi_device, the round trips excepted)
#   round-trips    the mixed-device round trips: accelerator -> cpu -> accelerator and back,
#                  copies between every pair of devices, back-to-back allreduce, and the
#                  differential mixed cpu/accelerator chains
#   frontend       the rest of the front end's suites and the out-of-memory test
#   examples       devices, accel_parallel --cuda, multi_device --cuda
#   bench-overlap  bench_overlap on sim(0) and gpu(0): bench/results/overlap.json with gpu(0)
#                  rows, its provenance and the regenerated docs/benchmarks.md
#   bench-gpu      bench_gpu (bench/gpu) and its PyTorch peer (the machine's own torch, when
#                  python3 imports it): bench/results/gpu.json and the regenerated
#                  docs/benchmarks.md
#   memcheck       compute-sanitizer --tool memcheck on tests/cuda and frontend.devices
#   synccheck      compute-sanitizer --tool synccheck on the same
#
# Everything (summary.txt, one log per step, the machine's description, the bundle's manifest,
# the benchmark records and docs/benchmarks.md) is packed into ONE file, gpu-check.tar.gz, in
# $OUT when it is set (the device tool's output folder), else in gpu-check-results/.
#
# Options: --quick (benchmark and examples in their short form), --only STEP[,STEP...] (a later
# call for steps that ran out of time), --force (run every step even without a device: tests
# this script on a machine without a GPU), --list (the steps and their limits).
# Environment: TANDEM_GPU_BUNDLE (default gpu-bundle), TANDEM_GPU_CHECK_DIR (default
# gpu-check-results), TANDEM_GPU_CHECK_BUDGET_S (default 560: the whole run, so that one call of
# at most 600 s ends with its tarball written), TANDEM_CUDA_LIB_DIR (where the machine's
# libcublas.so.13 is, when the search does not find it), TANDEM_COMPUTE_SANITIZER (its path).
#
# Exit status: 0 every step passed; 1 a step failed, timed out or did not fit in the time budget
# (summary.txt names it); 2 bad usage; 3 no CUDA device (stopped after the device step); 4 no
# usable bundle (missing, incomplete or its libraries not found on this machine) and none could
# be built here.
#
# Without a bundle, on a machine that has the toolchain and scripts/setup.sh's packages, the
# bundle is built in place first (scripts/gpu-bundle.sh with every core), then checked the same
# way.
set -uo pipefail

readonly EXIT_FAILED=1 EXIT_USAGE=2 EXIT_NO_DEVICE=3 EXIT_NO_BUNDLE=4
readonly STEPS=(libraries device cuda-tests frontend-cuda round-trips frontend examples
  bench-overlap bench-gpu memcheck synccheck)
declare -A LIMIT_S=([libraries]=60 [device]=60 [cuda-tests]=180 [frontend-cuda]=180
  [round-trips]=180 [frontend]=180 [examples]=120 [bench-overlap]=240 [bench-gpu]=300
  [memcheck]=180 [synccheck]=180)

usage() {
  echo "usage: scripts/gpu-check.sh [--quick] [--force] [--only STEP[,STEP...]] | --bundle | --list" >&2
  exit "$EXIT_USAGE"
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=()
force=0
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --bundle) exec bash "$repo/scripts/gpu-bundle.sh" ;;
    --quick) quick=(--quick) ;;
    --force) force=1 ;;
    --only)
      [[ $# -ge 2 ]] || usage
      only=$2
      shift
      ;;
    --list)
      for step in "${STEPS[@]}"; do echo "$step (${LIMIT_S[$step]} s)"; done
      exit 0
      ;;
    *) usage ;;
  esac
  shift
done
for step in ${only//,/ }; do
  [[ -n ${LIMIT_S[$step]:-} ]] || {
    echo "gpu-check: unknown step '$step'; the steps: ${STEPS[*]}" >&2
    exit "$EXIT_USAGE"
  }
done

# The carried folder (gpu-bundle/bundle.tar.gz) and where its tarball is unpacked.
carried=${TANDEM_GPU_BUNDLE:-$repo/gpu-bundle}
results_root=${TANDEM_GPU_CHECK_DIR:-$repo/gpu-check-results}
results=$results_root/gpu-check
budget=${TANDEM_GPU_CHECK_BUDGET_S:-560}
# Seconds kept back at the end for packing the results.
readonly RESERVE_S=15
started=$SECONDS
# Only what this script writes there is removed: the folder may be one the caller named.
rm -rf "$results" "$results_root/bundle" "$results_root/gpu-check.tar.gz"
mkdir -p "$results"
summary=$results/summary.txt
failed=0

note() { echo "gpu-check: $*" | tee -a "$summary"; }

manifest_value() {
  sed -n "s/^$1=//p" "$bundle/MANIFEST.txt" 2> /dev/null
}

# Packs $results into one tarball, copies it to $OUT when set, prints the summary, exits.
finish() {
  local status=$1
  local tarball=$results_root/gpu-check.tar.gz
  tar -czf "$tarball" -C "$results_root" gpu-check
  if [[ -n ${OUT:-} ]]; then
    mkdir -p "$OUT"
    cp "$tarball" "$OUT/gpu-check.tar.gz"
    tarball=$OUT/gpu-check.tar.gz
  fi
  echo "== gpu-check summary (every log is in $tarball)"
  cat "$summary"
  echo "gpu-check: exit $status"
  exit "$status"
}

# ---- the bundle and its library path --------------------------------------------------------

# A bundle made here when none was carried and this machine can build one (the fallback mode).
build_bundle_here() {
  [[ -f $repo/scripts/gpu-bundle.sh && $carried == "$repo/gpu-bundle" ]] || return 1
  command -v cmake > /dev/null && command -v pkg-config > /dev/null &&
    pkg-config --exists tbb spdlog && [[ -x /usr/local/cuda/bin/nvcc ]] || return 1
  note "no bundle in $carried: building one here (scripts/gpu-bundle.sh, log bundle.log)"
  TANDEM_JOBS=$(nproc) timeout -k 10 "$((budget - RESERVE_S))" \
    bash "$repo/scripts/gpu-bundle.sh" > "$results/bundle.log" 2>&1
}

# Sets `bundle` to an unpacked bundle: the carried tarball unpacked into $results_root/bundle,
# or the carried folder itself when it is already unpacked (bin/, lib/, MANIFEST.txt).
bundle=""
if [[ -f $carried/MANIFEST.txt && -d $carried/bin ]]; then
  bundle=$carried
elif [[ -f $carried/bundle.tar.gz ]] || build_bundle_here; then
  bundle=$results_root/bundle
  mkdir -p "$bundle"
  tar -xzf "$carried/bundle.tar.gz" -C "$bundle" || {
    note "NO BUNDLE: $carried/bundle.tar.gz does not unpack (an incomplete copy?)"
    finish "$EXIT_NO_BUNDLE"
  }
fi
if [[ -f $results/bundle.log && ! -f $carried/bundle.tar.gz ]]; then
  note "NO BUNDLE: building one here failed (bundle.log):"
  tail -n 20 "$results/bundle.log"
  finish "$EXIT_NO_BUNDLE"
fi
if [[ -z $bundle || ! -f $bundle/MANIFEST.txt ]]; then
  note "NO BUNDLE: no $carried/bundle.tar.gz, and this machine cannot build one (that needs" \
    "cmake, nvcc and the packages of scripts/setup.sh --bench). Make it on the development" \
    "machine with 'bash scripts/gpu-check.sh --bundle' and name gpu-bundle in the run call's carry."
  finish "$EXIT_NO_BUNDLE"
fi
bin=$bundle/bin
cp "$bundle/MANIFEST.txt" "$results/"

# Sets cuda_lib_dir to the folder holding the machine's cuBLAS (libcublas.so.13,
# libcublasLt.so.13: too large to carry), left empty when the loader's cache has them, and
# cuda_lib_where to a description of what was found.
cuda_lib_dir=""
cuda_lib_where=""
find_machine_cuda_libs() {
  local wanted
  read -r -a wanted <<< "$(manifest_value machine_libs)"
  local needed=() library
  for library in "${wanted[@]}"; do
    [[ $library == libcuda.so.* ]] || needed+=("$library")
  done
  # Read once into a variable: `ldconfig -p | grep -q` under pipefail fails with SIGPIPE
  # whenever grep finds its line before ldconfig has written everything.
  local missing=0 cache
  cache=$(ldconfig -p 2> /dev/null)
  for library in "${needed[@]}"; do
    grep -qF "$library " <<< "$cache" || missing=1
  done
  if ((missing == 0)); then
    cuda_lib_where="in the loader's cache"
    return
  fi
  local candidates=("${TANDEM_CUDA_LIB_DIR:-}" /usr/local/cuda/lib64 /usr/local/cuda/lib
    /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib)
  # CUDA's pip wheels (e.g. PyTorch's): site-packages/nvidia/{cu13,cublas}/lib.
  local python_dirs
  python_dirs=$(python3 -c 'import nvidia; print("\n".join(nvidia.__path__))' 2> /dev/null)
  local dir
  while read -r dir; do
    [[ -n $dir ]] && candidates+=("$dir"/*/lib)
  done <<< "$python_dirs"
  for dir in "${candidates[@]}"; do
    if [[ -n $dir && -e $dir/${needed[0]} && -e $dir/${needed[-1]} ]]; then
      cuda_lib_dir=$dir
      cuda_lib_where=$dir
      return
    fi
  done
  local found
  found=$(timeout 60 find / -xdev \( -path /proc -o -path /sys \) -prune -o \
    -name "${needed[0]}" -print -quit 2> /dev/null)
  if [[ -n $found ]]; then
    cuda_lib_dir=$(dirname "$found")
    cuda_lib_where="$cuda_lib_dir (found with find)"
  else
    cuda_lib_where="NOT FOUND: ${needed[*]} are in no searched place"
  fi
}

# Sets cudnn_lib_dir to the folder holding cuDNN (libcudnn.so.9 and its sub-libraries, which the
# convolutions load with dlopen: never carried), left empty when the loader finds it already or
# when the machine has none (the convolutions then run tandem's im2col kernels), and
# cudnn_lib_where to what was found.
cudnn_lib_dir=""
cudnn_lib_where=""
find_machine_cudnn() {
  local cache
  cache=$(ldconfig -p 2> /dev/null)
  if grep -qF "libcudnn.so.9 " <<< "$cache"; then
    cudnn_lib_where="in the loader's cache"
    return
  fi
  local candidates=("${TANDEM_CUDNN_LIB_DIR:-}" "$cuda_lib_dir" /usr/local/cuda/lib64
    /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib)
  local python_dirs dir
  python_dirs=$(python3 -c 'import nvidia; print("\n".join(nvidia.__path__))' 2> /dev/null)
  while read -r dir; do
    [[ -n $dir ]] && candidates+=("$dir"/cudnn/lib "$dir"/*/lib)
  done <<< "$python_dirs"
  for dir in "${candidates[@]}"; do
    if [[ -n $dir && -e $dir/libcudnn.so.9 ]]; then
      cudnn_lib_dir=$dir
      cudnn_lib_where=$dir
      return
    fi
  done
  cudnn_lib_where="NOT FOUND: no libcudnn.so.9 (convolutions use tandem's im2col kernels)"
}

find_machine_cuda_libs
find_machine_cudnn
# The machine's own library path stays last: it may hold the driver (e.g. /usr/local/nvidia/lib64).
export LD_LIBRARY_PATH=$bundle/lib${cuda_lib_dir:+:$cuda_lib_dir}${cudnn_lib_dir:+:$cudnn_lib_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The bundle's libstdc++/libgcc_s only where the machine's are older than the build's.
if grep -q "GLIBCXX.* not found" <<< "$(ldd "$bin/frontend_tests" 2>&1)"; then
  LD_LIBRARY_PATH=$bundle/lib:$bundle/lib/compat:${LD_LIBRARY_PATH#"$bundle"/lib:}
fi

# ---- steps (scripts/gpu-check-steps.sh) ------------------------------------------------------

# shellcheck source=scripts/gpu-check-steps.sh
source "$repo/scripts/gpu-check-steps.sh"

# run_step NAME: runs step_NAME under its own time limit (cut to what is left of the budget)
# with its output in NAME.log, and writes its line in summary.txt. Sets step_status.
step_status=0
run_step() {
  local name=$1
  step_status=0
  if [[ -n $only && ",$only," != *",$name,"* ]]; then
    return
  fi
  local left=$((budget - (SECONDS - started) - RESERVE_S))
  local limit=${LIMIT_S[$name]}
  ((limit <= left)) || limit=$left
  if ((limit < 20)); then
    printf '%-9s %-14s %s\n' NOT-RUN "$name" \
      "out of the time budget: run again with --only $name" >> "$summary"
    failed=1
    step_status=1
    return
  fi
  echo "== gpu-check: $name (limit ${limit} s)"
  local start=$SECONDS log=$results/$name.log
  local function=step_${name//-/_}
  export -f "${function:?}"
  timeout -k 10 "$limit" bash -c "$function" > "$log" 2>&1
  step_status=$?
  local seconds=$((SECONDS - start)) result=PASS
  if ((step_status == 124 || step_status == 137)); then
    result=TIMEOUT
  elif [[ $name == device && $step_status -eq $EXIT_NO_DEVICE ]]; then
    result=NO-DEVICE
  elif ((step_status != 0)); then
    result=FAIL
  fi
  printf '%-9s %-14s %4d s\n' "$result" "$name" "$seconds" >> "$summary"
  if [[ $result != PASS ]]; then
    failed=1
    echo "gpu-check: $name: $result (exit $step_status); the end of $name.log:"
    tail -n 25 "$log"
  fi
}

# What the step functions use in their own bash (run_step starts each in one).
export bin bundle repo results cuda_lib_dir cuda_lib_where cudnn_lib_dir cudnn_lib_where
export quick_flag=${quick[*]}
export -f manifest_value

{
  echo "gpu-check: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) ($(uname -r));" \
    "bundle from commit $(manifest_value commit), built $(manifest_value built)"
} >> "$summary"
{
  uname -a
  cat /etc/os-release 2> /dev/null
  nproc
  free -g 2> /dev/null
  env | grep -E '^(CUDA|NVIDIA|LD_LIBRARY_PATH|PATH)' | sort
} > "$results/machine.txt" 2>&1

for step in "${STEPS[@]}"; do
  run_step "$step"
  if [[ $step == libraries && $step_status -ne 0 ]]; then
    note "the bundle does not run on this machine (libraries.log says why): stopping"
    finish "$EXIT_NO_BUNDLE"
  fi
  if [[ $step == device && $step_status -ne 0 && $force -eq 0 ]]; then
    if ((step_status == EXIT_NO_DEVICE)); then
      note "NO CUDA DEVICE: the device step found none (device.log: nvidia-smi and gpu_probe)."
    else
      note "the device check failed (exit $step_status; device.log: nvidia-smi and gpu_probe)."
    fi
    note "The other steps need a device: stopping with exit $EXIT_NO_DEVICE" \
      "(--force runs them anyway)."
    finish "$EXIT_NO_DEVICE"
  fi
done
((failed == 0)) || finish "$EXIT_FAILED"
finish 0
