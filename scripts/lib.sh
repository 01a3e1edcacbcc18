# Helpers shared by scripts/*.sh. Source it; it does not run anything by itself.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Stages: `run_stage NAME FUNCTION [ARGS...]` runs FUNCTION with `set -e` in force (it must be
# called as a plain statement, never inside `if`, `&&` or `||`, where bash switches errexit off),
# times it and records the result. `finish_stages` prints the summary. When a stage fails the
# script exits at once, and the EXIT trap installed by `begin_stages` prints which stage failed
# and the summary of the stages run so far.

# shellcheck shell=bash

TANDEM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Build parallelism: the project's machines have 2 cores shared with others.
TANDEM_JOBS="${TANDEM_JOBS:-2}"
# The demo programs that scripts/demo.sh runs and the demo stage of scripts/test.sh smoke-tests,
# in this order, as build/examples/<name>/<name>. Those not built (yet) are skipped.
# shellcheck disable=SC2034  # used by the scripts that source this file
DEMO_PROGRAMS=(engine_demo async_demo accel_parallel)

# Runs build/examples/PROGRAM/PROGRAM with the profiler on and leaves its trace (PROGRAM.json),
# the trace's summary tables (PROGRAM.summary.txt) and timeline picture (PROGRAM.svg) in
# TRACE_DIR. Fails when the program fails or writes no trace.
#   run_demo_program BUILD_DIR PROGRAM TRACE_DIR [ARGS...]
run_demo_program() {
  local build_dir=$1 program=$2 trace_dir=$3
  shift 3
  local path="${build_dir}/examples/${program}/${program}"
  local trace="${trace_dir}/${program}.json"
  local trace_tool="${build_dir}/engine/tandem-trace"
  [[ -x "$path" ]] || die "${program} was built, but not at ${path}"
  [[ -x "$trace_tool" ]] || die "tandem-trace was not built at ${trace_tool}"
  mkdir -p "$trace_dir"
  rm -f "$trace"
  log "running ${path} $*  (TANDEM_PROFILE=${trace})"
  TANDEM_PROFILE="$trace" "$path" "$@"
  [[ -s "$trace" ]] || die "${program} did not write its trace ${trace}"
  "$trace_tool" summary "$trace" >"${trace_dir}/${program}.summary.txt"
  "$trace_tool" timeline "$trace" "${trace_dir}/${program}.svg"
  log "${program}: trace ${trace}, summary ${trace_dir}/${program}.summary.txt," \
    "timeline ${trace_dir}/${program}.svg"
}

log() {
  printf '[%s %s] %s\n' "${SCRIPT_NAME:-tandem}" "$(date +%H:%M:%S)" "$*"
}

die() {
  printf '[%s] ERROR: %s\n' "${SCRIPT_NAME:-tandem}" "$*" >&2
  exit 1
}

# 75 -> "1:15"
format_seconds() {
  printf '%d:%02d' $(($1 / 60)) $(($1 % 60))
}

# Configures a CMake build directory with Ninja. A directory configured earlier with another
# generator cannot be reused by CMake; its cache is removed (the sources are never touched).
cmake_configure() {
  local build_dir=$1
  shift
  local cache="${build_dir}/CMakeCache.txt"
  if [[ -f "$cache" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    log "${build_dir} was configured with another generator; removing its CMake cache"
    rm -rf "$cache" "${build_dir}/CMakeFiles"
  fi
  cmake -S "$TANDEM_ROOT" -B "$build_dir" -G Ninja "$@"
}

cmake_build() {
  cmake --build "$1" --parallel "$TANDEM_JOBS"
}

# ---- stages -------------------------------------------------------------------------------------

STAGE_NAMES=()
STAGE_RESULTS=()
STAGE_SECONDS=()
CURRENT_STAGE=""
CURRENT_STAGE_START=0
STAGES_START=$SECONDS

begin_stages() {
  STAGES_START=$SECONDS
  trap on_stages_exit EXIT
}

run_stage() {
  local name=$1
  shift
  CURRENT_STAGE=$name
  CURRENT_STAGE_START=$SECONDS
  printf '\n'
  log "==== stage '${name}' ===="
  "$@"
  STAGE_NAMES+=("$name")
  STAGE_RESULTS+=("PASS")
  STAGE_SECONDS+=($((SECONDS - CURRENT_STAGE_START)))
  log "==== stage '${name}' passed in $(format_seconds $((SECONDS - CURRENT_STAGE_START))) ===="
  CURRENT_STAGE=""
}

print_stage_summary() {
  local i
  printf '\n%s summary:\n' "${SCRIPT_NAME:-tandem}"
  for i in "${!STAGE_NAMES[@]}"; do
    printf '  %-4s  %-34s %8s\n' "${STAGE_RESULTS[$i]}" "${STAGE_NAMES[$i]}" \
      "$(format_seconds "${STAGE_SECONDS[$i]}")"
  done
}

on_stages_exit() {
  local rc=$?
  if [[ -n "$CURRENT_STAGE" ]]; then
    STAGE_NAMES+=("$CURRENT_STAGE")
    STAGE_RESULTS+=("FAIL")
    STAGE_SECONDS+=($((SECONDS - CURRENT_STAGE_START)))
    ((rc != 0)) || rc=1
  fi
  if [[ -n "$CURRENT_STAGE" ]] || ((rc != 0 && ${#STAGE_NAMES[@]} > 0)); then
    print_stage_summary
  fi
  if [[ -n "$CURRENT_STAGE" ]]; then
    printf '%s: FAILED at stage %s (exit code %d) after %s; the error is above the summary.\n' \
      "${SCRIPT_NAME:-tandem}" "'${CURRENT_STAGE}'" "$rc" \
      "$(format_seconds $((SECONDS - STAGES_START)))" >&2
  elif ((rc != 0)); then
    printf '%s: FAILED (exit code %d)\n' "${SCRIPT_NAME:-tandem}" "$rc" >&2
  fi
  exit "$rc"
}

finish_stages() {
  print_stage_summary
  printf '%s: all %d stages passed in %s\n' "${SCRIPT_NAME:-tandem}" "${#STAGE_NAMES[@]}" \
    "$(format_seconds $((SECONDS - STAGES_START)))"
}
