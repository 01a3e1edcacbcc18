#!/usr/bin/env bash
# Installs what is missing, builds tandem (Release, in build/) and runs the demo programs:
# engine_demo (async vs sync, copy/compute overlap), async_demo (NDArray: the seeds'
# asynchronous computation), then accel_parallel (the seeds' CPU || accelerator and compute ||
# copy programs on sim(0)), as listed in DEMO_PROGRAMS in scripts/lib.sh; missing ones are
# skipped.
#
#   bash scripts/demo.sh            # the full demos
#   bash scripts/demo.sh --quick    # shorter runs (arguments are passed to every demo)
#
# Each demo runs with TANDEM_PROFILE set: its trace, summary tables and timeline picture land in
# out/traces/<demo>.{json,summary.txt,svg} (docs/measuring-overlap.md).
#
# Environment: TANDEM_BUILD_DIR (default build), TANDEM_TRACE_DIR (default out/traces),
# TANDEM_JOBS (default 2), and the engine's TANDEM_* settings (docs/environment.md).
set -euo pipefail

SCRIPT_NAME=demo.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TANDEM_ROOT"

BUILD_DIR="${TANDEM_BUILD_DIR:-build}"

bash scripts/setup.sh
cmake_configure "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTANDEM_CUDA=AUTO -DTANDEM_SANITIZE= \
  -DTANDEM_BUILD_EXAMPLES=ON

# Build only the demos (not the test suite); a demo whose target does not exist yet is skipped.
targets_help="$(cmake --build "$BUILD_DIR" --target help)"
targets=()
for program in "${DEMO_PROGRAMS[@]}"; do
  if grep -q "^${program}:" <<<"$targets_help"; then
    targets+=("$program")
  else
    log "skipping ${program}: no such target in this checkout"
  fi
done
((${#targets[@]} > 0)) || die "none of the demo targets exists (looked for: ${DEMO_PROGRAMS[*]})"
cmake --build "$BUILD_DIR" --parallel "$TANDEM_JOBS" --target "${targets[@]}" tandem_trace

# Every demo runs with the profiler on (TANDEM_PROFILE) and leaves its trace, its summary and
# its timeline picture in $TRACE_DIR (docs/measuring-overlap.md explains how to read them).
TRACE_DIR="${TANDEM_TRACE_DIR:-out/traces}"
for program in "${targets[@]}"; do
  printf '\n'
  run_demo_program "$BUILD_DIR" "$program" "$TRACE_DIR" "$@"
done
