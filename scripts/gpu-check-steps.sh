# shellcheck shell=bash
# shellcheck disable=SC2317,SC2154  # the steps are called through run_step; gpu-check.sh sets the folders
# The steps of scripts/gpu-check.sh: step_NAME runs the step NAME with its output on stdout (the
# step's log) and returns non-zero when the step fails. Sourced by gpu-check.sh, which runs each
# in its own bash under a time limit (so each is exported, with the helpers below) and gives
# them: bin, bundle, repo, results (folders), cuda_lib_where, quick_flag ("--quick" or empty),
# manifest_value, and LD_LIBRARY_PATH set for the bundle.

# The test cases of frontend.devices and frontend.multi_device that move one array across
# devices and back (the round trips of the correctness issue); doctest filter syntax.
readonly ROUND_TRIP_CASES='copies between every pair of devices*,accelerator -> cpu -> accelerator*,cpu -> accelerator -> cpu*,two allreduce calls*'
# What the programs print when they find no GPU (tests/cuda, tests/frontend, bench/overlap,
# examples). A "SKIPPED: one CUDA device, no peer copy to try" is not one of these.
readonly SKIP_MARKER='SKIPPED.*(no CUDA device|no gpu device|gpu\(0\) is not available)'

# Runs COMMAND with its output going to the step's log as it comes (so that a step cut off by
# its time limit still shows how far it got) and copied to the file CAPTURE for later checks.
logged() {
  local capture=$1
  shift
  "$@" 2>&1 | tee "$capture"
  return "${PIPESTATUS[0]}"
}

# Fails when the output in file CAPTURE shows that a program found no GPU.
ran_on_gpu() {
  if grep -E "$SKIP_MARKER" "$1" > /dev/null; then
    echo "gpu-check: the GPU part was SKIPPED: the CUDA runtime saw no device" >&2
    return 1
  fi
}

# Runs a doctest program, fails when it fails, ran no test case or skipped the GPU.
doctest_on_gpu() {
  local capture status=0
  capture=$(mktemp)
  logged "$capture" "$@" --no-intro=true || status=$?
  ((status == 0)) || return "$status"
  if grep -Eq 'test cases: +0 ' "$capture"; then
    echo "gpu-check: no test case matched: $*" >&2
    return 1
  fi
  ran_on_gpu "$capture"
}

step_libraries() {
  echo "bundle: $bundle"
  cat "$bundle/MANIFEST.txt"
  (cd "$bundle" && sha256sum --check --quiet SHA256SUMS) || {
    echo "gpu-check: the bundle is incomplete or damaged (checksums above)" >&2
    return 1
  }
  echo "machine: $(ldd --version | sed -n 1p); the bundle needs $(manifest_value needs_glibc)"
  echo "machine cuBLAS: $cuda_lib_where"
  echo "machine cuDNN: $cudnn_lib_where"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  local program listing status=0
  for program in "$bin"/*; do
    listing=$(ldd "$program" 2>&1)
    printf '== %s\n%s\n' "${program##*/}" "$listing"
    if grep -q "not found" <<< "$listing"; then
      echo "gpu-check: ${program##*/} does not find: $(grep "not found" <<< "$listing" | xargs)" >&2
      status=1
    fi
  done
  if ((status != 0)); then
    echo "gpu-check: libraries are missing (above). cuBLAS 13 comes from this machine: it was" \
      "looked for in the loader cache, /usr/local/cuda*, CUDA's pip wheels and with find;" \
      "set TANDEM_CUDA_LIB_DIR to the folder holding libcublas.so.13" >&2
  fi
  return "$status"
}

step_device() {
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi || echo "gpu-check: nvidia-smi failed"
  else
    echo "gpu-check: no nvidia-smi on the PATH"
  fi
  "$bin/gpu_probe"
}

step_cuda_tests() {
  doctest_on_gpu "$bin/cuda_tests"
}

