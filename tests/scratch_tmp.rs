use egg::{Id, RecExpr, Symbol};
use epsilon::egraph::{
    ExprBuilder, Math, MathGraph, all_rules, extract::extract, reverse::gradient,
};

#[test]
fn scratch() {
    let text = "(/ (pow (sin (cos (exp (* x y)))) 3) (+ 1 (+ (pow x 2) (pow y 2))))";
    let ideal = "(/ (- (* (* -2 x) (/ (pow (sin (cos (exp (* x y)))) 3) (+ 1 (+ (pow x 2) (pow y 2))))) (* (* 3 y) (* (exp (* x y)) (* (sin (exp (* x y))) (* (* (sin (cos (exp (* x y)))) (sin (cos (exp (* x y))))) (cos (cos (exp (* x y))))))))) (+ 1 (+ (pow x 2) (pow y 2))))";
    let expr: RecExpr<Math> = text.parse().unwrap();
    let mut b = ExprBuilder::new();
    let root = b.add_expr(&expr, &[Id::from(expr.as_ref().len() - 1)])[0];
    let g = gradient(&mut b, root, &[Symbol::from("x"), Symbol::from("y")]);
    let ideal: RecExpr<Math> = ideal.parse().unwrap();
    let iroot = b.add_expr(&ideal, &[Id::from(ideal.as_ref().len() - 1)])[0];
    let mut egraph = MathGraph::default();
    let mut map = Vec::new();
    for node in b.expr().as_ref() {
        map.push(egraph.add(egg::Language::map_children(node.clone(), |c| {
            map[usize::from(c)]
        })));
    }
    for iters in [4, 8, 12, 16, 24] {
        let runner = egg::Runner::default()
            .with_egraph(egraph.clone())
            .with_iter_limit(iters)
            .with_node_limit(200_000)
            .with_time_limit(std::time::Duration::from_secs(20))
            .run(all_rules());
        let e = &runner.egraph;
        let same = e.find(map[usize::from(g[0])]) == e.find(map[usize::from(iroot)]);
        let roots: Vec<Id> = g.iter().map(|&r| e.find(map[usize::from(r)])).collect();
        let ex = extract(e, &roots);
        println!(
            "iters {iters}: merged {same}, nodes {}, cost {} {:?}",
            e.total_number_of_nodes(),
            ex.dag_cost,
            runner.stop_reason
        );
    }
}
