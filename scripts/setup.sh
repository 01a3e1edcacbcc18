#!/usr/bin/env bash
# Installs the Debian packages tandem needs to build and test, skipping those already installed,
# then fetches the digits data set into data/digits/ (scripts/fetch-digits.sh; the tests and
# examples that train use it).
#
#   bash scripts/setup.sh           # build + test dependencies, and the digits data set
#   bash scripts/setup.sh --bench   # the same, plus StarPU (a benchmark peer) and Fashion-MNIST
#   bash scripts/setup.sh --no-data # the packages only
#
# Idempotent: each package is checked with `dpkg -s`; `apt-get update` and `apt-get install` run
# only when something is missing (they need root or sudo then), and the data set is fetched
# only when its files are missing. The CUDA toolkit is not a Debian package here: CMake uses
# /usr/local/cuda when it exists (docs/building.md).
set -euo pipefail

SCRIPT_NAME=setup.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

packages=(
  cmake ninja-build g++ pkg-config
  libtbb-dev libspdlog-dev doctest-dev libopenblas-dev librandom123-dev nlohmann-json3-dev
  python3 zlib1g-dev
  libopenmpi-dev openmpi-bin
)
# zlib1g-dev: nd::read_idx and data::load_fashion_mnist read gzipped IDX files.
# libopenmpi-dev, openmpi-bin: tandem::dist and its tests under mpirun (docs/distributed.md).
# python3: scripts/digits_to_idx.py converts the digits data set; bench/report.py turns the
# results into the tables of docs/benchmarks.md.
# dataset-fashion-mnist (31 MB, /usr/share/datasets/fashion-mnist): the training benchmark and
# the examples' default data; the tests write their own small IDX files and never need it.
bench_packages=(libstarpu-dev starpu-tools dataset-fashion-mnist)
fetch_data=1

for arg in "$@"; do
  case "$arg" in
    --bench) packages+=("${bench_packages[@]}") ;;
    --no-data) fetch_data=0 ;;
    -h | --help)
      sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) die "unknown argument '${arg}' (expected --bench, --no-data or --help)" ;;
  esac
done

is_installed() {
  # `dpkg -s` also succeeds for removed packages that left config files: check the status line.
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

command -v dpkg >/dev/null || die "dpkg not found: this script expects Debian 12 (or a derivative)"

missing=()
for package in "${packages[@]}"; do
  is_installed "$package" || missing+=("$package")
done

fetch_digits() {
  if ((fetch_data)); then
    bash "${TANDEM_ROOT}/scripts/fetch-digits.sh"
  fi
}

if ((${#missing[@]} == 0)); then
  log "all ${#packages[@]} packages are installed"
  fetch_digits
  exit 0
fi

log "missing packages: ${missing[*]}"
command -v apt-get >/dev/null || die "apt-get not found; install these packages by hand: ${missing[*]}"
sudo=()
if ((EUID != 0)); then
  command -v sudo >/dev/null ||
    die "not root and no sudo; run as root: apt-get update && apt-get install -y ${missing[*]}"
  sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"

for package in "${missing[@]}"; do
  is_installed "$package" || die "apt-get did not install ${package}"
done
log "installed: ${missing[*]}"
fetch_digits
