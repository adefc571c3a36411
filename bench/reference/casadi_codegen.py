"""Generated C for the Neo-Hookean gradient (W3): Epsilon's `codegen`
against CasADi's SX code generation, compiled with the same flags and
timed in the same harness (issue 20's target: Epsilon within 1.2x).

Run (from the repository root, after `cargo build --release`):
    python3 bench/reference/casadi_codegen.py [evaluations] [rounds]

Each round compiles nothing new: both functions are compiled once with
`cc -O2 -std=c99` into one program, which then times `evaluations` calls
of each (the inputs moved a little every call so nothing is hoisted,
the outputs summed so nothing is dropped), alternating Epsilon and CasADi
`rounds` times, and prints nanoseconds per call and the ratio.
"""
import os
import subprocess
import sys
import tempfile

import casadi as ca

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5

names = [f"F{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]


def casadi_source(directory):
    F = ca.SX.sym("F", 3, 3)
    mu, lam = ca.SX.sym("mu"), ca.SX.sym("lam")
    I1 = ca.trace(F.T @ F)
    J = ca.det(F)
    W = mu / 2 * (I1 - 3) - mu * ca.log(J) + lam / 2 * ca.log(J) ** 2
    # Row-major entries, as Epsilon's F11 F12 ... F33.
    entries = [F[i, j] for i in range(3) for j in range(3)]
    g = ca.gradient(W, ca.vertcat(*entries))
    f = ca.Function("casadi_grad", entries + [mu, lam], [g])
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        f.generate("casadi_grad.c", {"with_header": True})
    finally:
        os.chdir(cwd)


def epsilon_source(directory):
    out = subprocess.run(
        [os.path.join(ROOT, "target", "release", "epsilon"), "run", "bench/codegen/neo-hookean.lisp"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    source = out[out.index("#include"):]
    with open(os.path.join(directory, "epsilon_grad.c"), "w") as fh:
        fh.write(source)


HARNESS = r"""
#include <stdio.h>
#include <time.h>
#include "casadi_grad.h"
void neo_hookean_grad(double F11, double F12, double F13, double F21, double F22, double F23,
                      double F31, double F32, double F33, double mu, double lam, double *out);

static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = atol(argv[1]); int rounds = atoi(argv[2]);
    double x[11] = {1.1, 0.1, -0.05, 0.08, 0.95, 0.02, -0.03, 0.04, 1.05, 0.7, 1.9};
    double out[9], check[9];
    /* The two agree. */
    neo_hookean_grad(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], out);
    {
        const double *arg[11]; double *res[1] = {check};
        for (int k = 0; k < 11; k++) arg[k] = &x[k];
        casadi_grad(arg, res, 0, 0, 0);
        for (int k = 0; k < 9; k++) {
            double d = out[k] - check[k];
            if (d > 1e-12 || d < -1e-12) { printf("differ at %d: %.17g %.17g\n", k, out[k], check[k]); return 1; }
        }
    }
    for (int r = 0; r < rounds; r++) {
        double sum = 0, t0 = now();
        for (long i = 0; i < n; i++) {
            x[0] = 1.1 + 1e-9 * (i & 1023);
            neo_hookean_grad(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], out);
            sum += out[0] + out[8];
        }
        double epsilon = (now() - t0) / n * 1e9;
        const double *arg[11]; double *res[1] = {out};
        for (int k = 0; k < 11; k++) arg[k] = &x[k];
        double sum2 = 0; t0 = now();
        for (long i = 0; i < n; i++) {
            x[0] = 1.1 + 1e-9 * (i & 1023);
            casadi_grad(arg, res, 0, 0, 0);
            sum2 += out[0] + out[8];
        }
        double casadi = (now() - t0) / n * 1e9;
        printf("epsilon %.2f ns casadi %.2f ns ratio %.3f (checksums %.6g %.6g)\n",
               epsilon, casadi, epsilon / casadi, sum, sum2);
    }
    return 0;
}
"""


def main():
    with tempfile.TemporaryDirectory() as d:
        casadi_source(d)
        epsilon_source(d)
        with open(os.path.join(d, "harness.c"), "w") as fh:
            fh.write("#include <stdlib.h>\n" + HARNESS)
        flags = ["-O2", "-std=c99"]
        subprocess.run(["cc", *flags, "-c", "epsilon_grad.c"], cwd=d, check=True)
        subprocess.run(["cc", *flags, "-c", "casadi_grad.c"], cwd=d, check=True)
        subprocess.run(["cc", *flags, "-D_POSIX_C_SOURCE=199309L", "-o", "harness", "harness.c",
                        "epsilon_grad.o", "casadi_grad.o", "-lm"], cwd=d, check=True)
        print(f"CasADi {ca.__version__}, cc -O2 -std=c99, {N} calls per timing")
        subprocess.run(["./harness", str(N), str(ROUNDS)], cwd=d, check=True)


if __name__ == "__main__":
    main()
