#!/usr/bin/env bash
# Installs what is missing, builds tandem and runs every test. This is what CI runs (.ci/run).
#
#   bash scripts/test.sh                # every stage, in this order:
#     main    RelWithDebInfo build in build/ (CUDA AUTO), ctest: every test
#     tsan    ThreadSanitizer build in build-tsan/, ctest -R 'engine|dist|fuzz_ops',
#             TANDEM_TEST_SCALE=0.05, the op-sequence fuzzer for 30 s
#     asan    ASan+UBSan build in build-asan/, ctest: every test, TANDEM_TEST_SCALE=0.05,
#             the file fuzzer (fuzz_files) and the op-sequence fuzzer (fuzz_ops) for 60 s each
#     embed   cmake --install build/ into a temporary prefix, then build and run against the
#             installed package: examples/embed, an engine-only consumer (COMPONENTS engine,
#             without BLAS or nlohmann-json), a program linking every exported target and a
#             front-end application (tests/installed/frontend_consumer)
#     demo    run the demo programs of build/ in their short --quick form
#   bash scripts/test.sh tsan asan      # only the stages named (setup always runs first)
#
# Stops at the first failure, naming the stage; prints one summary line per stage at the end.
# Environment: TANDEM_BUILD_DIR (default build; the sanitizer builds go to <dir>-tsan and
# <dir>-asan), TANDEM_JOBS (default 2). See docs/building.md.
set -euo pipefail

SCRIPT_NAME=test.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TANDEM_ROOT"

BUILD_DIR="${TANDEM_BUILD_DIR:-build}"
TSAN_DIR="${BUILD_DIR}-tsan"
ASAN_DIR="${BUILD_DIR}-asan"
# The sanitizer runs scale the stress tests down: sanitized code runs 5-20x slower.
SANITIZER_TEST_SCALE=0.05
# ctest's limit per test (tests may set their own TIMEOUT property): a hang fails, it never stalls CI.
CTEST_TIMEOUT=1200
ALL_STAGES=(main tsan asan embed demo)

stage_setup() {
  bash "${TANDEM_ROOT}/scripts/setup.sh"
}

run_ctest() {
  local build_dir=$1
  shift
  ctest --test-dir "$build_dir" --output-on-failure --no-tests=error --timeout "$CTEST_TIMEOUT" "$@"
}

configure_main() {
  cmake_configure "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_CUDA=AUTO \
    -DTANDEM_SANITIZE= -DTANDEM_BUILD_TESTS=ON -DTANDEM_BUILD_EXAMPLES=ON
}

stage_main() {
  configure_main
  cmake_build "$BUILD_DIR"
  run_ctest "$BUILD_DIR"
}

# ThreadSanitizer needs its shadow memory at fixed addresses. With gcc 12's TSan and the high
# mmap ASLR entropy of newer kernels (vm.mmap_rnd_bits = 32), a binary can be mapped where TSan
# expects shadow memory, and it dies with "FATAL: ThreadSanitizer: unexpected memory mapping".
# A tiny probe tells whether that happens here; if so the TSan tests run with ASLR off for their
# process tree (`setarch <arch> -R`, inherited through ctest's fork/exec). Sets TSAN_LAUNCHER.
TSAN_LAUNCHER=()
choose_tsan_launcher() {
  local probe_dir
  probe_dir="$(mktemp -d)"
  printf '%s\n' '#include <thread>' 'int shared = 0;' \
    'int main() { std::thread t([] { shared = 1; }); t.join(); return shared == 1 ? 0 : 1; }' \
    >"${probe_dir}/probe.cc"
  "${CXX:-c++}" -std=c++20 -fsanitize=thread -O1 "${probe_dir}/probe.cc" -o "${probe_dir}/probe"
  local i ok=1
  for i in 1 2 3 4 5; do
    if ! "${probe_dir}/probe" >"${probe_dir}/out.txt" 2>&1; then
      ok=0
      log "TSan probe run ${i} failed: $(head -c 300 "${probe_dir}/out.txt")"
      break
    fi
  done
  if ((ok)); then
    log "TSan runs fine with ASLR on (vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?'))"
    rm -rf "$probe_dir"
    return 0
  fi
  local arch
  arch="$(uname -m)"
  if ! setarch "$arch" -R "${probe_dir}/probe" >"${probe_dir}/out.txt" 2>&1; then
    cat "${probe_dir}/out.txt" >&2
    rm -rf "$probe_dir"
    die "ThreadSanitizer binaries do not run here, with or without ASLR (setarch ${arch} -R)"
  fi
  log "TSan crashes with ASLR on (high mmap entropy); running the TSan tests under 'setarch ${arch} -R'"
  TSAN_LAUNCHER=(setarch "$arch" -R)
  rm -rf "$probe_dir"
}