step_frontend_cuda() {
  doctest_on_gpu "$bin/frontend_tests" --test-suite=frontend.devices,frontend.multi_device \
    "--test-case-exclude=$ROUND_TRIP_CASES"
}

step_round_trips() {
  local status=0
  doctest_on_gpu "$bin/frontend_tests" --test-suite=frontend.devices,frontend.multi_device \
    "--test-case=$ROUND_TRIP_CASES" || status=1
  # Mixed cpu and accelerator chains against the naive engine (they draw their accelerators
  # from sim; on a GPU machine they run there too, as the rest of the suite does).
  "$bin/frontend_tests" --no-intro=true \
    --test-suite=frontend.differential,frontend.differential_errors || status=1
  return "$status"
}

step_frontend() {
  local status=0
  "$bin/frontend_tests" --no-intro=true \
    --test-suite-exclude=frontend.devices,frontend.multi_device,frontend.differential,frontend.differential_errors ||
    status=1
  "$bin/frontend_oom_tests" --no-intro=true || status=1
  return "$status"
}

step_examples() {
  local status=0 capture
  capture=$(mktemp)
  logged "$capture" "$bin/devices" || status=1
  grep -q "a on gpu(0):" "$capture" || {
    echo "gpu-check: the devices example made no array on gpu(0)" >&2
    status=1
  }
  logged "$capture" "$bin/accel_parallel" ${quick_flag:+--quick} --cuda || status=1
  ran_on_gpu "$capture" || status=1
  logged "$capture" "$bin/multi_device" ${quick_flag:+--quick} --cuda || status=1
  ran_on_gpu "$capture" || status=1
  return "$status"
}

# Writes bench/results/SUITE.meta.json for a run that started at START (bash's SECONDS), with
# the GPU's name and the bundle's commit (the copy of the repository here may have no .git),
# then regenerates docs/benchmarks.md.
record_bench_run() {
  local suite=$1 start=$2 gpu
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | sed -n 1p)
  python3 "$repo/bench/report.py" --record-run "$suite" \
    --command "scripts/gpu-check.sh${quick_flag:+ --quick}" --seconds $((SECONDS - start)) \
    --note "on ${gpu:-a GPU machine}: gpu-bundle built from commit $(manifest_value commit)" ||
    return 1
  python3 - "$repo/bench/results/$suite.meta.json" "$(manifest_value commit)" \
    "$(manifest_value uncommitted_changes)" << 'EOF' || return 1
import json, sys
path, commit, dirty = sys.argv[1:]
with open(path) as f:
    meta = json.load(f)
if meta.get("git_commit", "unknown") == "unknown":
    meta["git_commit"], meta["uncommitted_changes"] = commit, dirty == "yes"
with open(path, "w") as f:
    f.write(json.dumps(meta, indent=2) + "\n")
EOF
  python3 "$repo/bench/report.py"
}

step_bench_overlap() {
  local records=$repo/bench/results/overlap.json start=$SECONDS capture status=0
  capture=$(mktemp)
  logged "$capture" "$bin/bench_overlap" ${quick_flag:+--quick} --out "$records" || status=$?
  ((status == 0)) || return "$status"
  ran_on_gpu "$capture" || return 1
  grep -q '"gpu(0)"' "$records" || {
    echo "gpu-check: $records has no gpu(0) rows" >&2
    return 1
  }
  mkdir -p "$results/bench-results"
  cp "$records" "$results/bench-results/"
  if ! command -v python3 > /dev/null; then
    echo "gpu-check: no python3: the records are kept, docs/benchmarks.md is not regenerated"
    return 0
  fi
  record_bench_run overlap "$start" || return 1
  cp "$repo/bench/results/overlap.meta.json" "$results/bench-results/"
  cp "$repo/docs/benchmarks.md" "$results/"
}

