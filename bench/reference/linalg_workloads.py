"""JAX reference for Epsilon's linear-algebra workloads of issue 16 (CPU, float64):

- GMM: negative log-likelihood of a Gaussian mixture (d = 10, K = 50, n = 10^4),
  log-sum-exp over components, precision from a Cholesky factor made with
  `tril`, Wishart prior with `multigammaln`; objective and gradient w.r.t. all
  four parameter arrays.
- BA: bundle-adjustment residuals (ADBench's camera model: Rodrigues rotation
  with cross products, radial distortion), cameras and points picked per
  observation with `take`/gather; the per-observation Jacobian blocks
  (d residual_i / d (camera_i, point_i), 2 x 14 each) by forward mode, and the
  gradient of half the squared residuals w.r.t. all cameras and points.
- GP: Gaussian-process marginal likelihood, n = 1000 1-D inputs, RBF kernel with
  three log hyperparameters (Cholesky, two triangular solves, log-det); value and
  gradient.

The data are closed-form (sines and cosines of indices), so bench/linalg/*.lisp
builds exactly the same arrays and the printed `value` lines can be compared.

Tested with jax 0.10.2, jaxlib 0.10.2, numpy 2.4.6, scipy 1.17.1, Python 3.11.7.

Run: JAX_PLATFORMS=cpu python3 bench/reference/linalg_workloads.py [GMM BA GP]

Every measured function is jitted and warmed up; each timed call ends in
block_until_ready; a measurement repeats for at least 10 calls and 1 s (at most
200 calls) and prints the median and minimum in milliseconds, one line each:

    GMM f      median_ms=... min_ms=... reps=...
    GMM value  f=... grad_sums=...
"""
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # JAX_PLATFORMS=cuda times the GPU

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.scipy.special import logsumexp, multigammaln  # noqa: E402
from jax.scipy.linalg import cho_solve, solve_triangular  # noqa: E402

jax.config.update("jax_enable_x64", True)

MIN_REPS, MIN_TIME, MAX_REPS = 10, 1.0, 200


def bench(workload, name, fn, *args):
    jax.block_until_ready(fn(*args))
    times = []
    start = time.perf_counter()
    while len(times) < MAX_REPS:
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
        if len(times) >= MIN_REPS and time.perf_counter() - start >= MIN_TIME:
            break
    med = statistics.median(times) * 1e3
    print(f"{workload} {name:<8} median_ms={med:.4f} min_ms={min(times) * 1e3:.4f} reps={len(times)}",
          flush=True)


def sums(tree):
    return " ".join(repr(float(jnp.sum(leaf))) for leaf in jax.tree_util.tree_leaves(tree))


# ------------------------------------------------------------------- GMM

GMM_N, GMM_D, GMM_K = 10_000, 10, 50
WISHART_GAMMA, WISHART_M = 1.0, 0


def gmm_data():
    n, d, k = GMM_N, GMM_D, GMM_K
    i = np.arange(n)[:, None]
    j = np.arange(d)[None, :]
    x = np.sin(0.37 * i + 1.3 * j) + 0.5 * np.cos(0.11 * i * (j + 1))
    kk = np.arange(k)
    alphas = 0.1 * np.sin(kk)
    means = np.sin(1.7 * kk[:, None] + 0.3 * j)
    logdiag = 0.1 * np.cos(kk[:, None] + j)
    a = np.arange(d)
    lower = 0.05 * np.sin(kk[:, None, None] + 2 * a[None, :, None] + 3 * a[None, None, :])
    return jnp.asarray(x), (jnp.asarray(alphas), jnp.asarray(means), jnp.asarray(logdiag),
                            jnp.asarray(lower))


