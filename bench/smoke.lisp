;; The checks of the smoke runs (see README.md): a script given the
;; argument `smoke` loads this file, runs at a small size and checks its
;; own numbers. Each check prints
;;
;;   check LABEL: ERROR (tolerance TOLERANCE)
;;
;; and stops the script with an error when ERROR is above TOLERANCE or not
;; a number (NaN); tests/bench_scripts.rs reads these lines again.

(define (smoke-check label err tolerance)
  (println (format "check {}: {:.3e} (tolerance {:e})" label err tolerance))
  (unless (<= err tolerance)
    (error (format "smoke check {} failed: {} is above {}" label err tolerance))))

(define (relative-difference a b)
  "The largest |a - b| over the largest |b| (the largest |a - b| itself
where b is all zeros), for numbers, tensors and trees of them."
  (let* ((a (tree-flatten a)) (b (tree-flatten b)) (scale (max (abs b))))
    (/ (max (abs (- a b))) (if (> scale 0.0) scale 1.0))))
