"""Reference values for tests/complex.rs: tests/data/complex.tsv.

Each row is a name, a Lisp expression over the fixed points below (Z, W
complex vectors of length 4, M and N complex 3 x 3 matrices, X a real
vector of length 6), and the numbers NumPy or JAX (float64) gives for the
same computation, flattened with complex numbers as (real, imaginary)
pairs. Derivatives follow JAX's convention: jax.grad of a real function
of complex inputs, jax.grad(holomorphic=True), jax.vjp and jax.jvp.

    python3 bench/reference/complex_reference.py > tests/data/complex.tsv
"""

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

rng = np.random.default_rng(20261207)


def points(shape):
    # Moduli 0.3 to 1.2, off the axes (away from the branch cuts).
    r = rng.uniform(0.3, 1.2, shape)
    theta = rng.uniform(0.2, 1.3, shape) * rng.choice([1, -1], shape) + rng.choice([0, np.pi], shape)
    return r * np.exp(1j * theta)


Z = points(4)
W = points(4)
M = points((3, 3))
N = points((3, 3))
X = rng.uniform(-1, 1, 6)
H = M @ M.conj().T + 3 * np.eye(3)  # Hermitian positive definite


def lisp_number(z):
    return f"#c({float(z.real)!r} {float(z.imag)!r})"