def gmm_objective(params, x):
    alphas, means, logdiag, lower = params
    n, d = x.shape
    k = alphas.shape[0]
    # Cholesky factors of the precisions: exp(logdiag) on the diagonal,
    # the strictly lower triangle of `lower` below it.
    factors = jnp.tril(lower, -1) + jax.vmap(jnp.diag)(jnp.exp(logdiag))
    centered = x[None, :, :] - means[:, None, :]                  # [K, n, d]
    mapped = jnp.matmul(centered, jnp.swapaxes(factors, -1, -2))  # [K, n, d]
    sqsum = jnp.sum(mapped * mapped, axis=2)                      # [K, n]
    inner = (alphas + jnp.sum(logdiag, axis=1))[:, None] - 0.5 * sqsum
    slse = jnp.sum(logsumexp(inner, axis=0))
    const = -n * d * 0.5 * jnp.log(2 * jnp.pi)
    nprior = d + WISHART_M + 1
    strict = jnp.tril(lower, -1)
    prior = jnp.sum(0.5 * WISHART_GAMMA ** 2 * (jnp.sum(jnp.exp(logdiag) ** 2, axis=1)
                                                + jnp.sum(strict ** 2, axis=(1, 2)))
                    - WISHART_M * jnp.sum(logdiag, axis=1))
    c = nprior * d * (jnp.log(WISHART_GAMMA) - 0.5 * jnp.log(2.0)) - multigammaln(0.5 * nprior, d)
    return const + slse - n * logsumexp(alphas) + prior - k * c


def run_gmm():
    x, params = gmm_data()
    f = jax.jit(gmm_objective)
    g = jax.jit(jax.grad(gmm_objective))
    vg = jax.jit(jax.value_and_grad(gmm_objective))
    bench("GMM", "f", f, params, x)
    bench("GMM", "grad", g, params, x)
    bench("GMM", "vgrad", vg, params, x)
    value, grads = vg(params, x)
    print(f"GMM value    f={float(value)!r} grad_sums={sums(grads)}", flush=True)


# ------------------------------------------------------------------- BA

BA_CAMS, BA_POINTS, BA_OBS = 50, 10_000, 50_000


def ba_data():
    c = np.arange(BA_CAMS)[:, None]
    cams = np.zeros((BA_CAMS, 11))
    cams[:, 0:3] = 0.1 * np.sin(c + np.arange(3))            # rotation (Rodrigues)
    cams[:, 3:6] = np.cos(0.5 * c + np.arange(3))            # center
    cams[:, 6] = 500.0 + 10.0 * np.sin(c[:, 0])              # focal length
    cams[:, 7:9] = 0.1 * np.cos(c + np.arange(2))            # principal point
    cams[:, 9:11] = 1e-3 * np.sin(2 * c + np.arange(2))      # radial distortion
    p = np.arange(BA_POINTS)[:, None]
    points = np.sin(0.01 * p + np.arange(3)) + np.array([0.0, 0.0, 6.0])
    o = np.arange(BA_OBS)
    cam_idx = (o * 7) % BA_CAMS
    pt_idx = (o * 13) % BA_POINTS
    features = 0.5 * np.stack([np.sin(0.3 * o), np.cos(0.7 * o)], axis=1)
    weights = 1.0 + 0.1 * np.sin(o)
    return (jnp.asarray(cams), jnp.asarray(points), jnp.asarray(cam_idx), jnp.asarray(pt_idx),
            jnp.asarray(features), jnp.asarray(weights))


def rodrigues_rotate(rot, x):
    """Rotates each row of x by the axis-angle vector in the same row of rot."""
    theta2 = jnp.sum(rot * rot, axis=-1, keepdims=True)
    theta = jnp.sqrt(theta2)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    w = rot / theta
    w_cross_x = jnp.cross(w, x)
    tmp = jnp.sum(w * x, axis=-1, keepdims=True) * (1.0 - cos)
    return x * cos + w_cross_x * sin + w * tmp


