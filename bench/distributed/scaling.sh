#!/usr/bin/env bash
# Weak scaling of the decomposed heat equation's gradient (W4's size per
# rank: n = 10^4 cells, T = 10^4 steps, revolve with 20 snapshots) on 1,
# 2 and 4 ranks, one thread per rank, rounds alternating; prints each
# run's three gradient times and the bytes per step.
#
#   cargo build --release --features mpi && bench/distributed/scaling.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-3}"
for round in $(seq "$rounds"); do
  for ranks in 1 2 4; do
    echo "round $round ranks $ranks"
    mpirun --allow-run-as-root --oversubscribe -x RAYON_NUM_THREADS=1 -np "$ranks" \
      target/release/epsilon run bench/distributed/heat.lisp time 10000 10000
  done
done