def lisp_tensor(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return lisp_number(a) if np.iscomplexobj(a) else repr(float(a))
    return "[" + " ".join(lisp_tensor(x) for x in a) + "]"


def flat(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flat(v)]
    a = np.asarray(value)
    if np.iscomplexobj(a):
        return list(np.stack([a.real, a.imag], -1).ravel())
    return list(a.astype(float).ravel())


PRELUDE = {
    "Z": lisp_tensor(Z),
    "W": lisp_tensor(W),
    "M": lisp_tensor(M),
    "N": lisp_tensor(N),
    "X": lisp_tensor(X),
    "H": lisp_tensor(H),
}

ROWS = []


def row(name, lisp, value):
    ROWS.append((name, lisp, flat(value)))


# Elementwise functions: values, JAX's gradient of Re sum(w f(z)), the
# holomorphic derivative, and jvp along W.
FUNCTIONS = [
    ("exp", jnp.exp), ("log", jnp.log), ("log1p", jnp.log1p), ("expm1", jnp.expm1),
    ("sqrt", jnp.sqrt), ("sin", jnp.sin), ("cos", jnp.cos), ("tan", jnp.tan),
    ("asin", jnp.arcsin), ("acos", jnp.arccos), ("atan", jnp.arctan),
    ("sinh", jnp.sinh), ("cosh", jnp.cosh), ("tanh", jnp.tanh),
    ("sigmoid", lambda z: 1 / (1 + jnp.exp(-z))), ("square", jnp.square),
    ("exp2", jnp.exp2), ("log2", jnp.log2), ("log10", jnp.log10),
]
for name, f in FUNCTIONS:
    row(f"{name} value", f"({name} Z)", f(Z))
    row(f"{name} grad", f"((grad (lambda (z) (real (sum (* W ({name} z)))))) Z)",
        jax.grad(lambda z: jnp.real(jnp.sum(W * f(z))))(Z))
    row(f"{name} holomorphic", f"((grad (lambda (z) (sum ({name} z))) :holomorphic #t) Z)",
        jax.grad(lambda z: jnp.sum(f(z)), holomorphic=True)(Z))
    row(f"{name} jvp", f"(jvp (lambda (z) ({name} z)) (list Z) (list W))",
        list(jax.jvp(f, (Z,), (W,))))
    row(f"{name} vjp", f"(vjp (lambda (z) ({name} z)) (list Z) W)",
        [f(Z), list(jax.vjp(f, Z)[1](W))])

# Functions with real results, and non-holomorphic ones.
REAL = [
    ("abs", jnp.abs), ("angle", jnp.angle), ("real", jnp.real), ("imag", jnp.imag),
]
for name, f in REAL:
    row(f"{name} value", f"({name} Z)", f(Z))
    row(f"{name} grad", f"((grad (lambda (z) (sum (* X ({name} z)))))  Z)".replace("X", "[0.5 -1.0 2.0 0.25]"),
        jax.grad(lambda z: jnp.sum(jnp.array([0.5, -1.0, 2.0, 0.25]) * f(z)))(Z))
row("conj value", "(conj Z)", np.conj(Z))
row("conj grad", "((grad (lambda (z) (real (sum (* W (conj z)))))) Z)",
    jax.grad(lambda z: jnp.real(jnp.sum(W * jnp.conj(z))))(Z))
row("sign value", "(sign Z)", np.sign(Z))
row("abs squared grad", "((grad (lambda (z) (sum (square (abs z))))) Z)",
    jax.grad(lambda z: jnp.sum(jnp.abs(z) ** 2))(Z))

# Arithmetic, with real operands and broadcasting.
row("add", "(+ Z W 2.0)", Z + W + 2.0)
row("sub", "(- Z W)", Z - W)
row("neg", "(- Z)", -Z)
row("mul", "(* Z W)", Z * W)
row("mul real", "(* Z [1.0 2.0 3.0 4.0])", Z * np.array([1.0, 2.0, 3.0, 4.0]))
row("div", "(/ Z W)", Z / W)
row("div real", "(/ 2.0 Z)", 2.0 / Z)
row("reciprocal", "(/ Z)", 1 / Z)
row("pow int", "(pow Z 3)", Z ** 3)
row("pow negative", "(pow Z -2)", Z ** -2.0)
row("pow real", "(pow Z 0.7)", Z ** 0.7)
row("pow complex", "(pow Z W)", Z ** W)
row("real pow complex", "(pow 2.0 Z)", 2.0 ** Z)
row("broadcast", "(+ (reshape Z '(4 1)) W)", Z.reshape(4, 1) + W)
row("pow grad", "((grad (lambda (z) (real (sum (* W (pow z W)))))) Z)",
    jax.grad(lambda z: jnp.real(jnp.sum(W * z ** W)))(Z))
row("div grad", "((grad (lambda (z) (real (sum (/ W z))))) Z)",
    jax.grad(lambda z: jnp.real(jnp.sum(W / z)))(Z))
row("div grad divisor", "((grad (lambda (w) (imag (sum (/ Z w))))) W)",
    jax.grad(lambda w: jnp.imag(jnp.sum(Z / w)))(W))

# Reductions and shapes.
row("sum", "(sum M)", M.sum())
row("sum axis", "(sum M :axis 0)", M.sum(0))
row("mean axis", "(mean M :axis 1)", M.mean(1))
row("prod", "(prod Z)", np.prod(Z))
row("prod axis", "(prod M :axis 1)", np.prod(M, 1))
row("prod axis keepdims", "(prod M :axis 0 :keepdims #t)", np.prod(M, 0, keepdims=True))
row("cumsum", "(cumsum M :axis 1)", np.cumsum(M, 1))
row("var", "(var Z)", np.var(Z))
row("std", "(std M)", np.std(M))
row("norm", "(norm Z)", np.linalg.norm(Z))
row("norm fro", "(norm M :ord 'fro :axis '(0 1))", np.linalg.norm(M, "fro"))
row("transpose", "(transpose M)", M.T)
row("flip", "(flip Z)", Z[::-1])
row("roll", "(roll Z 1)", np.roll(Z, 1))
row("concat real", "(concat (list Z X))", np.concatenate([Z, X]))
row("stack", "(stack (list Z W) :axis 1)", np.stack([Z, W], 1))
row("where", "(where [1.0 0.0 1.0 0.0] Z W)", np.where([1, 0, 1, 0], Z, W))
row("gather", "(gather M '(2 0) :axis 1)", M[:, [2, 0]])
row("literal", "[#c(1.0 2.0) 3.0 #c(0.0 -1.0)]", np.array([1 + 2j, 3, -1j]))
row("complex", "(complex X 0.5)", X + 0.5j)
row("prod grad", "((grad (lambda (z) (real (* #c(0.3 0.7) (prod z))))) Z)",
    jax.grad(lambda z: jnp.real((0.3 + 0.7j) * jnp.prod(z)))(Z))

# Products.
row("matmul", "(matmul M N)", M @ N)
row("matmul vector", "(matmul M (slice Z 0 3))", M @ Z[:3])
row("matmul real", "(matmul M [[1.0 2.0] [0.5 -1.0] [3.0 0.0]])", M @ np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]]))
row("dot", "(dot Z W)", np.dot(Z, W))
row("vdot", "(vdot Z W)", np.vdot(Z, W))
row("outer", "(outer Z W)", np.outer(Z, W))
row("einsum", "(einsum \"ij,jk->ik\" M N)", np.einsum("ij,jk->ik", M, N))
row("einsum three", "(einsum \"i,ij,j->\" (slice Z 0 3) M (slice W 0 3))", np.einsum("i,ij,j->", Z[:3], M, W[:3]))
row("trace", "(trace M)", np.trace(M))
row("quadratic form grad", "((grad (lambda (v) (real (vdot v (matmul H v))))) (slice Z 0 3))",
    jax.grad(lambda v: jnp.real(jnp.vdot(v, H @ v)))(Z[:3]))
