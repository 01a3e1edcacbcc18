#!/usr/bin/env bash
# Makes gpu-bundle/, everything scripts/gpu-check.sh needs on a lent GPU machine that has the
# NVIDIA driver and the CUDA 13 libraries but none of tandem's Debian packages and no network.
# Run it on the development machine (it needs the packages of scripts/setup.sh --bench and the
# CUDA toolkit), usually as `bash scripts/gpu-check.sh --bundle`. The bundle is put together in
# $TANDEM_GPU_BUILD_DIR/bundle/:
#
#   bin/          the test programs, the overlap and gpu benchmarks, three GPU examples and
#                 gpu_probe,
#                 built Release for sm_$CMAKE_CUDA_ARCHITECTURES, stripped
#   lib/          the shared libraries they need that a bare machine lacks (found with ldd):
#                 oneTBB, spdlog, fmt, OpenBLAS and its Fortran runtime, cudart
#   lib/compat/   libstdc++ and libgcc_s, used there only when the machine's are older
#   MANIFEST.txt  which commit and build, what the machine must provide (glibc, the driver,
#                 cuBLAS 13); SHA256SUMS: the files' checksums
#
# and carried as gpu-bundle/bundle.tar.gz (gzip: about a third of the size, which keeps it under
# the 64 MiB a call carries) with a copy of MANIFEST.txt beside it.
#
# Not carried: glibc (the machine has its own), the driver (libcuda, libnvidia-*) and cuBLAS
# (libcublas.so.13 is 54 MB and libcublasLt.so.13 541 MB; the machine's CUDA 13 installation
# provides them and gpu-check.sh finds them there).
#
# Before packing, the bundle is run here with nothing but it and the CUDA library folder on the
# library path (env -i). Ends with the sizes and the device tool's `run` call that uses it.
#
# Environment: TANDEM_GPU_BUILD_DIR (default build-gpu-bundle), CMAKE_CUDA_ARCHITECTURES
# (default 90: H100/H200), TANDEM_JOBS (default 2).
set -euo pipefail
# With pipefail, a reader that stops early (`head`, `grep -q`, awk's `exit`) makes the writer die
# of SIGPIPE, and `x=$(writer | reader)` then ends this script with 141 and no message. Readers
# here therefore read to the end of their input (sed -n 1p, awk without exit, a here-string).

SCRIPT_NAME=gpu-bundle.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TANDEM_ROOT"

BUILD_DIR="${TANDEM_GPU_BUILD_DIR:-build-gpu-bundle}"
# The carried folder: the staged bundle as one gzip tarball (a third of its size, under the
# call's limit) and a copy of its manifest.
BUNDLE=gpu-bundle
BUNDLE_ARCHIVE=$BUNDLE/bundle.tar.gz
ARCH="${CMAKE_CUDA_ARCHITECTURES:-90}"
# Where the bundle is put together (and checked) before it is packed.
STAGE="$(realpath -m "$BUILD_DIR")/bundle"
# What one call of the device tool carries: the working tree and the carried folders together.
LIMIT_BYTES=$((64 * 1024 * 1024))
# Build target -> its path in the build tree. The examples are the three that use gpu(0).
PROGRAMS=(
  cuda_tests:tests/cuda/cuda_tests
  frontend_tests:tests/frontend/frontend_tests
  frontend_oom_tests:tests/frontend/frontend_oom_tests
  bench_overlap:bench/overlap/bench_overlap
  bench_gpu:bench/gpu/bench_gpu
  devices:examples/devices/devices
  accel_parallel:examples/accel_parallel/accel_parallel
  multi_device:examples/multi_device/multi_device
)
# Provided by the GPU machine, never carried (see the header).
MACHINE_LIBS_PATTERN='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libutil|libresolv|libcuda|libnvidia-|libcublas|libcublasLt)(\.|-|$)'
# Carried but used there only when the machine's own are older than what the build needs.
COMPAT_LIBS_PATTERN='^(libstdc\+\+|libgcc_s)\.'
# Loaded by libtbb with dlopen, so ldd does not list it; TBB falls back to malloc without it.
DLOPENED_LIBS=(libtbbmalloc.so.2)

# Ignored by git here and in clones (.gitignore has it too), so the folder travels only when a
# `run` call names it in `carry`.
ignore_bundle() {
  local exclude
  exclude=$(git rev-parse --git-path info/exclude 2> /dev/null) || return 0
  mkdir -p "$(dirname "$exclude")"
  local entry
  for entry in "/$BUNDLE/" /gpu-check-results/; do
    grep -qxF "$entry" "$exclude" 2> /dev/null || echo "$entry" >> "$exclude"
  done
}