def ba_residuals(cams, points, features, weights):
    """Residuals of observations whose camera and point rows are given."""
    rotated = rodrigues_rotate(cams[:, 0:3], points - cams[:, 3:6])
    projected = rotated[:, 0:2] / rotated[:, 2:3]
    rsq = jnp.sum(projected * projected, axis=-1, keepdims=True)
    distortion = 1.0 + cams[:, 9:10] * rsq + cams[:, 10:11] * rsq * rsq
    predicted = projected * distortion * cams[:, 6:7] + cams[:, 7:9]
    return weights[:, None] * (predicted - features)


def ba_picked(cams, points, cam_idx, pt_idx, features, weights):
    return ba_residuals(jnp.take(cams, cam_idx, axis=0), jnp.take(points, pt_idx, axis=0),
                        features, weights)


def ba_blocks(cams, points, cam_idx, pt_idx, features, weights):
    """Per observation, d residual / d (camera row, point row): [obs, 2, 14].
    One forward pass per parameter of a row, as a shift `delta` added to the
    picked rows of every observation."""
    picked_cams = jnp.take(cams, cam_idx, axis=0)
    picked_points = jnp.take(points, pt_idx, axis=0)

    def shifted(delta):
        return ba_residuals(picked_cams + delta[:11], picked_points + delta[11:], features, weights)

    return jax.jacfwd(shifted)(jnp.zeros(14))


def ba_loss(cams, points, cam_idx, pt_idx, features, weights):
    r = ba_picked(cams, points, cam_idx, pt_idx, features, weights)
    return 0.5 * jnp.sum(r * r)


def run_ba():
    data = ba_data()
    res = jax.jit(ba_picked)
    blocks = jax.jit(ba_blocks)
    grad = jax.jit(jax.grad(ba_loss, argnums=(0, 1)))
    bench("BA", "f", res, *data)
    bench("BA", "jacobian", blocks, *data)
    bench("BA", "grad", grad, *data)
    r = res(*data)
    j = blocks(*data)
    g = grad(*data)
    print(f"BA value     residual_sum={float(jnp.sum(r))!r} jacobian_sum={float(jnp.sum(j))!r} "
          f"grad_sums={sums(g)}", flush=True)


# ------------------------------------------------------------------- GP

GP_N = 1000


def gp_data():
    i = np.arange(GP_N)
    x = np.linspace(-5.0, 5.0, GP_N)
    y = np.sin(x) + 0.3 * np.cos(3.1 * x) + 0.1 * np.sin(37.0 * i)
    theta = np.array([np.log(1.2), np.log(0.9), np.log(0.3)])  # lengthscale, amplitude, noise
    return jnp.asarray(x), jnp.asarray(y), jnp.asarray(theta)


def gp_nll(theta, x, y):
    lengthscale, amplitude, noise = jnp.exp(theta)
    d = x[:, None] - x[None, :]
    k = amplitude ** 2 * jnp.exp(-0.5 * d * d / lengthscale ** 2) + noise ** 2 * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    z = solve_triangular(chol, y, lower=True)
    alpha = solve_triangular(chol, z, lower=True, trans=1)
    n = x.shape[0]
    return 0.5 * jnp.dot(y, alpha) + jnp.sum(jnp.log(jnp.diagonal(chol))) + 0.5 * n * jnp.log(2 * jnp.pi)


def run_gp():
    x, y, theta = gp_data()
    f = jax.jit(gp_nll)
    vg = jax.jit(jax.value_and_grad(gp_nll))
    bench("GP", "f", f, theta, x, y)
    bench("GP", "vgrad", vg, theta, x, y)
    value, grad = vg(theta, x, y)
    print(f"GP value     f={float(value)!r} grad={' '.join(repr(float(v)) for v in grad)}", flush=True)


def main():
    wanted = [a.upper() for a in sys.argv[1:]] or ["GMM", "BA", "GP"]
    print(f"jax {jax.__version__} numpy {np.__version__} threads {os.cpu_count()}", flush=True)
    for name, run in [("GMM", run_gmm), ("BA", run_ba), ("GP", run_gp)]:
        if name in wanted:
            run()


if __name__ == "__main__":
    main()