row("rayleigh grad", "((grad (lambda (v) (/ (real (vdot v (matmul H v))) (real (vdot v v))))) (slice Z 0 3))",
    jax.grad(lambda v: jnp.real(jnp.vdot(v, H @ v)) / jnp.real(jnp.vdot(v, v)))(Z[:3]))
row("matmul grad", "((grad (lambda (m) (real (sum (* N (matmul m m)))))) M)",
    jax.grad(lambda m: jnp.real(jnp.sum(N * (m @ m))))(M))
row("matmul vjp", "(vjp (lambda (a b) (matmul a b)) (list M N) M)",
    [M @ N, list(jax.vjp(lambda a, b: a @ b, M, N)[1](M))])

# Fourier transforms.
row("fft", "(fft Z)", np.fft.fft(Z))
row("fft real", "(fft X)", np.fft.fft(X))
row("fft pad", "(fft Z :n 7)", np.fft.fft(Z, 7))
row("fft cut", "(fft X :n 4)", np.fft.fft(X, 4))
row("fft ortho", "(fft Z :norm 'ortho)", np.fft.fft(Z, norm="ortho"))
row("fft forward", "(fft Z :norm 'forward)", np.fft.fft(Z, norm="forward"))
row("fft axis", "(fft M :axis 0)", np.fft.fft(M, axis=0))
row("ifft", "(ifft Z)", np.fft.ifft(Z))
row("ifft pad", "(ifft M :n 5 :axis 0)", np.fft.ifft(M, 5, axis=0))
row("rfft", "(rfft X)", np.fft.rfft(X))
row("rfft odd", "(rfft X :n 5)", np.fft.rfft(X, 5))
row("irfft", "(irfft Z)", np.fft.irfft(Z))
row("irfft odd", "(irfft Z :n 7)", np.fft.irfft(Z, 7))
row("irfft short", "(irfft Z :n 4)", np.fft.irfft(Z, 4))
row("fft2", "(fft2 M)", np.fft.fft2(M))
row("ifft2", "(ifft2 M)", np.fft.ifft2(M))
row("fft2 axes", "(fft2 (reshape Z '(2 2 1)) :axes '(0 1))", np.fft.fft2(Z.reshape(2, 2, 1), axes=(0, 1)))
row("fftfreq", "(fftfreq 7 0.1)", np.fft.fftfreq(7, 0.1))
row("fftfreq even", "(fftfreq 8)", np.fft.fftfreq(8))
row("rfftfreq", "(rfftfreq 7 0.5)", np.fft.rfftfreq(7, 0.5))
row("fftshift", "(fftshift (fftfreq 7))", np.fft.fftshift(np.fft.fftfreq(7)))
row("ifftshift", "(ifftshift Z)", np.fft.ifftshift(Z))
row("fft grad", "((grad (lambda (z) (real (sum (* W (fft z)))))) Z)",
    jax.grad(lambda z: jnp.real(jnp.sum(W * jnp.fft.fft(z))))(Z))