check_prerequisites() {
  [[ -x /usr/local/cuda/bin/nvcc ]] || command -v nvcc > /dev/null ||
    die "no CUDA toolkit (nvcc): the bundle is built with the CUDA backend; see docs/toolchain.md"
  pkg-config --exists starpu-1.3 ||
    die "StarPU is missing: bench/CMakeLists.txt needs it to configure the benchmarks;" \
      "run 'bash scripts/setup.sh --bench'"
}

build() {
  mkdir -p "$BUILD_DIR"
  cmake_configure "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTANDEM_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DTANDEM_BUILD_TESTS=ON -DTANDEM_BUILD_EXAMPLES=ON \
    -DTANDEM_BUILD_BENCH=ON -DCMAKE_SKIP_BUILD_RPATH=ON > "$BUILD_DIR/configure.log" 2>&1 || {
    cat "$BUILD_DIR/configure.log" >&2
    die "configuring $BUILD_DIR failed (log above)"
  }
  local targets=() entry
  for entry in "${PROGRAMS[@]}"; do targets+=("${entry%%:*}"); done
  log "building ${targets[*]} in $BUILD_DIR (-j$TANDEM_JOBS)"
  cmake --build "$BUILD_DIR" --parallel "$TANDEM_JOBS" --target "${targets[@]}"
}

