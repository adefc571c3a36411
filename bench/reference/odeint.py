"""diffrax (JAX, CPU, float64) reference for bench/implicit/odeint.lisp
(issue 18's targets: odeint's value and gradient within 1.5x of diffrax at
the same tolerances and step counts).

Two problems, each solved by Dopri5 with a PID (here integral) step-size
controller at rtol = atol = 1e-8, saving the states at ts:
- Lotka-Volterra, y0 = (1, 1), parameters (1.5, 1, 1, 3), ts 101 times in
  [0, 10]; loss sum((y(ts) - target)^2) against a fixed target;
- a 1000-state periodic diffusion du/dt = D (u[i-1] - 2 u[i] + u[i+1]),
  D = 1, u0 = exp(-((i - 500) / 4)^2), ts 11 times in [0, 10] (the
  accuracy, not the stability bound 2.8 / (4 D), limits the steps);
  loss sum(u(10)^2).
The gradient is in the parameters and y0, by `RecursiveCheckpointAdjoint`
(direct differentiation through the steps) and by `BacksolveAdjoint` (the
continuous adjoint). Prints the accepted and rejected steps and the median
milliseconds of the jitted value and value-and-gradient.

    JAX_PLATFORMS=cpu python3 bench/reference/odeint.py lv 15
    JAX_PLATFORMS=cpu python3 bench/reference/odeint.py diffusion 15
"""
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

problem = sys.argv[1] if len(sys.argv) > 1 else "lv"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
RTOL = ATOL = 1e-8

if problem == "lv":

    def field(t, y, p):
        a, b, d, g = p[0], p[1], p[2], p[3]
        x, z = y[0], y[1]
        return jnp.stack([a * x - b * x * z, d * x * z - g * z])

    y0 = jnp.array([1.0, 1.0])
    params = jnp.array([1.5, 1.0, 1.0, 3.0])
    ts = jnp.linspace(0.0, 10.0, 101)
    target = jnp.stack([1.0 + 0.5 * jnp.sin(ts), 1.0 + 0.5 * jnp.cos(ts)], axis=1)

    def loss_of(ys):
        return jnp.sum((ys - target) ** 2)

else:
    n = 1000

    def field(t, u, p):
        return p[0] * (jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1))

    x = jnp.arange(n, dtype=jnp.float64)
    y0 = jnp.exp(-(((x - 500.0) / 4.0) ** 2))
    params = jnp.array([1.0])
    ts = jnp.linspace(0.0, 10.0, 11)

    def loss_of(ys):
        return jnp.sum(ys[-1] ** 2)


def solve(y0, params, adjoint):
    return diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        diffrax.Dopri5(),
        t0=ts[0],
        t1=ts[-1],
        dt0=None,
        y0=y0,
        args=params,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
        adjoint=adjoint,
        max_steps=100000,
    )


sol = jax.jit(lambda y0, p: solve(y0, p, diffrax.RecursiveCheckpointAdjoint()))(y0, params)
print(problem, "accepted steps", int(sol.stats["num_accepted_steps"]), "rejected", int(sol.stats["num_rejected_steps"]))


def value(y0, p):
    return loss_of(solve(y0, p, diffrax.RecursiveCheckpointAdjoint()).ys)


def timed(f):
    jax.block_until_ready(f(y0, params))
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        jax.block_until_ready(f(y0, params))
        out.append(time.perf_counter() - start)
    out.sort()
    return 1000 * out[len(out) // 2]


forward = jax.jit(value)
print("loss", float(forward(y0, params)))
results = {"value": timed(forward)}
for name, adjoint in (("direct", diffrax.RecursiveCheckpointAdjoint()), ("backsolve", diffrax.BacksolveAdjoint())):
    vg = jax.jit(jax.value_and_grad(lambda y0, p: loss_of(solve(y0, p, adjoint).ys), argnums=(0, 1)))
    v, (gy, gp) = vg(y0, params)
    print(name, "gradient in the parameters", [float(g) for g in gp][:4])
    results[name] = timed(vg)
print(" ".join(f"{k} {v:.3f} ms" for k, v in results.items()))