row("fft power grad", "((grad (lambda (z) (sum (square (abs (fft z :n 6)))))) Z)",
    jax.grad(lambda z: jnp.sum(jnp.abs(jnp.fft.fft(z, 6)) ** 2))(Z))
row("ifft grad", "((grad (lambda (z) (imag (sum (* W (ifft z)))))) Z)",
    jax.grad(lambda z: jnp.imag(jnp.sum(W * jnp.fft.ifft(z))))(Z))
row("rfft grad", "((grad (lambda (x) (real (sum (* (slice W 0 4) (rfft x)))))) X)",
    jax.grad(lambda x: jnp.real(jnp.sum(W[:4] * jnp.fft.rfft(x))))(X))
row("irfft grad", "((grad (lambda (z) (sum (* X (irfft z :n 6))))) Z)",
    jax.grad(lambda z: jnp.sum(X * jnp.fft.irfft(z, 6)))(Z))
row("irfft odd grad", "((grad (lambda (z) (sum (* (slice X 0 5) (irfft z :n 5))))) (slice Z 0 3))",
    jax.grad(lambda z: jnp.sum(X[:5] * jnp.fft.irfft(z, 5)))(Z[:3]))
row("fft2 grad", "((grad (lambda (m) (real (sum (* N (fft2 m)))))) M)",
    jax.grad(lambda m: jnp.real(jnp.sum(N * jnp.fft.fft2(m))))(M))
row("fft jvp", "(jvp (lambda (z) (fft z)) (list Z) (list W))",
    list(jax.jvp(jnp.fft.fft, (Z,), (W,))))
row("fft vjp", "(vjp (lambda (z) (fft z)) (list Z) W)",
    [np.fft.fft(Z), list(jax.vjp(jnp.fft.fft, Z)[1](W))])

# Linear algebra (through the real embedding).
A = points((4, 3))
B = points((2, 3))
import jax.scipy.linalg as jsl  # noqa: E402
PRELUDE["A"] = lisp_tensor(A)
PRELUDE["B"] = lisp_tensor(B)
row("solve", "(solve M (slice Z 0 3))", np.linalg.solve(M, Z[:3]))
row("solve matrix", "(solve M N)", np.linalg.solve(M, N))
row("solve real matrix", "(solve (real M) (slice Z 0 3))", np.linalg.solve(M.real, Z[:3]))
row("solve real rhs", "(solve M [1.0 2.0 3.0])", np.linalg.solve(M, np.array([1.0, 2.0, 3.0])))
row("triangular-solve", "(triangular-solve M (slice Z 0 3))", jsl.solve_triangular(np.tril(M), Z[:3], lower=True))
row("triangular-solve upper transposed", "(triangular-solve M N :lower #f :transpose #t)",
    jsl.solve_triangular(np.triu(M), N, lower=False, trans="T"))
row("inv", "(inv M)", np.linalg.inv(M))
row("lstsq tall", "(lstsq A Z)", np.linalg.lstsq(A, Z, rcond=None)[0])
row("lstsq wide", "(lstsq B (slice W 0 2))", np.linalg.lstsq(B, W[:2], rcond=None)[0])
row("matrix-exp", "(matrix-exp M)", jsl.expm(M))
row("solve grad", "((grad (lambda (m) (real (sum (* (slice W 0 3) (solve m (slice Z 0 3))))))) M)",
    jax.grad(lambda m: jnp.real(jnp.sum(W[:3] * jnp.linalg.solve(m, Z[:3]))))(M))
row("solve grad rhs", "((grad (lambda (b) (imag (sum (solve M b))))) (slice Z 0 3))",
    jax.grad(lambda b: jnp.imag(jnp.sum(jnp.linalg.solve(M, b))))(Z[:3]))
row("inv grad", "((grad (lambda (m) (real (sum (* N (inv m)))))) M)",
    jax.grad(lambda m: jnp.real(jnp.sum(N * jnp.linalg.inv(m))))(M))