# The toolkit the build used (as CMake recorded it) and the folder of its libcudart.
CUDA_ROOT=""
CUDA_LIB=""
find_cuda() {
  CUDA_ROOT=$(sed -n 's/^set(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT "\(.*\)")$/\1/p' \
    "$BUILD_DIR"/CMakeFiles/*/CMakeCUDACompiler.cmake | sed -n 1p)
  [[ -n $CUDA_ROOT ]] || die "$BUILD_DIR does not say which CUDA toolkit it was built with"
  local dir
  for dir in "$CUDA_ROOT/lib64" "$CUDA_ROOT/lib" "$CUDA_ROOT/targets/x86_64-linux/lib"; do
    if [[ -e $dir/libcudart.so ]]; then
      CUDA_LIB=$(cd "$dir" && pwd -P)
      return
    fi
  done
  die "no libcudart.so under $CUDA_ROOT, the CUDA toolkit of $BUILD_DIR"
}

copy_programs() {
  rm -rf "$STAGE"
  mkdir -p "$STAGE/bin" "$STAGE/lib/compat"
  local entry
  for entry in "${PROGRAMS[@]}"; do
    install -m 755 "$BUILD_DIR/${entry#*:}" "$STAGE/bin/"
  done
  g++ -O2 -std=c++20 -Wall -Wextra -Wpedantic -Werror -isystem "$CUDA_ROOT/include" \
    scripts/gpu_probe.cc -L"$CUDA_LIB" -lcudart -o "$STAGE/bin/gpu_probe"
  strip --strip-unneeded "$STAGE"/bin/*
}

# Copies every library the programs load (ldd, so dependencies of dependencies too) except the
# machine's own; fails on any library that cannot be found here.
copy_libraries() {
  local listing
  listing=$(for program in "$STAGE"/bin/*; do
    LD_LIBRARY_PATH="$CUDA_LIB" ldd "$program"
  done)
  if grep -q "not found" <<< "$listing"; then
    grep "not found" <<< "$listing" | sort -u >&2
    die "some libraries the programs need are not found here (above)"
  fi
  local name path
  while read -r name path; do
    [[ $name =~ $MACHINE_LIBS_PATTERN ]] && continue
    if [[ $name =~ $COMPAT_LIBS_PATTERN ]]; then
      cp -L "$path" "$STAGE/lib/compat/$name"
    else
      cp -L "$path" "$STAGE/lib/$name"
    fi
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' <<< "$listing" | sort -u)
  local library cache
  cache=$(ldconfig -p)
  for library in "${DLOPENED_LIBS[@]}"; do
    # Not `ldconfig -p | awk '... exit'`: ldconfig, still writing after awk is gone, died of
    # SIGPIPE and pipefail ended the script with 141 after the build (issue 22).
    path=$(awk -v name="$library" '$1 == name && path == "" { path = $NF } END { print path }' \
      <<< "$cache")
    [[ -n $path ]] && cp -L "$path" "$STAGE/lib/$library"
  done
  chmod 644 "$STAGE"/lib/*.so* "$STAGE"/lib/compat/*
  strip --strip-unneeded "$STAGE"/lib/*.so* "$STAGE"/lib/compat/*
}

# The newest symbol version of `family` (GLIBC, GLIBCXX) that the bundle's files ask for.
newest_version() {
  local family=$1
  objdump -T "$STAGE"/bin/* "$STAGE"/lib/*.so* 2> /dev/null |
    grep -o "${family}_[0-9][0-9.]*" | sort -uV | tail -n 1
}

write_manifest() {
  local commit dirty=no
  commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
  [[ -z $(git status --porcelain --untracked-files=no 2> /dev/null) ]] || dirty=yes
  local programs=() entry
  for entry in "${PROGRAMS[@]}"; do programs+=("${entry%%:*}"); done
  {
    echo "# gpu-bundle: made by scripts/gpu-bundle.sh; read by scripts/gpu-check.sh"
    echo "commit=$commit"
    echo "uncommitted_changes=$dirty"
    echo "built=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "build=Release TANDEM_CUDA=ON CMAKE_CUDA_ARCHITECTURES=$ARCH"
    echo "cuda_toolkit=$("$CUDA_ROOT/bin/nvcc" --version |
      sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    echo "programs=${programs[*]} gpu_probe"
    echo "needs_glibc=$(newest_version GLIBC)"
    echo "needs_glibcxx=$(newest_version GLIBCXX)"
    echo "machine_libs=libcuda.so.1 libcublas.so.13 libcublasLt.so.13"
  } > "$STAGE/MANIFEST.txt"
  (cd "$STAGE" && find bin lib -type f -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)
}

# The bundle run here the way the GPU machine runs it: a clean environment, the bundle's lib/
# and the CUDA library folder (standing in for the machine's cuBLAS) alone on the library path.
check_bundle_alone() {
  local cuda_lib=$CUDA_LIB path=$STAGE/lib
  local program resolved
  for program in "$STAGE"/bin/*; do
    resolved=$(env -i LD_LIBRARY_PATH="$path:$cuda_lib" ldd "$program")
    if grep -q "not found" <<< "$resolved"; then
      echo "$resolved" >&2
      die "$program does not find its libraries with only the bundle on the library path"
    fi
    # Anything outside the bundle must be glibc, libstdc++/libgcc_s or the CUDA folder.
    local foreign
    foreign=$(awk '$2 == "=>" { print $1, $3 }' <<< "$resolved" |
      grep -v " $path/" | grep -v " $cuda_lib/" |
      grep -Ev '^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.' || true)
    [[ -z $foreign ]] || die "$program loads libraries from outside the bundle: $foreign"
  done
  log "every program resolves its libraries from the bundle, glibc and the CUDA folder alone"
  local probe_status=0
  env -i LD_LIBRARY_PATH="$path:$cuda_lib" "$STAGE/bin/gpu_probe" || probe_status=$?
  # 0: a GPU is here too; 3: no device, the expected answer on a development machine.
  [[ $probe_status -eq 0 || $probe_status -eq 3 ]] || die "gpu_probe failed (exit $probe_status)"
  local scratch
  scratch=$(mktemp -d)
  log "smoke test: frontend.devices and cuda.availability on cpu and sim, from the bundle alone"
  (cd "$scratch" && env -i LD_LIBRARY_PATH="$path:$cuda_lib" TANDEM_TEST_SCALE=0.05 \
    "$STAGE/bin/frontend_tests" --test-suite=frontend.devices --no-intro=true &&
    env -i LD_LIBRARY_PATH="$path:$cuda_lib" \
      "$STAGE/bin/cuda_tests" --test-suite=cuda.availability --no-intro=true) ||
    die "the bundle's programs fail here with only the bundle on the library path"
  rm -rf "$scratch"
}

pack() {
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE"
  tar -czf "$BUNDLE_ARCHIVE" -C "$STAGE" .
  cp "$STAGE/MANIFEST.txt" "$BUNDLE/"
}

report_size() {
  local bundle_bytes tree_bytes
  bundle_bytes=$(du -sb "$BUNDLE" | cut -f1)
  # What else travels: tracked files and untracked ones that git does not ignore.
  tree_bytes=$({ git ls-files -z --cached --others --exclude-standard 2> /dev/null || true; } |
    xargs -0 stat -c %s 2> /dev/null | awk '{ s += $1 } END { print s + 0 }')
  local total=$((bundle_bytes + tree_bytes))
  log "unpacked: $(du -sh "$STAGE" | cut -f1); what it holds:"
  (cd "$STAGE" && du -sh bin/* lib/*.so* lib/compat/*) | sed 's/^/  /'
  log "carried: $BUNDLE/ $((bundle_bytes / 1024)) KiB; working tree: $((tree_bytes / 1024))" \
    "KiB; together $((total / 1024)) KiB of the $((LIMIT_BYTES / 1024)) KiB a call carries"
  ((total <= LIMIT_BYTES)) ||
    die "bundle and working tree together exceed the 64 MiB a call carries"
  cat << EOF

$SCRIPT_NAME: $BUNDLE/ is ready. On the GPU machine, one call of the device tool's run:
  command:   bash scripts/gpu-check.sh
  carry:     ["$BUNDLE"]
  timeout_s: 600
Everything comes back as \$OUT/gpu-check.tar.gz (summary.txt first); see docs/toolchain.md.
EOF
}

ignore_bundle
check_prerequisites
build
find_cuda
copy_programs
copy_libraries
write_manifest
check_bundle_alone
pack
report_size
