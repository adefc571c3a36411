//! `einsum`: the table harness on the common subscripts (matrix products,
//! batches under `...`, traces, diagonals, outer products, transposes,
//! three operands, implicit outputs, sums), values against the
//! compositions they stand for, errors naming the subscripts and shapes,
//! and a proptest of random subscripts against a naive loop over every
//! assignment of the indices, written here.

use super::ops::{arg, instance};
use super::table::run_table;
use super::*;
use std::collections::BTreeMap;

/// `(lambda (a b ..) (einsum "subscripts" a b ..))` over arguments of
/// `shapes`.
fn einsum_case(subscripts: &str, shapes: Vec<Vec<usize>>) -> super::ops::Instance {
    let names: Vec<String> = (0..shapes.len()).map(|k| format!("a{k}")).collect();
    let names = names.join(" ");
    instance(
        format!("(lambda ({names}) (einsum \"{subscripts}\" {names}))"),
        shapes.into_iter().map(|s| arg(s, R2)).collect(),
    )
}

#[test]
fn einsum_common_subscripts() {
    run_table("einsum", false, |p| {
        let [a, b, c] = p.dims;
        match p.variant % 12 {
            0 => einsum_case("ij,jk->ik", vec![vec![a, b], vec![b, c]]),
            1 => einsum_case("ij,jk", vec![vec![a, b], vec![b, c]]),
            2 => einsum_case("bij,bjk->bik", vec![vec![2, a, b], vec![2, b, c]]),
            3 => einsum_case("ii->", vec![vec![a, a]]),
            4 => einsum_case("ii->i", vec![vec![a, a]]),
            5 => einsum_case("i,j->ij", vec![vec![a], vec![b]]),
            6 => einsum_case("ij->ji", vec![vec![a, b]]),
            7 => einsum_case("ij,jk,kl->il", vec![vec![a, b], vec![b, c], vec![c, 2]]),
            8 => einsum_case("i->", vec![vec![a]]),
            9 => einsum_case("ij,ij->", vec![vec![a, b], vec![a, b]]),
            10 => einsum_case("ij,j->i", vec![vec![a, b], vec![b]]),
            _ => einsum_case("ijk,ikl->jl", vec![vec![a, b, 2], vec![a, 2, c]]),
        }
    });
}

#[test]
fn einsum_batched_with_an_ellipsis() {
    run_table("einsum ...", true, |p| {
        let [a, b, c] = p.dims;
        match p.variant % 3 {
            0 => einsum_case("...ij,...jk->...ik", vec![vec![a, b], vec![b, c]]),
            1 => einsum_case("...ii->...i", vec![vec![a, a]]),
            _ => einsum_case("...i,...i->...", vec![vec![a, b], vec![a, b]]),
        }
    });
}