row("matrix-exp grad", "((grad (lambda (m) (real (sum (* N (matrix-exp m)))))) M)",
    jax.grad(lambda m: jnp.real(jnp.sum(N * jsl.expm(m))))(M))
row("lstsq grad", "((grad (lambda (a) (real (sum (* (slice W 0 3) (lstsq a Z)))))) A)",
    jax.grad(lambda a: jnp.real(jnp.sum(W[:3] * jnp.linalg.lstsq(a, Z)[0])))(A))

# The Hermitian eigendecomposition (phases differ between libraries:
# compared through quantities that do not depend on them).
C = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 1.0, 0.75]])
PRELUDE["C"] = lisp_tensor(C)
row("eigh values", "(first (eigh H))", np.linalg.eigvalsh(H))
row("eigh projector", "(let ((v (index (transpose (second (eigh H))) 0))) (outer v (conj v)))",
    np.outer(np.linalg.eigh(H)[1][:, 0], np.linalg.eigh(H)[1][:, 0].conj()))
row("eigh moduli", "(square (abs (second (eigh H))))", np.abs(np.linalg.eigh(H)[1]) ** 2)
row("eigh reconstruction", "(let* ((e (eigh H)) (v (second e))) (matmul (* v (first e)) (transpose (conj v))))", H)
row("eigh values grad", "((grad (lambda (h) (sum (* [1.0 2.0 3.0] (first (eigh h)))))) H)",
    jax.grad(lambda h: jnp.sum(jnp.array([1.0, 2.0, 3.0]) * jnp.linalg.eigvalsh(h)))(H))
row("eigh moduli grad", "((grad (lambda (h) (sum (* C (square (abs (second (eigh h)))))))) H)",
    jax.grad(lambda h: jnp.sum(C * jnp.abs(jnp.linalg.eigh(h)[1]) ** 2))(H))

# Determinants.
row("det", "(det M)", np.linalg.det(M))
row("det stack", "(det (stack (list M N)))", np.linalg.det(np.stack([M, N])))
row("slogdet", "(slogdet M)", list(np.linalg.slogdet(M)))
row("det grad", "((grad (lambda (m) (real (* #c(0.3 -0.7) (det m))))) M)",
    jax.grad(lambda m: jnp.real((0.3 - 0.7j) * jnp.linalg.det(m)))(M))
row("logabsdet grad", "((grad (lambda (m) (second (slogdet m)))) M)",
    jax.grad(lambda m: jnp.linalg.slogdet(m)[1])(M))
row("sign grad", "((grad (lambda (m) (imag (* #c(0.4 0.9) (first (slogdet m)))))) M)",
    jax.grad(lambda m: jnp.imag((0.4 + 0.9j) * jnp.linalg.slogdet(m)[0]))(M))

# Cholesky, QR and SVD: the Cholesky factor is unique; QR and SVD are
# compared through quantities that do not depend on the phases each
# library picks for its vectors.
D = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6], [-0.9, 0.7, 1.3], [0.2, -0.5, 0.9]])
E = np.array([[1.4, -0.3, 0.6], [-0.8, 0.9, 0.25]])
PRELUDE["D"] = lisp_tensor(D)
PRELUDE["E"] = lisp_tensor(E)
row("cholesky", "(cholesky H)", np.linalg.cholesky(H))
row("cholesky grad", "((grad (lambda (h) (real (sum (* N (cholesky h)))))) H)",
    jax.grad(lambda h: jnp.real(jnp.sum(N * jnp.linalg.cholesky(h))))(H))
row("cholesky grad imaginary", "((grad (lambda (h) (imag (sum (* M (cholesky h)))))) H)",
    jax.grad(lambda h: jnp.imag(jnp.sum(M * jnp.linalg.cholesky(h))))(H))


def qr_moduli(a):
    q, r = jnp.linalg.qr(a)
    return jnp.abs(q) ** 2, jnp.abs(r) ** 2


def qr_loss(a, left, right):
    q, r = qr_moduli(a)
    return jnp.sum(left * q) + jnp.sum(right * r)


