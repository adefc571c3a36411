#!/bin/sh
# Interpreter speed side by side (issue 23): (fib 30) and a 10^6-step
# float named let in Epsilon, CPython, Guile (its interpreter, no
# compilation) and Chez Scheme, where installed. Each round runs every
# system once, in turn; the report is each one's median of ROUNDS
# whole-process wall times (start-up included).
# Run from the repository root: bench/interpreter/compare.sh [ROUNDS]
set -eu
ROUNDS=${1:-5}
EPSILON=${EPSILON:-target/release/epsilon}
DIR=bench/interpreter
TIMES=$(mktemp -d)
trap 'rm -rf "$TIMES"' EXIT

# name|program|arguments (the script is appended)
SYSTEMS="epsilon|$EPSILON|run
python3|python3|
guile-interpreter|guile|--no-auto-compile
chez|scheme|--script"

script_for() { # system workload
    case $1 in
        epsilon) echo "$DIR/$2.lisp" ;;
        python3) echo "$DIR/$2.py" ;;
        *) echo "$DIR/$2.scm" ;;
    esac
}

for round in $(seq "$ROUNDS"); do
    for workload in fib loop; do
        echo "$SYSTEMS" | while IFS='|' read -r name program flags; do
            command -v "$program" > /dev/null 2>&1 || continue
            script=$(script_for "$name" "$workload")
            start=$(date +%s%N)
            # shellcheck disable=SC2086
            GUILE_AUTO_COMPILE=0 "$program" $flags "$script" > /dev/null
            end=$(date +%s%N)
            echo "$(( (end - start) / 1000000 ))" >> "$TIMES/$workload-$name"
        done
    done
    echo "round $round of $ROUNDS done" >&2
done

for workload in fib loop; do
    echo "== $workload (median of $ROUNDS, ms)"
    echo "$SYSTEMS" | while IFS='|' read -r name program _; do
        if [ -f "$TIMES/$workload-$name" ]; then
            sort -n "$TIMES/$workload-$name" | awk -v n="$name" '{a[NR]=$1} END {printf "%-18s %6d\n", n, a[int((NR+1)/2)]}'
        else
            printf "%-18s %s\n" "$name" "not installed"
        fi
    done
done