#[test]
fn einsum_equals_the_compositions_it_stands_for() {
    let mut e = engine();
    eval(
        &mut e,
        "(seed! 11) (define a (randn '(3 4))) (define b (randn '(4 5))) (define c (randn '(5 2)))
         (define s (randn '(4 4))) (define v (randn '(4))) (define w (randn '(3)))
         (define ba (randn '(6 1 3 4))) (define bb (randn '(5 4 2)))",
    );
    let cases = [
        ("(einsum \"ij,jk->ik\" a b)", "(matmul a b)"),
        ("(einsum \"ij,jk\" a b)", "(matmul a b)"),
        ("(einsum \"ij,jk,kl->il\" a b c)", "(matmul (matmul a b) c)"),
        ("(einsum \"ij->ji\" a)", "(transpose a)"),
        ("(einsum \"ji\" a)", "(transpose a)"),
        ("(einsum \"ii->\" s)", "(trace s)"),
        ("(einsum \"ii\" s)", "(trace s)"),
        ("(einsum \"ii->i\" s)", "(diagonal s)"),
        ("(einsum \"i,j->ij\" v w)", "(outer v w)"),
        ("(einsum \"i,j\" v w)", "(outer v w)"),
        ("(einsum \"i->\" v)", "(sum v)"),
        ("(einsum \"ij->j\" a)", "(sum a :axis 0)"),
        ("(einsum \"ij,ij->ij\" a a)", "(* a a)"),
        ("(einsum \"ij,j->i\" a v)", "(matmul a v)"),
        ("(einsum \"i,i\" v v)", "(dot v v)"),
        ("(einsum \"ij,i->ij\" a w)", "(* a (reshape w '(3 1)))"),
        ("(einsum \"...ij,...jk->...ik\" ba bb)", "(matmul ba bb)"),
        ("(einsum \"...ij,jk\" ba b)", "(matmul ba b)"),
        ("(einsum \"a...,a->...\" a w)", "(matmul w a)"),
        ("(einsum \"ij, jk -> ki\" a b)", "(transpose (matmul a b))"),
        ("(einsum \",i->i\" 2.0 v)", "(* 2 v)"),
    ];
    for (left, right) in cases {
        let got = array(&eval(&mut e, left)).unwrap();
        let want = array(&eval(&mut e, right)).unwrap();
        compare(left, &got, &want, 1e-12).unwrap();
        // The same inside jit and grad.
        let jitted = array(&eval(&mut e, &format!("((jit (lambda () {left})))"))).unwrap();
        compare(&format!("jit {left}"), &jitted, &want, 1e-12).unwrap();
    }
    // np.einsum('Ab,aB', ...) orders the implicit output A, B, a, b.
    let shape = eval(
        &mut e,
        "(shape (einsum \"Ab,aB\" (ones '(2 3)) (ones '(4 5))))",
    );
    assert_eq!(shape.to_string(), "(2 5 4 3)");
    // A gradient through einsum is the gradient through the composition.
    let g1 = eval(
        &mut e,
        "((grad (lambda (a) (sum (sin (einsum \"ij,jk->ik\" a b))))) a)",
    );
    let g2 = eval(&mut e, "((grad (lambda (a) (sum (sin (matmul a b))))) a)");
    compare("grad", &array(&g1).unwrap(), &array(&g2).unwrap(), 1e-12).unwrap();
}

#[test]
fn einsum_compiles_to_the_tape_of_the_matmul_it_stands_for() {
    let mut e = engine();
    eval(
        &mut e,
        "(define a (ones '(4 3 5))) (define b (ones '(4 5 2)))
         (define (stats f) (let ((s (tape-stats f (list a))))
           (map (lambda (key) (assoc key s)) '(instructions flops peak-bytes optimized-nodes))))",
    );
    for (left, right) in [
        ("(einsum \"bij,bjk->bik\" a b)", "(matmul a b)"),
        (
            "(einsum \"bij,bjk->bki\" a b)",
            "(transpose (matmul a b) '(0 2 1))",
        ),
    ] {
        let einsum = eval(&mut e, &format!("(stats (lambda (a) (sum (sin {left}))))"));
        let matmul = eval(&mut e, &format!("(stats (lambda (a) (sum (sin {right}))))"));
        assert_eq!(einsum.to_string(), matmul.to_string(), "{left}");
    }
}

#[test]
fn einsum_errors_name_the_subscripts_and_shapes() {
    let mut e = engine();
    let cases = [
        ("(einsum \"ij,jk->ik\" [[1 2]])", "2 input terms but 1"),
        ("(einsum \"ij,jk->ik\" [[1 2 3]] [[1 2] [3 4]])", "[1 3]"),
        ("(einsum \"ij,jk->ik\" [[1 2 3]] [[1 2] [3 4]])", "[2 2]"),
        ("(einsum \"ij\" [1 2])", "\"ij\""),
        ("(einsum \"i$\" [[1 2]])", "'$'"),
        ("(einsum \"ij->k\" [[1 2]])", "'k'"),
        ("(einsum \"ij->ii\" [[1 2]])", "repeats"),
        ("(einsum \"ii\" [[1 2 3] [4 5 6]])", "repeated index 'i'"),
        ("(einsum \"...i->\" [[1 2]])", "'...'"),
        // A size-1 axis broadcasts (as in NumPy); other sizes must agree.
        ("(einsum \"ij,ij->ij\" [[1 2 3]] [[1 2] [3 4]])", "[1 3]"),
        ("(einsum 'ij [[1 2]])", "string"),
        ("(einsum \"i\" \"x\")", "string"),
        (
            "((grad (lambda (a) (sum (einsum \"ij,jk\" a a)))) [[1 2 3] [4 5 6]])",
            "[2 3]",
        ),
    ];
    for (source, needle) in cases {
        match e.eval(source) {
            Ok(value) => panic!("{source} gave {value}"),
            Err(error) => {
                let message = error.to_string();
                assert!(message.contains(needle), "{source}: {message}");
                assert!(message.contains("einsum"), "{source}: {message}");
            }
        }
    }
}

// ------------------------------------------------------------ against a naive loop

/// `subscripts` ("ab,bc->ac", explicit output) over `operands` by a loop
/// over every assignment of the indices.
fn naive(subscripts: &str, operands: &[ArrayD<f64>]) -> ArrayD<f64> {
    let (inputs, output) = subscripts.split_once("->").expect("explicit output");
    let terms: Vec<Vec<char>> = inputs.split(',').map(|t| t.chars().collect()).collect();
    let mut sizes: BTreeMap<char, usize> = BTreeMap::new();
    for (term, x) in terms.iter().zip(operands) {
        for (&c, &n) in term.iter().zip(x.shape()) {
            sizes.insert(c, n);
        }
    }
    let letters: Vec<char> = sizes.keys().copied().collect();
    let out: Vec<char> = output.chars().collect();
    let out_shape: Vec<usize> = out.iter().map(|c| sizes[c]).collect();
    let mut result = ArrayD::zeros(IxDyn(&out_shape));
    let total: usize = letters.iter().map(|c| sizes[c]).product();
    for flat in 0..total {
        let mut at: BTreeMap<char, usize> = BTreeMap::new();
        let mut rest = flat;
        for c in letters.iter().rev() {
            at.insert(*c, rest % sizes[c]);
            rest /= sizes[c];
        }
        let mut product = 1.0;
        for (term, x) in terms.iter().zip(operands) {
            let index: Vec<usize> = term.iter().map(|c| at[c]).collect();
            product *= x[IxDyn(&index)];
        }
        let index: Vec<usize> = out.iter().map(|c| at[c]).collect();
        result[IxDyn(&index)] += product;
    }
    result
}

/// Random subscripts over the letters `a..e`: 1 to 3 operands of rank 0
/// to 3 (a letter may repeat in one operand), and an output that is a
/// shuffled subset of the letters used.
fn subscripts() -> impl Strategy<Value = (String, Vec<usize>, u64)> {
    let term = proptest::collection::vec(0..5usize, 0..=3);
    (
        proptest::collection::vec(term, 1..=3),
        proptest::collection::vec(any::<bool>(), 5),
        proptest::array::uniform5(1..=3usize),
        any::<u64>(),
    )
        .prop_map(|(terms, keep, sizes, seed)| {
            let letter = |k: usize| char::from(b'a' + k as u8);
            let mut used: Vec<usize> = terms.iter().flatten().copied().collect();
            used.sort_unstable();
            used.dedup();
            let mut output: Vec<usize> = used.iter().copied().filter(|&k| keep[k]).collect();
            // A shuffle from the seed.
            let mut rng = Rng(seed);
            for i in (1..output.len()).rev() {
                output.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let text: Vec<String> = terms
                .iter()
                .map(|t| t.iter().map(|&k| letter(k)).collect())
                .collect();
            let out: String = output.iter().map(|&k| letter(k)).collect();
            (format!("{}->{out}", text.join(",")), sizes.to_vec(), seed)
        })
}

#[test]
fn einsum_of_random_subscripts_matches_a_naive_loop() {
    let engine = RefCell::new(engine());
    let mut runner = TestRunner::new(op_config(64));
    let result = runner.run(&subscripts(), |(subscripts, sizes, seed)| {
        let mut e = engine.borrow_mut();
        let (inputs, _) = subscripts.split_once("->").unwrap_or_default();
        let mut rng = Rng(seed);
        let operands: Vec<ArrayD<f64>> = inputs
            .split(',')
            .map(|t| {
                let shape: Vec<usize> = t.bytes().map(|c| sizes[usize::from(c - b'a')]).collect();
                rng.array(&shape, R2)
            })
            .collect();
        let want = naive(&subscripts, &operands);
        let names: Vec<String> = (0..operands.len()).map(|k| format!("*e{k}*")).collect();
        for (name, x) in names.iter().zip(&operands) {
            e.set(name, value_of(x));
        }
        let call = format!("(einsum \"{subscripts}\" {})", names.join(" "));
        let fail = |m: String| TestCaseError::fail(format!("{call}: {m}"));
        let got = array(&try_eval(&mut e, &call).map_err(fail)?).map_err(fail)?;
        compare("eager", &got, &want, 1e-10).map_err(fail)?;
        let jit = format!("((jit (lambda ({0}) {call})) {0})", names.join(" "));
        let jitted = array(&try_eval(&mut e, &jit).map_err(fail)?).map_err(fail)?;
        compare("jit", &jitted, &want, 1e-10).map_err(fail)?;
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// A sum of a matrix product over its rows or columns is rewritten to the
/// product of a summed operand (`egraph/tensor/graph.rs`): compiled values
/// agree with eager ones (which multiply first), for stacks, a broadcast
/// matrix, keepdims or not, and the gradients agree with finite
/// differences.
#[test]
fn sums_of_matrix_products_over_rows_or_columns() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 3) (define a (randn '(4 30 5))) (define b (randn '(4 5 6))) (define m (randn '(5 6)))",
    );
    for (f, args) in [
        ("(lambda (a b) (sum (matmul a b) :axis 1))", "a b"),
        (
            "(lambda (a b) (sum (matmul a b) :axis 2 :keepdims #t))",
            "a b",
        ),
        (
            "(lambda (a b) (sum (matmul a b) :axis -2 :keepdims #t))",
            "a m",
        ),
        ("(lambda (a b) (sum (matmul a b) :axis 0))", "(nth a 0) m"),
        ("(lambda (a b) (sum (matmul a b) :axis 1))", "(nth a 0) m"),
    ] {
        let eager = array(&eval(&mut engine, &format!("({f} {args})"))).unwrap();
        let compiled = array(&eval(&mut engine, &format!("((jit {f}) {args})"))).unwrap();
        assert_eq!(eager.shape(), compiled.shape(), "{f}");
        for (e, c) in eager.iter().zip(&compiled) {
            assert!(
                close(*e, *c, 1e-12),
                "{f} on {args}: eager {e}, compiled {c}"
            );
        }
        let check = format!("(check-grad (lambda (a b) (sum (sin ({f} a b)))) (list {args}))");
        let error = eval(&mut engine, &check).as_f64().unwrap();
        assert!(error < 1e-6, "{check}: relative error {error}");
    }
}