QR_LISP = "(let ((f (qr {a}))) (list (square (abs (first f))) (square (abs (second f)))))"
QR_LOSS = "(lambda (a) (let ((f (qr a))) (+ (sum (* {left} (square (abs (first f))))) (sum (* {right} (square (abs (second f))))))))"
row("qr moduli tall", QR_LISP.format(a="A"), list(qr_moduli(A)))
row("qr moduli wide", QR_LISP.format(a="B"), list(qr_moduli(B)))
row("qr moduli square", QR_LISP.format(a="M"), list(qr_moduli(M)))
row("qr grad tall", f"((grad {QR_LOSS.format(left='D', right='C')}) A)",
    jax.grad(lambda a: qr_loss(a, D, C))(A))
row("qr grad wide", f"((grad {QR_LOSS.format(left='(slice (slice C 0 2) 0 2 :axis 1)', right='E')}) B)",
    jax.grad(lambda a: qr_loss(a, C[:2, :2], E))(B))
row("qr grad square", f"((grad {QR_LOSS.format(left='C', right='(transpose C)')}) M)",
    jax.grad(lambda a: qr_loss(a, C, C.T))(M))


def svd_moduli(a):
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return jnp.abs(u) ** 2, s, jnp.abs(vh) ** 2


def svd_loss(a, left, weights, right):
    u, s, vh = svd_moduli(a)
    return jnp.sum(left * u) + jnp.sum(weights * s) + jnp.sum(right * vh)


SVD_LISP = "(let ((f (svd {a}))) (list (square (abs (first f))) (second f) (square (abs (third f)))))"
SVD_LOSS = ("(lambda (a) (let ((f (svd a))) (+ (sum (* {left} (square (abs (first f))))) "
            "(sum (* {weights} (second f))) (sum (* {right} (square (abs (third f))))))))")
row("svd moduli tall", SVD_LISP.format(a="A"), list(svd_moduli(A)))
row("svd moduli wide", SVD_LISP.format(a="B"), list(svd_moduli(B)))
row("svd moduli square", SVD_LISP.format(a="M"), list(svd_moduli(M)))
row("svd grad tall", f"((grad {SVD_LOSS.format(left='D', weights='[1.0 2.0 3.0]', right='C')}) A)",
    jax.grad(lambda a: svd_loss(a, D, np.array([1.0, 2.0, 3.0]), C))(A))
row("svd grad wide", f"((grad {SVD_LOSS.format(left='(slice (slice C 0 2) 0 2 :axis 1)', weights='[0.5 -1.5]', right='E')}) B)",
    jax.grad(lambda a: svd_loss(a, C[:2, :2], np.array([0.5, -1.5]), E))(B))
row("svd grad square", f"((grad {SVD_LOSS.format(left='C', weights='[-1.0 0.5 2.0]', right='(transpose C)')}) M)",
    jax.grad(lambda a: svd_loss(a, C, np.array([-1.0, 0.5, 2.0]), C.T))(M))

# Jacobians.
row("jacobian real of complex", "((jacobian (lambda (z) (* (real z) (square (imag z))))) (slice Z 0 3))",
    jax.jacrev(lambda z: jnp.real(z) * jnp.imag(z) ** 2)(Z[:3]))
row("jacobian holomorphic", "((jacobian (lambda (z) (* z (sin z))) :holomorphic #t) (slice Z 0 3))",
    jax.jacfwd(lambda z: z * jnp.sin(z), holomorphic=True)(Z[:3]))
row("jacobian complex of real", "((jacobian (lambda (x) (exp (complex x (* 2 x))))) (slice X 0 3))",
    jax.jacfwd(lambda x: jnp.exp(x + 2j * x))(X[:3]))

print("# Complex references from NumPy %s and JAX %s (float64); made by bench/reference/complex_reference.py" % (np.__version__, jax.__version__))
for name, text in PRELUDE.items():
    print(f"#define\t{name}\t{text}")
for name, lisp, numbers in ROWS:
    print(f"{name}\t{lisp}\t" + " ".join(repr(float(x)) for x in numbers))
