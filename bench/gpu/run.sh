#!/usr/bin/env bash
# Everything a GPU machine should run, in one call (about ten minutes on
# an H100): the two CUDA test suites, then every GPU workload against JAX
# on the same GPU, alternated (Epsilon, JAX, Epsilon, JAX), and a table.
#
#   bench/gpu/run.sh [OUT]        # OUT defaults to $OUT, else bench/gpu/out
#
# Binaries: target/release/epsilon and the test executables are built with
# cargo where cargo is present; otherwise they are taken from bench/gpu/bin
# (made on another machine by bench/gpu/prepare.sh). JAX must be installed
# with its CUDA plugin for the comparison (`pip install "jax[cuda12]"` or
# `"jax[cuda13]"`); without it the Epsilon side runs alone and the table
# says so. Raw outputs and table.md go to OUT.

set -u
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-bench/gpu/out}}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/run.log"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1 || echo "no nvidia-smi" > "$OUT/gpu.txt"
log "GPU: $(cat "$OUT/gpu.txt")"

BIN=bench/gpu/bin
if command -v cargo > /dev/null; then
    log "building"
    cargo build --release --features cuda > "$OUT/build.log" 2>&1 || { log "build failed (see build.log)"; exit 1; }
    cargo test --release --features cuda --test cuda_backend --test cuda_kernels --no-run --message-format=json 2> /dev/null \
        | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("cuda_backend", "cuda_kernels"):
        print(m["target"]["name"], m["executable"])' > "$OUT/test-binaries.txt"
    EPSILON=target/release/epsilon
else
    log "no cargo: using the binaries in $BIN"
    EPSILON=$BIN/epsilon
    printf 'cuda_backend %s\ncuda_kernels %s\n' "$BIN/cuda_backend" "$BIN/cuda_kernels" > "$OUT/test-binaries.txt"
fi

while read -r name path; do
    log "test suite $name"
    timeout 300 "$path" --nocapture > "$OUT/test-$name.log" 2>&1
    echo "exit $?" >> "$OUT/test-$name.log"
    tail -n 3 "$OUT/test-$name.log" | tee -a "$OUT/run.log"
done < "$OUT/test-binaries.txt"

JAX=no
if JAX_PLATFORMS=cuda timeout 120 python3 -c 'import jax; assert jax.devices()[0].platform == "gpu"' > "$OUT/jax-check.log" 2>&1; then
    JAX=yes
fi
log "JAX on the GPU: $JAX"

epsilon_round() {
    timeout 600 "$EPSILON" run bench/linalg/time.lisp --backend cuda > "$OUT/eps-linalg-$1.txt" 2>&1
    timeout 600 "$EPSILON" run bench/gpu/arrays.lisp --backend cuda > "$OUT/eps-arrays-$1.txt" 2>&1
    timeout 600 "$EPSILON" run bench/transformer/train-step.lisp 5 f32 --backend cuda > "$OUT/eps-transformer-$1.txt" 2>&1
    "$EPSILON" eval "(device-stats)" > /dev/null 2>&1
}
jax_round() {
    [ "$JAX" = yes ] || return 0
    export JAX_PLATFORMS=cuda
    timeout 600 python3 bench/reference/linalg_workloads.py > "$OUT/jax-linalg-$1.txt" 2>&1
    timeout 600 python3 bench/reference/numeric_workloads.py W1 > "$OUT/jax-w1-$1.txt" 2>&1
    timeout 600 python3 bench/reference/heat_w4.py scan > "$OUT/jax-w4-$1.txt" 2>&1
    timeout 600 python3 bench/reference/transformer.py 5 float32 > "$OUT/jax-transformer-$1.txt" 2>&1
    timeout 600 python3 bench/reference/complex_workloads.py 9 > "$OUT/jax-complex-$1.txt" 2>&1
    unset JAX_PLATFORMS
}
for round in 1 2; do
    log "round $round: Epsilon"
    epsilon_round "$round"
    log "round $round: JAX"
    jax_round "$round"
done

python3 bench/gpu/table.py "$OUT" > "$OUT/table.md"
cat "$OUT/table.md" | tee -a "$OUT/run.log"
