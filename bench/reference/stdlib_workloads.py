"""Reference runs for the standard-library workloads (issue 6), to compare
side by side with Epsilon's examples:

  python3 bench/reference/stdlib_workloads.py rosenbrock   # SciPy L-BFGS-B from (-1.2, 1)
  python3 bench/reference/stdlib_workloads.py mlp          # JAX: the digits MLP of examples/mlp.lisp
  python3 bench/reference/stdlib_workloads.py heat         # JAX + SciPy: the heat inverse problem

Each prints what the matching example prints (iterations, minimum,
accuracy, recovered coefficient) and the time of the work itself.
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS = os.path.join(HERE, "..", "..", "examples", "data", "digits.csv")


def rosenbrock():
    from scipy.optimize import minimize, rosen, rosen_der

    start = time.perf_counter()
    result = minimize(rosen, np.array([-1.2, 1.0]), jac=rosen_der, method="L-BFGS-B",
                      options={"gtol": 1e-10, "ftol": 0.0, "maxiter": 500})
    elapsed = time.perf_counter() - start
    distance = np.linalg.norm(result.x - 1.0)
    print(f"SciPy L-BFGS-B: {result.nit} iterations, {result.nfev} evaluations, "
          f"distance to (1, 1) = {distance:.3e}, {elapsed * 1e3:.2f} ms")


def mlp(epochs=30, hidden=32, batch=64, lr=0.01):
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    table = np.loadtxt(DIGITS, delimiter=",", skiprows=1)
    x = table[:, :64] / 16.0
    y = table[:, 64].astype(int)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    n_test = round(0.25 * len(x))
    test, train = order[:n_test], order[n_test:]
    xtr, ytr, xte, yte = x[train], y[train], x[test], y[test]

    def glorot(key, n_in, n_out):
        limit = np.sqrt(6 / (n_in + n_out))
        return jax.random.uniform(key, (n_in, n_out), jnp.float64, -limit, limit)

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = [(glorot(k1, 64, hidden), jnp.zeros(hidden)), (glorot(k2, hidden, 10), jnp.zeros(10))]

    def forward(p, xb):
        h = jnp.tanh(xb @ p[0][0] + p[0][1])
        return h @ p[1][0] + p[1][1]

    def loss(p, xb, yb):
        logits = forward(p, xb)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1))

    @jax.jit
    def step(p, m, v, t, xb, yb):
        value, g = jax.value_and_grad(loss)(p, xb, yb)
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        p = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + 1e-8), p, m, v)
        return p, m, v, value

    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    # One step on each batch shape first, so compilation is not timed.
    for size in {batch, len(xtr) % batch} - {0}:
        step(params, m, v, 1.0, xtr[:size], ytr[:size])[0][0][0].block_until_ready()
    t = 0
    start = time.perf_counter()
    for _ in range(epochs):
        perm = rng.permutation(len(xtr))
        for lo in range(0, len(xtr), batch):
            idx = perm[lo:lo + batch]
            t += 1
            params, m, v, _ = step(params, m, v, float(t), xtr[idx], ytr[idx])
    params[0][0].block_until_ready()
    elapsed = time.perf_counter() - start
    accuracy = float(jnp.mean(jnp.argmax(forward(params, xte), axis=1) == yte))
    print(f"JAX {jax.__version__} jit(value_and_grad) + Adam: {epochs} epochs, {t} steps in "
          f"{elapsed:.3f} s ({t / elapsed:.0f} steps/s), held-out accuracy {accuracy:.4f}")


def heat(points=64, snapshots=None):
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    from scipy.optimize import minimize

    jax.config.update("jax_enable_x64", True)
    dx = 1.0 / (points - 1)
    dt = 0.2 * dx * dx
    steps = int(np.ceil(0.05 / dt))
    xs = np.linspace(0, 1, points)
    interior = ((xs > 0) & (xs < 1)).astype(float)
    u0 = np.sin(np.pi * xs) + 0.5 * np.sin(3 * np.pi * xs) + 0.25 * np.sin(7 * np.pi * xs)

    def final(kappa):
        r = kappa * dt / (dx * dx)

        def body(u, _):
            return u + r * interior * (jnp.roll(u, 1) + jnp.roll(u, -1) - 2 * u), None

        return jax.lax.scan(jax.checkpoint(body), jnp.asarray(u0), None, length=steps)[0]

    observed = np.asarray(final(0.7)) + 0.001 * np.random.default_rng(42).standard_normal(points)
    misfit = jax.jit(jax.value_and_grad(lambda theta: 0.5 * jnp.sum((final(jnp.exp(theta)) - observed) ** 2)))
    misfit(jnp.log(0.3))[0].block_until_ready()

    def fun(theta):
        value, grad = misfit(theta[0])
        return float(value), np.array([float(grad)])

    start = time.perf_counter()
    result = minimize(fun, np.array([np.log(0.3)]), jac=True, method="L-BFGS-B",
                      options={"gtol": 1e-9, "ftol": 0.0})
    elapsed = time.perf_counter() - start
    kappa = float(np.exp(result.x[0]))
    print(f"JAX lax.scan + jax.checkpoint, SciPy L-BFGS-B: {steps} steps, kappa = {kappa:.6f}, "
          f"{result.nit} iterations, {result.nfev} evaluations, {elapsed * 1e3:.1f} ms")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["rosenbrock", "mlp", "heat"]:
        {"rosenbrock": rosenbrock, "mlp": mlp, "heat": heat}[name]()
