"""Issue 50's workloads in JAX (CPU, complex128): the FFT of 2^20 complex
points, the rfft of 2^20 real points, a complex 512 x 512 matrix product,
and jit(grad) of the variational energy <psi|H|psi> / <psi|psi> with psi
of 2^10 complex amplitudes and a dense Hermitian H. Same sizes and data as
bench/complex/workloads.lisp. Prints checksums and the median seconds of
`rounds` calls after the first.

    JAX_PLATFORMS=cpu python3 bench/reference/complex_workloads.py 5
"""

import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def wave(n, a, b):
    return jnp.sin(a * jnp.arange(n, dtype=jnp.float64) + b)


def matrix(n, a, b):
    return wave(n * n, a, b).reshape(n, n)


def checksum(z):
    z = jnp.asarray(z)
    if jnp.iscomplexobj(z):
        return float(jnp.sum(z.real) + 0.5 * jnp.sum(z.imag))
    return float(jnp.sum(z))


def timed(name, f):
    out = f()
    jax.block_until_ready(out)
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"{name} checksum {checksum(out)} seconds {times[len(times) // 2]:.6f}")


def main():
    global ROUNDS
    ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    signal = wave(1048576, 0.0137, 0.1) + 1j * wave(1048576, 0.0071, 0.7)
    real_signal = wave(1048576, 0.0093, 0.3)
    a = matrix(512, 0.00031, 0.2) + 1j * matrix(512, 0.00057, 0.9)
    b = matrix(512, 0.00043, 0.4) + 1j * matrix(512, 0.00029, 1.1)
    hr = matrix(1024, 0.00011, 0.5)
    hi = matrix(1024, 0.00023, 0.8)
    h = 0.5 * (hr + hr.T) + 0.5j * (hi - hi.T)
    psi = wave(1024, 0.013, 0.2) + 1j * wave(1024, 0.029, 0.6)

    def energy(psi):
        return jnp.real(jnp.vdot(psi, h @ psi)) / jnp.real(jnp.vdot(psi, psi))

    fft = jax.jit(jnp.fft.fft)
    rfft = jax.jit(jnp.fft.rfft)
    matmul = jax.jit(jnp.matmul)
    energy_grad = jax.jit(jax.grad(energy))
    timed("fft", lambda: fft(signal))
    timed("rfft", lambda: rfft(real_signal))
    timed("matmul", lambda: matmul(a, b))
    timed("energy-grad", lambda: energy_grad(psi))


if __name__ == "__main__":
    main()
