"""The float loop of loop.lisp in CPython (a while loop: no tail calls)."""
import sys


def run(n):
    i, x = 0, 0.0
    while i < n:
        i, x = i + 1, x * 0.999 + 1.0
    return x


print(run(int(sys.argv[1]) if len(sys.argv) > 1 else 1000000))
