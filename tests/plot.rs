//! `plot` and `plot-lines`: PNG and SVG files with the requested size,
//! title, labels and lines; non-finite and (with :log-y) non-positive
//! points skipped; and a clear error, never a panic, for every bad call.

#[path = "common/charts.rs"]
mod charts;

use charts::{BLUE, Fixture, ORANGE, check_errors, count, decode_png, has_text, svg_texts};
use epsilon::{Engine, EvalErrorKind};

#[test]
fn plot_writes_a_png_of_the_requested_size_with_a_line_and_text() {
    let mut f = Fixture::new();
    let returned = f.run(
        r#"(plot xs ys {a.png} :title "Sine" :xlabel "x" :ylabel "sin x" :width 640 :height 480)"#,
        &["a.png"],
    );
    assert_eq!(returned, f.path("a.png").display().to_string());
    let (width, height, pixels) = decode_png(&f.path("a.png"));
    assert_eq!((width, height), (640, 480));
    assert!(pixels.iter().any(|p| *p != pixels[0]), "a blank image");
    assert!(count(&pixels, BLUE) > 300, "the line is drawn");
    // Text is anti-aliased: grey levels between black and white.
    let greys = pixels
        .iter()
        .filter(|p| p[0] == p[1] && p[1] == p[2] && (30..200).contains(&p[0]))
        .count();
    assert!(greys > 50, "labels are drawn ({greys} grey pixels)");

    f.run("(plot ys {default.png})", &["default.png"]);
    let (width, height, _) = decode_png(&f.path("default.png"));
    assert_eq!((width, height), (800, 600));
}