stage_tsan() {
  cmake_configure "$TSAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=thread \
    -DTANDEM_ASSERTIONS=ON -DTANDEM_CUDA=OFF -DTANDEM_BUILD_TESTS=ON -DTANDEM_BUILD_EXAMPLES=OFF
  cmake_build "$TSAN_DIR"
  choose_tsan_launcher
  # TSAN_OPTIONS (the suppressions for the uninstrumented libtbb, tests/engine/tsan.supp, and
  # for the MPI tests Open MPI's, tests/dist/tsan.supp) is set per test by the tests'
  # CMakeLists.txt, so a by-hand ctest run gets it too. The MPI tests (dist_*: the comm thread)
  # run here too when MPI was found.
  # fuzz_ops (tests/fuzz) replays its corpus (about 20 s under TSan) and fuzzes until 30 s.
  TANDEM_TEST_SCALE="$SANITIZER_TEST_SCALE" TANDEM_FUZZ_SECONDS=30 \
    "${TSAN_LAUNCHER[@]}" ctest --test-dir "$TSAN_DIR" --output-on-failure --no-tests=error \
    --timeout "$CTEST_TIMEOUT" -R 'engine|dist|fuzz_ops'
}

stage_asan() {
  cmake_configure "$ASAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=address \
    -DTANDEM_ASSERTIONS=ON -DTANDEM_CUDA=OFF -DTANDEM_BUILD_TESTS=ON -DTANDEM_BUILD_EXAMPLES=OFF
  cmake_build "$ASAN_DIR"
  # fuzz_files and fuzz_ops (tests/fuzz) replay their corpus, then run for TANDEM_FUZZ_SECONDS:
  # 10 s each in the main stage, 60 s each here (fuzz_ops also 30 s in the tsan stage).
  TANDEM_TEST_SCALE="$SANITIZER_TEST_SCALE" TANDEM_FUZZ_SECONDS=60 \
    ASAN_OPTIONS=detect_leaks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest "$ASAN_DIR"
}

# Installs build/ into a fresh prefix and builds examples/embed against it the way a user would:
# only CMAKE_PREFIX_PATH points at tandem, and the example has no access to the source tree.
stage_embed() {
  if [[ ! -f "${BUILD_DIR}/CMakeCache.txt" ]]; then
    configure_main
  fi
  cmake_build "$BUILD_DIR"
  local work prefix
  work="$(mktemp -d "${TMPDIR:-/tmp}/tandem-embed.XXXXXX")"
  prefix="${work}/prefix"
  cmake --install "$BUILD_DIR" --prefix "$prefix"
  local file
  for file in include/tandem/engine.h lib/cmake/tandem/tandemConfig.cmake \
    lib/cmake/tandem/tandemConfigVersion.cmake lib/cmake/tandem/tandemEngineTargets.cmake; do
    [[ -f "${prefix}/${file}" ]] || die "cmake --install did not install ${file}"
  done
  # A copy of the example outside the repository: it must build from the installed files alone.
  cp -r "${TANDEM_ROOT}/examples/embed" "${work}/embed"
  cmake -S "${work}/embed" -B "${work}/embed-build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  cmake --build "${work}/embed-build" --parallel "$TANDEM_JOBS"
  "${work}/embed-build/embed"
  check_engine_only_consumer "$work" "$prefix"
  check_all_exported_targets "$work" "$prefix"
  check_frontend_consumer "$work" "$prefix"
  rm -rf "$work"
}

# An application that uses only the engine: find_package(tandem COMPONENTS engine) must load
# tandem::engine alone and never look for BLAS or nlohmann_json. Both are disabled for this
# configure (CMAKE_DISABLE_FIND_PACKAGE_*: a find_package of either fails, REQUIRED or not), and
# the layers above the engine must not be imported; then the program links and runs.
check_engine_only_consumer() {
  local work=$1 prefix=$2
  mkdir -p "${work}/engine-only"
  cat >"${work}/engine-only/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(engine_only LANGUAGES CXX)
find_package(tandem REQUIRED COMPONENTS engine)
foreach(layer tandem::ops tandem::tandem)
  if(TARGET ${layer})
    message(FATAL_ERROR "find_package(tandem COMPONENTS engine) imported ${layer}")
  endif()
endforeach()
add_executable(engine_only main.cc)
target_link_libraries(engine_only PRIVATE tandem::engine)
CMAKE
  cat >"${work}/engine-only/main.cc" <<'CPP'
#include <tandem/engine.h>

#include <cstdio>

int main() {
  tandem::EngineConfig config;
  config.cpu_workers = 2;
  tandem::Engine::set_default(config);
  tandem::Engine& engine = tandem::Engine::get();
  tandem::Var v = engine.new_var();
  int value = 0;
  engine.push([&value] { value = 42; }, tandem::cpu(), {}, {v});
  engine.wait_for_var(v);
  engine.delete_var(v);
  std::printf("engine-only consumer: %d CPU workers, value %d\n", engine.cpu_workers(), value);
  return value == 42 && engine.cpu_workers() == 2 ? 0 : 1;
}
CPP
  cmake -S "${work}/engine-only" -B "${work}/engine-only-build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_BLAS=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
  if grep -qiE 'lib(open)?blas' "${work}/engine-only-build/build.ninja"; then
    die "the engine-only consumer's link line names BLAS"
  fi
  cmake --build "${work}/engine-only-build"
  "${work}/engine-only-build/engine_only"
  log "an engine-only consumer configures, links and runs with COMPONENTS engine"
}

