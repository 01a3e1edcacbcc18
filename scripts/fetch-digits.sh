#!/usr/bin/env bash
# Fetches the handwritten digits data set (1797 8x8 images, 10 classes) and writes it as IDX
# files, without installing any Python package.
#
#   bash scripts/fetch-digits.sh              # into data/digits/ (git-ignored)
#   bash scripts/fetch-digits.sh --dir DIR    # into DIR
#
# The data comes from Debian's python3-sklearn package (sklearn/datasets/data/digits.csv.gz):
# `apt-get download` fetches the .deb into a temporary directory, `dpkg -x` unpacks it there, and
# scripts/digits_to_idx.py (python3, standard library only) converts the CSV. Writes, in DIR:
#   train-images-idx3-ubyte  uint8 1497x8x8   pixel values 0..16, as in the CSV (not rescaled)
#   train-labels-idx1-ubyte  uint8 1497       digit 0..9
#   test-images-idx3-ubyte   uint8 300x8x8
#   test-labels-idx1-ubyte   uint8 300
# The split is fixed: the CSV's first 1497 rows train, its last 300 test.
# Idempotent: does nothing when the four files exist. Needs apt-get, dpkg and python3; runs
# `apt-get update` (as root or with sudo) once if the package cannot be found.
set -euo pipefail

SCRIPT_NAME=fetch-digits.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out_dir="${TANDEM_ROOT}/data/digits"
while (($# > 0)); do
  case "$1" in
    --dir)
      (($# >= 2)) || die "--dir needs a directory"
      out_dir=$2
      shift 2
      ;;
    -h | --help)
      sed -n '2,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) die "unknown argument '$1' (expected --dir DIR or --help)" ;;
  esac
done

files=(train-images-idx3-ubyte train-labels-idx1-ubyte test-images-idx3-ubyte
  test-labels-idx1-ubyte)
present=0
for file in "${files[@]}"; do
  [[ -s "${out_dir}/${file}" ]] && present=$((present + 1))
done
if ((present == ${#files[@]})); then
  log "the digits data set is already in ${out_dir}"
  exit 0
fi

for tool in apt-get dpkg python3; do
  command -v "$tool" >/dev/null || die "${tool} not found: this script needs apt-get, dpkg and python3 (Debian 12)"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/tandem-digits.XXXXXX")"
trap 'rm -rf "$work"' EXIT

package=python3-sklearn
download() {
  (cd "$work" && apt-get download "$package") >"${work}/apt.log" 2>&1
}
if ! download; then
  # A fresh system may have no package lists yet.
  log "apt-get download ${package} failed; running apt-get update once and retrying"
  sudo=()
  if ((EUID != 0)) && command -v sudo >/dev/null; then
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update >>"${work}/apt.log" 2>&1 || true
  if ! download; then
    cat "${work}/apt.log" >&2
    die "apt-get download ${package} failed (output above): check the apt sources and the network"
  fi
fi

deb=("${work}"/*.deb)
[[ -f "${deb[0]}" ]] || die "apt-get download ${package} left no .deb in ${work}"
dpkg -x "${deb[0]}" "${work}/root"
csv="$(find "${work}/root" -path '*/sklearn/datasets/data/digits.csv.gz' -print -quit)"
[[ -n "$csv" ]] || die "${deb[0]##*/} holds no sklearn/datasets/data/digits.csv.gz (dpkg -c lists what it has)"

mkdir -p "$out_dir"
python3 "${TANDEM_ROOT}/scripts/digits_to_idx.py" "$csv" "$out_dir"
log "wrote the digits data set to ${out_dir} (from ${deb[0]##*/})"