#[test]
fn plot_writes_an_svg_with_the_title_labels_and_a_polyline() {
    let mut f = Fixture::new();
    f.run(
        r#"(plot xs ys {a.svg} :title "Loss & <accuracy>" :xlabel "epoch" :ylabel "loss")"#,
        &["a.svg"],
    );
    let svg = std::fs::read_to_string(f.path("a.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    assert!(
        has_text(&svg, "Loss &amp; &lt;accuracy&gt;"),
        "the escaped title"
    );
    assert!(has_text(&svg, "epoch") && has_text(&svg, "loss"));
    assert!(svg.contains("<polyline") || svg.contains("<path"));
    assert!(svg.contains(r#"width="800" height="600""#));
}

#[test]
fn plot_lines_draws_every_series_with_a_legend() {
    let mut f = Fixture::new();
    f.run(
        r#"(plot-lines xs (list ys (cos xs)) {b.svg} :labels (list "train" "test") :title "Two")"#,
        &["b.svg"],
    );
    let svg = std::fs::read_to_string(f.path("b.svg")).unwrap();
    assert!(
        has_text(&svg, "train") && has_text(&svg, "test"),
        "the legend"
    );
    assert!(has_text(&svg, "Two"));
    assert!(svg.contains("#1F77B4") || svg.contains("#1f77b4"));
    assert!(svg.contains("#FF7F0E") || svg.contains("#ff7f0e"));

    f.run(
        r#"(plot-lines xs (list ys (cos xs)) {b.png} :labels (list "train" "test"))"#,
        &["b.png"],
    );
    let (_, _, pixels) = decode_png(&f.path("b.png"));
    assert!(count(&pixels, BLUE) > 300 && count(&pixels, ORANGE) > 300);

    // Without :labels the legend numbers the lines; without xs each series
    // is drawn against 0, 1, ... (lengths may differ).
    f.run(
        "(plot-lines (list (list 1 2 3) [4 5 6 7]) {c.svg})",
        &["c.svg"],
    );
    let svg = std::fs::read_to_string(f.path("c.svg")).unwrap();
    assert!(has_text(&svg, "line 1") && has_text(&svg, "line 2"));
}

#[test]
fn vectors_may_be_lists_rows_or_columns() {
    let mut f = Fixture::new();
    f.run("(plot (list 1 2 3) (list 1 4 9) {list.svg})", &["list.svg"]);
    f.run(
        "(plot (reshape [1 2 3] '(3 1)) (reshape [1 4 9] '(1 3)) {column.svg})",
        &["column.svg"],
    );
    f.run("(plot [5] [7] {single.png})", &["single.png"]);
    let (_, _, pixels) = decode_png(&f.path("single.png"));
    assert!(count(&pixels, BLUE) > 10, "a lone point is drawn as a dot");
}

#[test]
fn non_finite_points_are_skipped() {
    let mut f = Fixture::new();
    f.run(
        "(plot (list 0 1 2 3 4) (list 1 (/ 0.0 0.0) 2 (/ 1.0 0.0) 3) {gaps.svg})",
        &["gaps.svg"],
    );
    let svg = std::fs::read_to_string(f.path("gaps.svg")).unwrap();
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
}

#[test]
fn log_y_draws_decades_and_skips_non_positive_values() {
    let mut f = Fixture::new();
    f.run(
        "(plot (list 0 1 2 3 4) (list 1 0.1 0 -1 1e-6) {log.svg} :log-y #t)",
        &["log.svg"],
    );
    let svg = std::fs::read_to_string(f.path("log.svg")).unwrap();
    for tick in ["1", "0.001", "0.0001", "1e-5", "1e-6"] {
        assert!(has_text(&svg, tick), "tick {tick} in {:?}", svg_texts(&svg));
    }
    // A narrow log axis gets ticks between decades, labelled apart.
    f.run(
        "(plot (list 1 2 3) (list 1 1.0005 1.001) {narrow.svg} :log-y #t)",
        &["narrow.svg"],
    );
    let svg = std::fs::read_to_string(f.path("narrow.svg")).unwrap();
    let mut ticks: Vec<String> = svg_texts(&svg)
        .into_iter()
        .filter(|t| t.starts_with("1.00"))
        .collect();
    let count = ticks.len();
    ticks.sort();
    ticks.dedup();
    assert!(count >= 5 && ticks.len() == count, "{ticks:?}");
    // Tiny and huge values, far past what f64 ratios hold, still plot.
    f.run(
        "(plot (list 1 2 3) (list 1e-300 1 1e300) {wide.png} :log-y #t)",
        &["wide.png"],
    );
}

/// The y tick labels of a chart whose x values are all at least 100: the
/// numeric labels under 100.
fn y_ticks(svg: &str) -> Vec<f64> {
    svg_texts(svg)
        .iter()
        .filter_map(|t| t.parse::<f64>().ok())
        .filter(|v| *v < 100.0)
        .collect()
}

/// `v` as `m` times a power of ten, `m` rounded to the nearest whole number
/// when it is one to 1e-9.
fn mantissa(v: f64) -> Option<u32> {
    let m = v / 10f64.powf(v.log10().floor());
    ((m - m.round()).abs() < 1e-9).then_some(m.round() as u32)
}

#[test]
fn log_axes_under_two_decades_tick_at_round_values() {
    let mut f = Fixture::new();
    // About one decade: ticks at 1, 2 and 5 times powers of ten.
    f.run(
        "(plot (list 100 200 300) (list 0.3 1 3) {decade.svg} :log-y #t)",
        &["decade.svg"],
    );
    let ticks = y_ticks(&std::fs::read_to_string(f.path("decade.svg")).unwrap());
    assert!(ticks.len() >= 3, "{ticks:?}");
    for v in &ticks {
        assert!(
            matches!(mantissa(*v), Some(1 | 2 | 5)),
            "tick {v} is not 1, 2 or 5 times a power of ten: {ticks:?}"
        );
    }
    // Under half a decade: every whole multiple of a power of ten.
    f.run(
        "(plot (list 100 200 300) (list 2 3 4.5) {half.svg} :log-y #t)",
        &["half.svg"],
    );
    let ticks = y_ticks(&std::fs::read_to_string(f.path("half.svg")).unwrap());
    assert_eq!(ticks, [2.0, 3.0, 4.0]);
}

#[test]
fn extreme_and_constant_data_get_sensible_axes() {
    let mut f = Fixture::new();
    for (k, ys) in [
        "(list 5 5 5)",
        "(list 0 0 0)",
        "(list 1 1.0000000000000002 1.0000000000000004)",
        "(list -1e300 0 1e300)",
        "(list 123456789 123456789.02 123456789.04)",
    ]
    .iter()
    .enumerate()
    {
        let name = format!("e{k}.png");
        f.run(&format!("(plot (list 1 2 3) {ys} {{{name}}})"), &[&name]);
    }
}

#[test]
fn uppercase_extensions_work_and_the_result_is_the_path() {
    let mut f = Fixture::new();
    let path = f.run("(plot ys {UP.SVG})", &["UP.SVG"]);
    assert!(path.ends_with("UP.SVG"));
    assert!(std::fs::metadata(f.path("UP.SVG")).unwrap().len() > 1000);
}

#[test]
fn bad_calls_give_clear_errors() {
    let mut f = Fixture::new();
    let cases: &[(&str, &str)] = &[
        (
            "(plot (list 1 2) (list 1 2 3) {e.png})",
            "xs has 2 values but ys has 3",
        ),
        ("(plot (list) (list) {e.png})", "xs is empty"),
        ("(plot (list) {e.png})", "ys is empty"),
        ("(plot xs ys {e.jpg})", "must end in .png or .svg"),
        ("(plot xs ys {e})", "must end in .png or .svg"),
        ("(plot \"abc\" ys {e.png})", "xs must be a vector"),
        (
            "(plot xs (list 1 \"b\") {e.png})",
            "ys: element 1 is string \"b\", not a number",
        ),
        (
            "(plot (zeros '(2 3)) ys {e.png})",
            "got a tensor of shape [2 3]",
        ),
        ("(plot 3 {e.png})", "ys must be a vector"),
        ("(plot xs ys 'e.png)", "the path must be a string"),
        ("(plot xs ys {e.png} :title 3)", ":title must be a string"),
        (
            "(plot xs ys {e.png} :xlabel 'x)",
            ":xlabel must be a string",
        ),
        (
            "(plot xs ys {e.png} :width 10)",
            ":width must be between 200 and 4096",
        ),
        (
            "(plot xs ys {e.png} :height \"big\")",
            ":height must be an integer",
        ),
        (
            "(plot xs ys {e.png} :color \"red\")",
            "unknown option :color",
        ),
        (
            "(plot (list 1 2) (list (/ 0.0 0.0) (/ 1.0 0.0)) {e.png})",
            "no point has finite x and y",
        ),
        (
            "(plot (list 1 2) (list 0 -1) {e.png} :log-y #t)",
            "positive finite y",
        ),
        (
            "(plot (list 1 2 3) (list -1.7e308 0 1.7e308) {e.png})",
            "too large in magnitude",
        ),
        (
            "(plot-lines xs (list ys ys) {e.svg} :labels (list \"a\"))",
            ":labels has 1 label for 2 series",
        ),
        (
            "(plot-lines xs (list ys) {e.svg} :labels (list 'a))",
            ":labels must be a list of strings",
        ),
        (
            "(plot-lines xs (list ys) {e.svg} :labels \"a\")",
            ":labels must be a list of strings",
        ),
        ("(plot-lines xs ys {e.svg})", "takes a list of series"),
        ("(plot-lines (list 1 2 3) {e.svg})", "for one line use plot"),
        (
            "(plot-lines xs (list) {e.svg})",
            "the list of series is empty",
        ),
        (
            "(plot-lines xs (list ys (list 1 2)) {e.svg})",
            "xs has 50 values but series 2 has 2",
        ),
    ];
    check_errors(&mut f, cases);
}

#[test]
fn an_unwritable_path_is_an_io_error_naming_it() {
    let mut f = Fixture::new();
    for name in ["missing/dir/e.png", "missing/dir/e.svg"] {
        let source = f.source(&format!("(plot xs ys {{{name}}})"), &[name]);
        let err = f.engine.eval(&source).unwrap_err();
        assert_eq!(err.kind(), EvalErrorKind::Io);
        let path = f.path(name).display().to_string();
        assert!(
            err.message().contains(&format!("cannot write {path}")),
            "{}",
            err.message()
        );
    }
    // try catches it like any other error.
    let source = f.source(
        "(try (plot xs ys {missing/e.png}) (catch (e) \"caught\"))",
        &["missing/e.png"],
    );
    assert_eq!(
        String::try_from(f.engine.eval(&source).unwrap()).unwrap(),
        "caught"
    );
}

#[test]
fn plot_has_documentation() {
    let engine = Engine::new();
    for name in ["plot", "plot-lines"] {
        let doc = engine.doc(name).expect("documented");
        assert!(doc.starts_with(&format!("({name} ")), "{doc}");
        assert!(doc.contains(".png") && doc.contains(".svg"), "{doc}");
    }
}
