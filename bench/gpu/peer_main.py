"""What the gpu suite's Python peers (torch_peer.py, jax_peer.py) share: their command line and
how their records join the results file (replacing the peer's earlier records, keeping the
others'; a peer that cannot run records itself as skipped, with the reason, and exits 0)."""

import argparse
import json
import sys
from pathlib import Path


def run_peer(description, system, name, peer_records):
    """Parses --results PATH [--quick], runs peer_records(quick) and writes its records."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--results", required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    path = Path(args.results)
    existing = json.loads(path.read_text()) if path.exists() else []
    kept = [r for r in existing if r.get("system") != system]
    try:
        peer = peer_records(args.quick)
    except ImportError as error:
        peer, reason = None, f"{name} is not importable ({error})"
    except Exception as error:  # a failed peer must not lose the other records
        peer, reason = None, f"the {name} peer failed: {type(error).__name__}: {error}"
    if peer is None:
        print(f"{name} peer: skipped: {reason}", file=sys.stderr)
        peer = [{"workload": system, "system": system, "skipped": True, "reason": reason}]
    path.write_text(json.dumps(kept + peer, indent=2) + "\n")
