;;; Numbers: integer/float promotion, division, integer operations,
;;; overflow, comparisons and the math functions of SPEC section 3.

;; ---- arithmetic and promotion ----
(+ 1 2)
;=> 3
(+)
;=> 0
(*)
;=> 1
(+ 1 2 3 4)
;=> 10
(+ 1 2.0)
;=> 3.0
(* 2 0.25)
;=> 0.5
(* 1.0 3)
;=> 3.0
(- 10)
;=> -10
(- 10 1 2)
;=> 7
(- 1.5)
;=> -1.5
(- 5 0.5)
;=> 4.5
(+ 0.1 0.2)
;=> 0.30000000000000004
(+ 9223372036854775807 1.0)
;=> 9.223372036854776e18

;; ---- float printing ----
0.1
;=> 0.1
1e-10
;=> 1e-10
1e16
;=> 1e16
1e15
;=> 1000000000000000.0
(* 1.0 100)
;=> 100.0
-0.0
;=> -0.0

;; ---- / always gives a float ----
(/ 1 2)
;=> 0.5
(/ 4 2)
;=> 2.0
(/ 12 2 3)
;=> 2.0
(/ 2)
;=> 0.5
(/ 1 0)
;!! division by the integer 0
(/ 1.5 0)
;!! division by the integer 0
(/ 1 0.0)
;=> inf
(/ -1 0.0)
;=> -inf
(/ 0.0 0.0)
;=> nan
(/ 0 0.0)
;=> nan
(/ 1 -0.0)
;=> -inf
(/ 0 0)
;!! division by the integer 0
(/ 0)
;!! division by the integer 0

;; ---- quotient, remainder, mod ----
(quotient 7 2)
;=> 3
(quotient -7 2)
;=> -3
(quotient 7 -2)
;=> -3
(quotient -7 -2)
;=> 3
(remainder 7 2)
;=> 1
(remainder -7 2)
;=> -1
(remainder 7 -2)
;=> 1
(mod 7 2)
;=> 1
(mod -7 2)
;=> 1
(mod 7 -2)
;=> -1
(mod -7 -2)
;=> -1
(mod 6 3)
;=> 0
(quotient 1 0)
;!! by the integer 0
(remainder 1 0)
;!! by the integer 0
(mod 1 0)
;!! by the integer 0
(quotient 7.5 2)
;!! integers

;; ---- integer overflow is an error, not a wrap ----
(+ 9223372036854775807 1)
;!! integer overflow
(- -9223372036854775807 2)
;!! integer overflow
(* 4611686018427387904 2)
;!! integer overflow
(define (fact n) (if (= n 0) 1 (* n (fact (- n 1)))))
(fact 21)
;!! integer overflow
(abs (- (- 9223372036854775807) 1))
;!! integer overflow
(- (- (- 9223372036854775807) 1))
;!! integer overflow
;; The only overflowing integer division: -2^63 / -1 is 2^63.
(quotient (- (- 9223372036854775807) 1) -1)
;!! integer overflow
(remainder (- (- 9223372036854775807) 1) -1)
;=> 0
(mod (- (- 9223372036854775807) 1) -1)
;=> 0
(pow 2 63)
;!! overflow
(pow -2 63)
;=> -9223372036854775808
(pow 2 62)
;=> 4611686018427387904

;; ---- pow ----
(pow 2 10)
;=> 1024
(pow 2 -1)
;=> 0.5
(pow 2.0 3)
;=> 8.0
(pow 4 0.5)
;=> 2.0
(pow 0 0)
;=> 1

;; ---- comparisons ----
(< 1 2 3)
;=> #t
(< 1 3 2)
;=> #f
(< 1 1)
;=> #f
(<= 1 1 2)
;=> #t
(> 3 2 1)
;=> #t
(> 3 1 2)
;=> #f
(>= 3 3 1)
;=> #t
(= 1 1.0)
;=> #t
(= 1 1 1)
;=> #t
(= 1 1 2)
;=> #f
(/= 1 2)
;=> #t
(/= 1 1)
;=> #f
(< 1 2.5)
;=> #t
(< -0.5 0)
;=> #t
(= (/ 0.0 0.0) (/ 0.0 0.0))
;=> #f
(< 9007199254740992 9007199254740993)
;=> #t
(not #f)
;=> #t
(not '())
;=> #t
(not 0)
;=> #f
(eq? 'a 'a)
;=> #t
(eq? 2 2)
;=> #t
(eq? '(1) '(1))
;=> #f
(equal? '(1 (2 "x")) '(1 (2 "x")))
;=> #t
(equal? 1 1.0)
;=> #f
(equal? "ab" "ab")
;=> #t

;; ---- sign, abs, neg keep integers ----
(neg 5)
;=> -5
(neg 2.5)
;=> -2.5
(abs -3)
;=> 3
(abs -2.5)
;=> 2.5
(sign -4)
;=> -1
(sign 0)
;=> 0
(sign 2.5)
;=> 1.0

;; ---- elementary functions (inputs with exactly representable results) ----
(sqrt 16)
;=> 4.0
(sqrt 2.25)
;=> 1.5
(sqrt -1)
;=> nan
(exp 0)
;=> 1.0
(log 1)
;=> 0.0
(log 0)
;=> -inf
(log1p 0)
;=> 0.0
(expm1 0)
;=> 0.0
(round (* 1000000 (log1p 1e-3)))
;=> 1000.0
(sin 0)
;=> 0.0
(cos 0)
;=> 1.0
(tan 0)
;=> 0.0
(= (asin 1) (/ pi 2))
;=> #t
(acos 1)
;=> 0.0
(atan 0)
;=> 0.0
(= (* 4 (atan 1)) pi)
;=> #t
(= (atan2 0 -1) pi)
;=> #t
(atan2 0 1)
;=> 0.0
(sinh 0)
;=> 0.0
(cosh 0)
;=> 1.0
(tanh 0)
;=> 0.0
(round (* 1000 (tanh 1)))
;=> 762.0
(sigmoid 0)
;=> 0.5
(sigmoid 1000)
;=> 1.0
(sigmoid -1000)
;=> 0.0
(relu -3)
;=> 0
(relu 2.5)
;=> 2.5
(relu -1.5)
;=> 0.0
(round (* 1000 (softplus 0)))
;=> 693.0
(softplus 1000)
;=> 1000.0
pi
;=> 3.141592653589793
(< (abs (sin pi)) 1e-15)
;=> #t

;; ---- min, max, clamp ----
(min 3 1 2)
;=> 1
(max 3 1 2)
;=> 3
(max 1 2.5)
;=> 2.5
(max 7)
;=> 7
(clamp 5 0 3)
;=> 3
(clamp -1 0 3)
;=> 0
(clamp 1.5 0 3)
;=> 1.5

;; ---- floor, ceil, round ----
(floor 2.7)
;=> 2.0
(floor -2.5)
;=> -3.0
(ceil 2.1)
;=> 3.0
(ceil -2.1)
;=> -2.0
(round 2.5)
;=> 2.0
(round 3.5)
;=> 4.0
(round -1.4)
;=> -1.0
(floor 5)
;=> 5