# bench_gpu (bench/gpu: the workloads of issue 22 on gpu(0)) and its PyTorch peer, with the
# machine's own torch when python3 imports it (never installed): bench/results/gpu.json, its
# provenance and the regenerated docs/benchmarks.md; profile/ holds one lenet_bn epoch on gpu(0)
# per mode (eager, hybridized, hybridized_one_unit, whole_step) under the profiler (trace,
# summary, timeline).
step_bench_gpu() {
  local records=$repo/bench/results/gpu.json start=$SECONDS fresh
  fresh=$(mktemp)
  rm -f "$fresh"
  "$bin/bench_gpu" ${quick_flag:+--quick} --profile "$results/profile" --out "$fresh" || return $?
  if [[ ! -s $fresh ]]; then
    echo "gpu-check: bench_gpu wrote no records (it found no CUDA device)" >&2
    return 1
  fi
  mv "$fresh" "$records"
  mkdir -p "$results/bench-results"
  if ! command -v python3 > /dev/null; then
    cp "$records" "$results/bench-results/"
    echo "gpu-check: no python3: no PyTorch peer; the records are kept, docs not regenerated"
    return 0
  fi
  # The peer records itself as skipped (and why) when torch is missing or sees no GPU.
  timeout 300 python3 "$repo/bench/gpu/torch_peer.py" --results "$records" ${quick_flag:+--quick} ||
    echo "gpu-check: the PyTorch peer failed (exit $?); tandem's records are kept"
  # The JAX peer of the whole training step (the machine's own jax; skipped with its reason).
  timeout 120 python3 "$repo/bench/gpu/jax_peer.py" --results "$records" ${quick_flag:+--quick} ||
    echo "gpu-check: the JAX peer failed (exit $?); the other records are kept"
  cp "$records" "$results/bench-results/"
  record_bench_run gpu "$start" || return 1
  cp "$repo/bench/results/gpu.meta.json" "$results/bench-results/"
  cp "$repo/docs/benchmarks.md" "$results/"
}

# The compute-sanitizer of the machine's CUDA installation.
find_compute_sanitizer() {
  if [[ -n ${TANDEM_COMPUTE_SANITIZER:-} ]]; then
    echo "$TANDEM_COMPUTE_SANITIZER"
    return
  fi
  command -v compute-sanitizer && return
  local candidate
  for candidate in /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer \
    /usr/local/cuda-*/compute-sanitizer/compute-sanitizer \
    /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
    [[ -x $candidate ]] && {
      echo "$candidate"
      return
    }
  done
  timeout 30 find /usr/local /opt -maxdepth 6 -name compute-sanitizer -type f -perm -u+x \
    -print -quit 2> /dev/null
}

sanitize() {
  local tool=$1 sanitizer
  sanitizer=$(find_compute_sanitizer)
  if [[ -z $sanitizer ]]; then
    echo "gpu-check: compute-sanitizer NOT FOUND (looked on the PATH, in /usr/local/cuda*," \
      "/opt/nvidia; set TANDEM_COMPUTE_SANITIZER to its path)" >&2
    return 1
  fi
  echo "$sanitizer: $("$sanitizer" --version | tail -n 1)"
  # CUDA API errors are not counted: the failure-path tests provoke some on purpose and check
  # them themselves; what fails the step is what the tool finds in the kernels and copies.
  local options=(--tool "$tool" --error-exitcode 99 --print-limit 50 --report-api-errors no)
  local status=0
  doctest_on_gpu "$sanitizer" "${options[@]}" "$bin/cuda_tests" || status=1
  # The front end's kernels on cuda(0), at a tenth of the sizes: the tool slows kernels a lot.
  TANDEM_TEST_SCALE=0.1 doctest_on_gpu "$sanitizer" "${options[@]}" "$bin/frontend_tests" \
    --test-suite=frontend.devices || status=1
  return "$status"
}

step_memcheck() { sanitize memcheck; }
step_synccheck() { sanitize synccheck; }

export ROUND_TRIP_CASES SKIP_MARKER
export -f logged ran_on_gpu doctest_on_gpu find_compute_sanitizer sanitize record_bench_run
