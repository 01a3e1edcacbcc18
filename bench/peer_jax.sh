#!/usr/bin/env bash
# Runs a suite's JAX peer script in a private virtual environment, build-bench/jax-venv, made
# and filled with `pip install jax` on first use. When that fails (no network, no venv module),
# the script is run with `--skip REASON` by the system python, so that it records the peer as
# skipped, with the reason, and the suite's targets are still computed from tandem's records.
#
#   bench/peer_jax.sh PEER_SCRIPT RESULTS.json [peer arguments...]
#   bench/peer_jax.sh bench/training/jax_peer.py bench/results/training.json --digits data/digits
#   bench/peer_jax.sh bench/graph/jax_peer.py bench/results/graph.json --quick
set -uo pipefail

peer=$1 results=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
venv=$repo/build-bench/jax-venv
log=$repo/build-bench/jax-venv.log

reason=""
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import jax" > /dev/null 2>&1; then
  echo "peer_jax.sh: installing jax into $venv (log: $log)"
  mkdir -p "$(dirname "$venv")"
  if ! python3 -m venv "$venv" > "$log" 2>&1; then
    reason="python3 -m venv failed (is python3-venv installed?): $(tail -n 1 "$log")"
  elif ! "$venv/bin/pip" install -q jax >> "$log" 2>&1; then
    reason="pip install jax failed (no network?): $(tail -n 1 "$log")"
  fi
fi
if [[ -z $reason ]]; then
  "$venv/bin/python" "$peer" --results "$results" "$@"
else
  python3 "$peer" --results "$results" --skip "$reason"
fi