# Links one program against every target the package exports (tandem::engine, and the layers
# above it when they are installed): the imported targets' link interfaces must resolve, e.g.
# a static library's private dependencies need a find_dependency in tandemConfig.cmake.
check_all_exported_targets() {
  local work=$1 prefix=$2
  mkdir -p "${work}/all-targets"
  cat >"${work}/all-targets/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(all_targets LANGUAGES CXX)
find_package(tandem REQUIRED)
get_directory_property(imported IMPORTED_TARGETS)
list(FILTER imported INCLUDE REGEX "^tandem::")
message(STATUS "tandem's exported targets: ${imported}")
# Without COMPONENTS the whole installed package is loaded.
foreach(target tandem::engine tandem::ops tandem::tandem)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "find_package(tandem) without COMPONENTS did not import ${target}")
  endif()
endforeach()
add_executable(all_targets main.cc)
target_link_libraries(all_targets PRIVATE ${imported})
CMAKE
  printf '%s\n' '#include <tandem/engine.h>' \
    'int main() { tandem::Engine::get().wait_all(); return 0; }' >"${work}/all-targets/main.cc"
  cmake -S "${work}/all-targets" -B "${work}/all-targets-build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  cmake --build "${work}/all-targets-build"
  "${work}/all-targets-build/all_targets"
  log "every exported target links from the installed package"
}

# A front-end application (tests/installed/frontend_consumer, copied out of the tree): trains
# with autograd and a Trainer on cpu and sim(0), hybridizes, exports and loads the export,
# calls autograd::grad, runs a loop under AutoCapture, from the installed package alone.
check_frontend_consumer() {
  local work=$1 prefix=$2
  cp -r "${TANDEM_ROOT}/tests/installed/frontend_consumer" "${work}/frontend-consumer"
  cmake -S "${work}/frontend-consumer" -B "${work}/frontend-consumer-build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  cmake --build "${work}/frontend-consumer-build" --parallel "$TANDEM_JOBS"
  "${work}/frontend-consumer-build/frontend_consumer"
  log "a front-end application (train, hybridize, export, import) runs from the installed package"
}

stage_demo() {
  if [[ ! -f "${BUILD_DIR}/CMakeCache.txt" ]]; then
    configure_main
  fi
  cmake_build "$BUILD_DIR"
  local program ran=0
  for program in "${DEMO_PROGRAMS[@]}"; do
    if [[ ! -x "${BUILD_DIR}/examples/${program}/${program}" ]]; then
      log "skipping ${program}: it was not built"
      continue
    fi
    run_demo_program "$BUILD_DIR" "$program" "${BUILD_DIR}/demo-traces" --quick
    ran=$((ran + 1))
  done
  ((ran > 0)) || die "no demo program was built (looked for: ${DEMO_PROGRAMS[*]})"
}

stages=("$@")
if ((${#stages[@]} == 0)); then
  stages=("${ALL_STAGES[@]}")
fi
for stage in "${stages[@]}"; do
  case "$stage" in
    main | tsan | asan | embed | demo) ;;
    -h | --help)
      sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) die "unknown stage '${stage}' (stages: ${ALL_STAGES[*]})" ;;
  esac
done

declare -A stage_titles=(
  [main]="main: build/ + ctest"
  [tsan]="tsan: ${TSAN_DIR}/ + ctest -R 'engine|dist'"
  [asan]="asan+ubsan: ${ASAN_DIR}/ + ctest"
  [embed]="embed: install + consumers"
  [demo]="demo: examples --quick"
)
stage_titles[main]="main: ${BUILD_DIR}/ + ctest"

begin_stages
run_stage "setup: apt packages" stage_setup
for stage in "${stages[@]}"; do
  run_stage "${stage_titles[$stage]}" "stage_${stage}"
done
finish_stages
