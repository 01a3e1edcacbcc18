#!/bin/sh
# Runs a test program under mpirun: run_under_mpirun.sh NP PROGRAM [ARGS...]
# Exits 77 (ctest's SKIP_RETURN_CODE for these tests) when mpirun is missing, so a machine
# without Open MPI skips the MPI tests instead of failing them. As root, Open MPI needs the
# allow-root variables; --oversubscribe lets more ranks than cores run (CI has 2 cores).
# TANDEM_MPIRUN_ARGS adds mpirun options (the rank-death test lets survivors report).
np=$1
shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each rank gets its share of the cores: np processes on one machine.
if [ -z "${TANDEM_CPU_WORKERS:-}" ]; then
  export TANDEM_CPU_WORKERS=1
fi
# shellcheck disable=SC2086
exec mpirun --oversubscribe --bind-to none ${TANDEM_MPIRUN_ARGS:-} -np "$np" "$@"
