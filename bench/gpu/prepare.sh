#!/usr/bin/env bash
# Builds, on a machine with cargo, what bench/gpu/run.sh needs on a GPU
# machine without it: the epsilon binary and the two CUDA test suites,
# stripped, in bench/gpu/bin (ignored by git).
set -eu
cd "$(dirname "$0")/../.."
mkdir -p bench/gpu/bin
cargo build --release --features cuda
cp target/release/epsilon bench/gpu/bin/epsilon
cargo test --release --features cuda --test cuda_backend --test cuda_kernels --no-run --message-format=json 2> /dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("cuda_backend", "cuda_kernels"):
        print(m["target"]["name"], m["executable"])' \
    | while read -r name path; do cp "$path" "bench/gpu/bin/$name"; done
strip bench/gpu/bin/* 2> /dev/null || true
ls -la bench/gpu/bin
