// Programs whose numbers must agree between the CPU backend and a device
// backend: every tensor operation (forward and reverse), matrix products
// of every rank, loops with checkpoints, and workloads W1, W2 and W4 at
// reduced sizes. Included (`include!`) by the CUDA integration suite
// (`tests/cuda_backend.rs`, on a real GPU) and by the simulated-device
// tests inside the library, which bring `Engine`, `Value`, `Backend`,
// `Cpu` and `override_backend` into scope first.
//
// Each program runs in a fresh engine after `(seed! 7)`; its value (a
// number, tensor or list of them) is compared element by element.

/// Name, program.
pub const DEVICE_CASES: &[(&str, &str)] = &[
    (
        "complex arithmetic, functions, products and Fourier transforms",
        "(define x (randn '(6 8))) (define y (randn '(6 8)))
         (define (f x y)
           (let* ((z (complex x (* 0.5 y)))
                  (w (fft (* z (exp (* 0.3 z))) :axis 1))
                  (v (ifft2 (/ w (+ 2.0 (sin z))))))
             (+ (sum (square (abs w))) (real (sum (matmul (transpose z) v))) (sum (angle v)))))
         ((value-and-grad f :wrt '(0 1)) x y)",
    ),
    (
        "unary functions",
        "(define x (* 0.9 (randn '(7 33))))
         (define (f x) (sum (+ (exp x) (sin x) (cos x) (tanh x) (sigmoid x) (softplus x) (relu x)
                               (abs x) (sqrt (+ 2 x)) (log (+ 3 x)) (log1p (abs x)) (expm1 x)
                               (atan x) (sinh x) (cosh x) (tan (* 0.3 x)) (asin (* 0.5 (tanh x)))
                               (acos (* 0.5 (tanh x))) (log2 (+ 2 x)) (log10 (+ 2 x)) (neg x)
                               (* x (sign x)) (heaviside x) (floor x) (round x) (ceil x))))
         (value-and-grad f) ((value-and-grad f) x)",
    ),
    (
        "binary functions with broadcasting",
        "(define x (randn '(5 8))) (define row (randn '(8))) (define col (randn '(5 1)))
         (define (f x r c) (sum (+ (* x r) (/ c (+ 2 (* x x))) (pow (+ 2 (abs x)) r)
                                   (max x c) (min x r) (atan2 x c) (xlogy (abs r) (+ 1 (abs x)))
                                   (where (> x r) (* 2 x) (- c x)) (clamp x -0.5 0.5))))
         ((grad f :wrt '(0 1 2)) x row col)",
    ),
    (
        "comparisons and selection",
        "(define x (randn '(6 6)))
         (define (f x) (sum (* x (+ (> x 0) (>= x 0.1) (< x -0.2) (<= x 0.3) (= x x) (/= x 0)))))
         ((value-and-grad f) x)",
    ),
    (
        "reductions over axes",
        "(define x (randn '(4 5 6)))
         (define (f x) (+ (sum (sum x :axis 1)) (sum (max x :axis 2)) (sum (min x :axis '(0 2)))
                          (sum (prod (+ 1.5 (* 0.1 x)) :axis 0)) (sum (mean x :axis 1 :keepdims #t))
                          (max x) (min x) (prod (+ 1 (* 0.01 x))) (mean x)))
         ((value-and-grad f) x)",
    ),
    (
        "logsumexp, softmax and log-softmax",
        "(define x (* 3 (randn '(9 7))))
         (define (f x) (+ (logsumexp x) (sum (logsumexp x :axis 1)) (sum (* x (softmax x :axis 0)))
                          (sum (log-softmax x :axis 1))))
         ((value-and-grad f) x)",
    ),
    (
        "arg-extremes",
        "(define x (randn '(6 9)))
         (define (f x) (+ (sum (* x (argmax x :axis 1 :keepdims #t))) (sum (* x (argmin x :axis 0)))
                          (* (argmax x) (sum x))))
         ((value-and-grad f) x)",
    ),
    (
        "moving elements",
        "(define x (randn '(6 4)))
         (define (f x) (+ (sum (* (transpose x) (randn '(4 6))))
                          (sum (* (reshape x '(3 8)) (linspace 0 1 8)))
                          (sum (* (slice x 1 5) (slice x 0 4)))
                          (sum (* (slice x 1 3 :axis 1) (slice x 0 2 :axis 1)))
                          (sum (* (roll x 2 :axis 0) x)) (sum (* (roll x 1) x))
                          (sum (* (concat (list x x) :axis 1) (randn '(6 8))))
                          (sum (* (stack (list x (* 2 x))) (randn '(2 6 4))))
                          (sum (* (broadcast-to (sum x :axis 0) '(3 4)) (randn '(3 4))))
                          (sum (* (transpose (reshape x '(2 3 4)) '(1 2 0)) (randn '(3 4 2))))))
         ((value-and-grad f) x)",
    ),
    (
        "matrix products of every rank",
        "(define a (randn '(5 7))) (define b (randn '(7 3))) (define v (randn '(7))) (define u (randn '(5)))
         (define s (randn '(2 5 7))) (define t (randn '(2 7 3)))
         (define (f a b v u s t) (+ (sum (* (matmul a b) (randn '(5 3))))
                                    (sum (* (matmul a v) u)) (sum (* (matmul u a) v)) (matmul v v)
                                    (sum (matmul (transpose a) (randn '(5 4))))
                                    (sum (matmul (randn '(4 5)) a))
                                    (sum (* (matmul s t) (randn '(2 5 3)))) (sum (matmul s b))))
         ((grad f :wrt '(0 1 2 3 4 5)) a b v u s t)",
    ),
    (
        "a loop, checkpointed (revolve), with captured values",
        "(define u0 (sin (linspace 0 3 40))) (define k (randn '(40)))
         (define (loss u0 a)
           (sum (* (scan (lambda (u i) (+ u (* a (- (+ (roll u 1) (roll u -1)) (* 2 u))) (* 0.001 k i)))
                         u0 30 :checkpoint 'revolve :snapshots 4)
                   k)))
         ((grad loss :wrt '(0 1)) u0 0.2)",
    ),
    (
        "a loop with a list state (packed values)",
        "(define (loss x v)
           (let ((s (scan (lambda (s i) (list (+ (first s) (* 0.1 (second s))) (- (second s) (* 0.1 (sin (first s))))))
                          (list x v) 20 :checkpoint 'store-all)))
             (+ (sum (* (first s) (first s))) (sum (second s)))))
         ((grad loss :wrt '(0 1)) (randn '(8)) (randn '(8)))",
    ),
    (
        "a loop over sequences (rows of arrays and numbers in, stacked outputs out)",
        "(define xs (randn '(12 6))) (define ts (linspace 0 1 12)) (define W (* 0.3 (randn '(6 6))))
         (define (loss W h0 xs)
           (let ((r (scan (lambda (h row)
                            (let ((h (tanh (+ (matmul W h) (first row) (second row)))))
                              (list h (list (sum h) (* (second row) h)))))
                          h0 (list xs ts) :checkpoint 'revolve :snapshots 3)))
             (+ (sum (first r)) (sum (first (second r))) (sum (* (second (second r)) xs)))))
         (list (loss W (randn '(6)) xs) ((grad loss :wrt '(0 1 2)) W (randn '(6)) xs))",
    ),
    (
        "a while-loop over arrays (online checkpointing), reverse and forward",
        "(define (loss a u0)
           (sum (while-loop (lambda (u) (< (sum (* u u)) 20.0))
                            (lambda (u) (+ u (* a (tanh (roll u 1))) 0.05))
                            u0 :snapshots 3)))
         (list (loss 0.3 (linspace 0 1 16)) ((grad loss :wrt '(0 1)) 0.3 (linspace 0 1 16))
               (jvp loss (list 0.3 (linspace 0 1 16)) (list 1.0 (ones '(16)))))",
    ),
    (
        "a loop over numbers (run on the host)",
        "(define (loss a) (scan (lambda (x i) (+ x (* a (sin x)))) 0.5 25))
         (list (loss 0.3) ((grad loss) 0.3))",
    ),
    (
        "a loop over a list of numbers (run on the host, reverse included)",
        "(define (loss a)
           (let ((s (scan (lambda (s i) (list (+ (first s) (* a (second s))) (- (second s) (* a (first s)))))
                          (list 1.0 0.0) 30)))
             (+ (first s) (* 2 (second s)))))
         (list (loss 0.1) ((grad loss) 0.1))",
    ),
    (
        "many operands joined (more than one kernel's parameters)",
        "(define (f x) (sum (* (stack (map (lambda (k) (* x (+ 1 (* 0.01 k)))) (range 150)))
                               (randn '(150 3)))))
         (define (g x) (sum (* (tensor (map (lambda (k) (* (sum x) k)) (range 90))) (linspace 0 1 90))))
         (define (h x) (stack (map (lambda (k) (* x (+ 1 (* 0.01 k)))) (range 150))))
         (list ((value-and-grad f) (randn '(3))) ((value-and-grad g) (randn '(3))) ((jit h) (randn '(3))))",
    ),
    (
        "declared derivatives (defderiv)",
        "(defderiv softclip (x) (tanh x) ((- 1 (pow (tanh x) 2))))
         (define (f x) (sum (* x (softclip (* 2 x)))))
         (list ((value-and-grad f) (randn '(5 4))) (hvp f (list (randn '(3))) (randn '(3))))",
    ),
    (
        "forward mode and second order",
        "(define (f x) (sum (* (tanh x) (exp (* 0.5 x)))))
         (define x (randn '(6)))
         (list (jvp f (list x) (list (randn '(6)))) ((hessian f) x) (vjp (lambda (x) (* x x)) (list x) (randn '(6))))",
    ),
    (
        "W1: Rosenbrock gradient (n = 10^4)",
        "(define x (linspace -1.0 1.0 10000))
         (define (rosenbrock x)
           (let ((a (slice x 0 -1)) (b (slice x 1)))
             (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))
         (list ((value-and-grad rosenbrock) x) ((jit rosenbrock) x))",
    ),
    (
        "W2: MLP training step (batch 32, 64-48-48-10, tanh, softmax cross-entropy)",
        "(define (layer fan-in fan-out) (list (/ (randn (list fan-in fan-out)) (sqrt fan-in)) (zeros fan-out)))
         (define params (append (layer 64 48) (layer 48 48) (layer 48 10)))
         (define x (randn '(32 64)))
         (define y (= (floor (* 10.0 (rand '(32 1)))) (arange 10)))
         (define (loss params x y)
           (let* ((h1 (tanh (+ (matmul x (nth params 0)) (nth params 1))))
                  (h2 (tanh (+ (matmul h1 (nth params 2)) (nth params 3))))
                  (logits (+ (matmul h2 (nth params 4)) (nth params 5))))
             (neg (mean (sum (* y (log-softmax logits :axis 1)) :axis 1)))))
         (define vg ((value-and-grad loss) params x y))
         (list (first vg) (map (lambda (p g) (- p (* 0.01 g))) params (second vg)))",
    ),
    (
        "W4: heat equation (N = 200, T = 200, revolve with 10 snapshots)",
        "(define u0 (sin (* 3.0 (linspace 0.0 1.0 200))))
         (define (loss u0 a)
           (let ((u (scan (lambda (u i) (+ u (* a (- (+ (roll u 1) (roll u -1)) (* 2.0 u)))))
                          u0 200 :checkpoint 'revolve :snapshots 10)))
             (sum (* u u))))
         ((grad loss :wrt '(0 1)) u0 0.25)",
    ),
    (
        "indexing: gather and scatter-add kernels, index-set on the host",
        "(define t (randn '(7 5))) (define u (randn '(3 2 5)))
         (define idx [[0 6] [3 -1] [3 2]])
         (define (f t u) (+ (sum (* (gather t idx) u)) (sum (* (gather t [1 1 4] :axis 1) (gather t [2 0 0] :axis 1)))
                            (sum (* t (scatter-add t [6 0 6] (reshape (slice u 0 1 :axis 1) '(3 5)) :axis 0)))
                            (sum (* t (index-set t [2 2] (* 2 (gather t [4 5])))))))
         ((value-and-grad f :wrt '(0 1)) t u)",
    ),
    (
        "sequences and triangles",
        "(define x (randn '(4 6)))
         (define (f x) (sum (* x (+ (cumsum x :axis 1) (cumprod (* 0.5 x) :axis 0) (flip x :axis 1)))))
         (define (g x) (let ((m (matmul x (transpose x)))) (sum (* (tril m) (triu m 1) (diag (diagonal m))))))
         (list ((value-and-grad f) x) ((value-and-grad g) x))",
    ),
    (
        "linear algebra: factors and solves",
        "(define b (randn '(2 4 4))) (define r (randn '(2 4 3)))
         (define (f b r) (let* ((a (+ (matmul b (transpose b '(0 2 1))) (* 4 (eye 4))))
                               (l (cholesky a)))
                          (+ (sum (* r (triangular-solve l r))) (sum (solve a r))
                             (sum (triangular-solve l r :transpose #t :lower #t)) (sum (inv a)))))
         ((value-and-grad f :wrt '(0 1)) b r)",
    ),
    (
        "take-along and its reverse, put-along-add",
        "(define x (randn '(6 9))) (define rows (floor (* 8.99 (rand '(6 4)))))
         (define cols (floor (* 5.99 (rand '(3 9)))))
         (define (f x) (let ((a (take-along x rows :axis 1)) (b (take-along x cols :axis 0)))
                         (+ (sum (* a a)) (sum (* b (sin b))))))
         ((value-and-grad f) x)",
    ),
    (
        "einsum as batched products",
        "(define a (randn '(4 3 5))) (define b (randn '(4 5 2)))
         (define (f a) (+ (sum (einsum \"bij,bjk->bik\" a b)) (einsum \"bij,bij->\" a a)))
         ((value-and-grad f) a)",
    ),
    (
        "NumPy functions (square, cbrt, exp2, hypot, logaddexp, logaddexp2, sinc, deg2rad, rad2deg)",
        "(define x (randn '(6 40))) (define y (randn '(40)))
         (define (f x y) (sum (+ (square x) (cbrt (+ 3 x)) (exp2 x) (hypot x y) (logaddexp x y)
                                 (logaddexp2 (* 2 x) y) (sinc x) (deg2rad x) (rad2deg (sin y)))))
         (list (f x y) ((grad f :wrt '(0 1)) x y)
               ((hessian (lambda (v) (f v (slice y 0 5)))) (slice (flatten x) 0 5)))",
    ),
    (
        "special functions (lgamma, digamma, polygamma, erf, erfc, multigammaln)",
        "(define x (randn '(6 40)))
         (define (f x) (let ((p (+ 0.2 (abs x))))
           (sum (+ (lgamma p) (lgamma (- -1.5 (* 0.3 (tanh x)))) (digamma p) (polygamma 1 p)
                   (polygamma 2 (+ 1 p)) (erf x) (erfc (* 3 x)) (multigammaln (+ 1.5 p) 3)))))
         (list ((value-and-grad f) x) ((hessian (lambda (v) (f v))) (slice (flatten x) 0 5)))",
    ),
    (
        "dense linear algebra: determinants, spectra, least squares, matrix-exp, stacks of SVDs, a shared triangle",
        "(define a (randn '(2 4 4))) (define t (randn '(5 3))) (define b (randn '(5)))
         (define s (randn '(3 5 4))) (define r (randn '(3 4 2)))
         (define (f a t s) (+ (sum (det a)) (sum (second (slogdet (+ a (* 6 (eye 4))))))
                            (sum (* (car (eigh a)) (car (eigh a)))) (sum (* (second (svd t)) (second (svd t))))
                            (sum (* (second (qr t)) (second (qr t)))) (sum (lstsq t b))
                            (sum (matrix-exp (* 0.5 a)))
                            (sum (* (first (svd s)) (sin (first (svd s))))) (sum (second (svd s)))
                            (sum (triangular-solve (+ (* 3 (eye 4)) (triu (index a 0))) r :lower #f))))
         (list (f a t s) ((grad f :wrt '(0 1 2)) a t s))",
    ),
    (
        "custom rules: a defvjp solve, a defjvp transposed, in a loop",
        "(defvjp my-solve (A b) (solve A b)
           (lambda (g y) (let ((lam (solve (transpose A) g))) (list (- (outer lam y)) lam))))
         (defjvp my-exp (x) (exp x) (lambda (x t) (* (exp x) t)))
         (define A (+ (* 4 (eye 6)) (* 0.3 (randn '(6 6))))) (define b (randn '(6)))
         (define (f A b) (sum (my-exp (* 0.2 (scan (lambda (s i) (my-solve A (tanh s))) b 3)))))
         (list ((value-and-grad f :wrt '(0 1)) A b)
               (jvp f (list A b) (list (randn '(6 6)) (randn '(6))))
               ((hessian (lambda (b) (f A b))) b))",
    ),
];

/// f32 programs (single precision, issue 19): both backends multiply
/// matrices in f32 arithmetic (faer's f32 kernels, cuBLAS's sgemm), in
/// different summation orders, so they agree within f32 accumulation
/// (compared at `F32_TOLERANCE` of the largest number).
pub const F32_DEVICE_CASES: &[(&str, &str)] = &[(
    "f32 elementwise work, products, reductions and gradients",
    "(define x (astype (randn '(6 40)) 'f32)) (define w (astype (randn '(40 8)) 'f32))
     (define (f x w) (let ((h (matmul x w))) (sum (* (tanh h) (+ 1.5 (* 0.1 h h))))))
     (list ((value-and-grad f :wrt '(0 1)) x w)
           (softmax (matmul x w) :axis 1)
           (scan (lambda (s i) (* 0.9 (+ s (sin s)))) (index x 0) 5))",
)];

/// How close the device's f32 numbers are to the CPU's, relative to the
/// largest.
pub const F32_TOLERANCE: f64 = 1e-5;

/// The numbers of a result, in order (lists flattened).
pub fn numbers_of(value: &Value, into: &mut Vec<f64>) {
    match value {
        Value::Int(n) => into.push(*n as f64),
        Value::Float(x) => into.push(*x),
        Value::Bool(b) => into.push(f64::from(u8::from(*b))),
        Value::Tensor(t) => into.extend(t.iter().copied()),
        Value::TensorF32(t) => into.extend(t.iter().map(|&x| f64::from(x))),
        Value::Pair(_) => {
            let mut rest = value.clone();
            while let Value::Pair(pair) = rest {
                numbers_of(&pair.car, into);
                rest = pair.cdr.clone();
            }
        }
        _ => {}
    }
}

/// Runs `program` after `(seed! 7)` in a fresh engine; its numbers.
pub fn numbers(program: &str) -> Vec<f64> {
    let mut engine = Engine::new();
    engine.eval("(seed! 7)").expect("seed! runs");
    let value = engine
        .eval(program)
        .unwrap_or_else(|e| panic!("{program}\nfails: {e}"));
    let mut out = Vec::new();
    numbers_of(&value, &mut out);
    out
}

/// Runs every case on the CPU backend and with `runner`, and checks they agree to
/// `tolerance` relative to the largest magnitude of each result (summing
/// orders differ between devices). Gives how many numbers were compared.
pub fn compare_all(runner: std::rc::Rc<dyn Backend>, tolerance: f64) -> usize {
    let mut compared = 0;
    // The reference is the CPU backend itself, whatever the process chose.
    let cpu: std::rc::Rc<dyn Backend> = std::rc::Rc::new(Cpu);
    let cases = DEVICE_CASES
        .iter()
        .map(|case| (case, tolerance))
        .chain(F32_DEVICE_CASES.iter().map(|case| (case, tolerance.max(F32_TOLERANCE))));
    for ((name, program), tolerance) in cases {
        override_backend(Some(cpu.clone()));
        let want = numbers(program);
        override_backend(Some(runner.clone()));
        let got = numbers(program);
        override_backend(None);
        assert_eq!(got.len(), want.len(), "{name}: result sizes differ");
        assert!(!want.is_empty(), "{name}: no numbers to compare");
        let scale = want.iter().fold(1e-300f64, |m, x| m.max(x.abs()));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let agree = (g.is_nan() && w.is_nan()) || (g - w).abs() <= tolerance * scale;
            assert!(agree, "{name}: number {k}: device {g}, cpu {w} (scale {scale})");
        }
        compared += want.len();
    }
    compared
}
