//! Issue 21 part 3, "Pictures": markers, error bands, per-series xs and
//! log x axes for line charts; histograms, heatmaps and contour plots;
//! paths that are optional in a notebook and files written atomically.
//! Each chart is rendered, decoded and looked at (sizes, colours where
//! they say something, SVG elements), and each bad call gives an error
//! that names what is wrong.

#[path = "common/charts.rs"]
mod charts;

use charts::{
    BLUE, Fixture, ORANGE, VIRIDIS_HIGH, VIRIDIS_LOW, VIRIDIS_MID, centroid, check_errors, count,
    data_lines, decode_png, elements, embedded_image, has_text, read_svg,
};
use epsilon::{Engine, EvalErrorKind};

// Line charts: styles, bands, per-series xs, log x.

#[test]
fn scatter_draws_a_circle_per_point_and_both_adds_the_line() {
    let mut f = Fixture::new();
    f.run(r#"(plot xs ys {s.svg} :style "scatter")"#, &["s.svg"]);
    let svg = read_svg(&f, "s.svg");
    assert_eq!(elements(&svg, "circle"), 50, "one marker per point");
    assert_eq!(data_lines(&svg), 0, "no line");

    f.run(r#"(plot xs ys {b.svg} :style "both")"#, &["b.svg"]);
    let svg = read_svg(&f, "b.svg");
    assert_eq!(elements(&svg, "circle"), 50);
    assert_eq!(data_lines(&svg), 1);

    f.run(
        r#"(plot xs ys {s.png} :style "scatter" :width 400 :height 300)"#,
        &["s.png"],
    );
    let (width, height, pixels) = decode_png(&f.path("s.png"));
    assert_eq!((width, height), (400, 300));
    assert!(count(&pixels, BLUE) > 50 * 9, "filled markers");
}

#[test]
fn plot_lines_takes_a_style_per_series() {
    let mut f = Fixture::new();
    f.run(
        r#"(plot-lines xs (list ys (cos xs)) {m.svg} :style (list "scatter" "line"))"#,
        &["m.svg"],
    );
    let svg = read_svg(&f, "m.svg");
    // 50 markers and the legend's sample of the first series.
    assert_eq!(elements(&svg, "circle"), 51);
    assert!(data_lines(&svg) >= 1);
    // One style for all.
    f.run(
        r#"(plot-lines xs (list ys (cos xs)) {all.svg} :style "scatter")"#,
        &["all.svg"],
    );
    assert_eq!(elements(&read_svg(&f, "all.svg"), "circle"), 102);
}

#[test]
fn a_band_is_a_translucent_area_around_the_line() {
    let mut f = Fixture::new();
    let source = "(plot xs ys {band.svg} :band (list (- ys 0.5) (+ ys 0.5)))";
    f.run(source, &["band.svg"]);
    let svg = read_svg(&f, "band.svg");
    assert_eq!(elements(&svg, "polygon"), 1);
    assert!(svg.contains(r#"opacity="0.25""#), "translucent");
    // The band widens the vertical axis: sin ± 0.5 reaches ±1.5.
    assert!(has_text(&svg, "1.5") && has_text(&svg, "-1.5"));

    f.run(&source.replace("band.svg", "band.png"), &["band.png"]);
    let (_, _, pixels) = decode_png(&f.path("band.png"));
    // Tab10 blue at a quarter over white.
    let tinted = pixels
        .iter()
        .filter(|p| {
            let expected = [199.0, 221.0, 236.25];
            p.iter()
                .zip(expected)
                .all(|(&c, e)| (c as f64 - e).abs() <= 3.0)
        })
        .count();
    assert!(tinted > 5000, "{tinted} band pixels");
    assert!(
        count(&pixels, BLUE) > 300,
        "the line is drawn over the band"
    );
}

#[test]
fn plot_lines_takes_a_band_per_series_or_none() {
    let mut f = Fixture::new();
    f.run(
        "(plot-lines xs (list ys (cos xs)) {bands.svg} :band (list #f (list (- (cos xs) 0.1) (+ (cos xs) 0.1))))",
        &["bands.svg"],
    );
    let svg = read_svg(&f, "bands.svg");
    assert_eq!(elements(&svg, "polygon"), 1);
    // The band takes its series' colour (tab10 orange).
    let polygon = svg.split("<polygon").nth(1).unwrap();
    let polygon = &polygon[..polygon.find("/>").unwrap()];
    assert!(
        polygon.contains("#FF7F0E") || polygon.contains("#ff7f0e"),
        "{polygon}"
    );
}

#[test]
fn plot_lines_series_may_carry_their_own_xs() {
    let mut f = Fixture::new();
    f.run(
        "(plot-lines (list (list [0 1 2] [0 1 4]) (list (list 10 20) (list 5 6)) [3 2 1]) {own.png})",
        &["own.png"],
    );
    let (_, _, pixels) = decode_png(&f.path("own.png"));
    assert!(count(&pixels, BLUE) > 50 && count(&pixels, ORANGE) > 50);
    f.run(
        "(plot-lines (list (list [0 1 2] [0 1 4]) (list (list 10 20) (list 5 6))) {own.svg})",
        &["own.svg"],
    );
    let svg = read_svg(&f, "own.svg");
    // The x axis spans both series' xs: 0 to 20.
    assert!(has_text(&svg, "0") && has_text(&svg, "20"));
    // Shared xs for the vectors, own xs for the pairs.
    f.run(
        "(plot-lines xs (list ys (list (list 0 6) (list -1 1))) {mixed.svg})",
        &["mixed.svg"],
    );
}

#[test]
fn log_x_spans_decades_and_skips_non_positive_x() {
    let mut f = Fixture::new();
    f.run(
        "(plot (list -1 0 0.001 1 1000) (list 1 2 3 4 5) {logx.svg} :log-x #t)",
        &["logx.svg"],
    );
    let svg = read_svg(&f, "logx.svg");
    for tick in ["0.001", "1", "1000"] {
        assert!(has_text(&svg, tick), "tick {tick}");
    }
    f.run(
        "(plot (list 1 10 100) (list 1 10 100) {loglog.png} :log-x #t :log-y #t :style \"both\")",
        &["loglog.png"],
    );
}

#[test]
fn line_options_are_checked() {
    let mut f = Fixture::new();
    check_errors(
        &mut f,
        &[
            (
                r#"(plot xs ys {e.png} :style "dots")"#,
                r#":style must be "line", "scatter" or "both", got "dots""#,
            ),
            ("(plot xs ys {e.png} :style 'scatter)", ":style must be"),
            (
                "(plot xs ys {e.png} :band (list ys))",
                ":band must be (list lo hi)",
            ),
            (
                "(plot xs ys {e.png} :band ys)",
                ":band must be (list lo hi)",
            ),
            (
                "(plot xs ys {e.png} :band (list (list 1 2 3) ys))",
                ":band's lo has 3 values but the series has 50",
            ),
            (
                "(plot xs ys {e.png} :band (list ys (zeros '(2 50))))",
                ":band's hi must be a vector (a 1-D tensor or a list of numbers), got a tensor of shape [2 50]",
            ),
            (
                r#"(plot-lines xs (list ys ys) {e.svg} :style (list "line"))"#,
                ":style has 1 entry for 2 series",
            ),
            (
                r#"(plot-lines xs (list ys ys) {e.svg} :style (list "line" 3))"#,
                ":style entry 2 must be",
            ),
            (
                "(plot-lines xs (list ys ys) {e.svg} :band (list ys ys))",
                ":band entry 1 must be (list lo hi)",
            ),
            (
                "(plot-lines xs (list ys) {e.svg} :band (list (list ys ys) #f))",
                ":band has 2 entries for 1 series",
            ),
            (
                "(plot-lines (list (list [1 2] [1 2 3])) {e.svg})",
                "series 1's xs has 2 values but its ys has 3",
            ),
            (
                "(plot-lines (list (list [1 2] [1 2] [1 2])) {e.svg})",
                "series 1 must be a vector of ys or a pair (list xs ys), got a list of 3",
            ),
            (
                "(plot-lines (list ys (list (zeros '(2 2)) [1 2])) {e.svg})",
                "series 2's xs must be a vector (a 1-D tensor or a list of numbers), got a tensor of shape [2 2]",
            ),
            (
                "(plot (list 0 -1) (list 1 2) {e.png} :log-x #t)",
                "no point has a positive finite x and a finite y (:log-x skips x <= 0)",
            ),
            (
                "(plot (list 0 1) (list 1 -2) {e.png} :log-x #t :log-y #t)",
                "no point has positive finite x and y values",
            ),
        ],
    );
}

// Histograms.

#[test]
fn a_histogram_draws_bars_of_counts() {
    let mut f = Fixture::new();
    let returned = f.run(
        "(histogram (list 1 2 2 3 3 3) {h.png} :bins 3 :width 500 :height 400)",
        &["h.png"],
    );
    assert_eq!(returned, f.path("h.png").display().to_string());
    let (width, height, pixels) = decode_png(&f.path("h.png"));
    assert_eq!((width, height), (500, 400));
    // Three bars of heights 1, 2, 3 side by side: the third is the tallest
    // and the bars' colour fills a good part of the plot.
    let (x, _, n) = centroid(&pixels, width, BLUE);
    assert!(n > 20_000, "{n} bar pixels");
    assert!(x > width as f64 / 2.0, "the mass leans right ({x})");

    f.run("(histogram (list 1 2 2 3 3 3) {h.svg} :bins 3)", &["h.svg"]);
    let svg = read_svg(&f, "h.svg");
    let bars = svg
        .split("<rect")
        .skip(1)
        .filter(|rect| rect.contains("#1F77B4") || rect.contains("#1f77b4"))
        .count();
    assert_eq!(bars, 3);
    // Counts up to 3 on the vertical axis.
    assert!(has_text(&svg, "3"));
}

#[test]
fn density_bars_have_unit_area_and_non_finite_values_are_skipped() {
    let mut f = Fixture::new();
    // Densities over [1, 3] with 3 bins of width 2/3: 0.25, 0.5, 0.75.
    f.run(
        "(histogram (list 1 2 2 3 3 3 nan inf -inf) {d.svg} :bins 3 :density #t)",
        &["d.svg"],
    );
    let svg = read_svg(&f, "d.svg");
    assert!(has_text(&svg, "0.7"), "density ticks");
    f.run("(histogram (list 1 2 2 3 3 3) {c.svg} :bins 3)", &["c.svg"]);
    assert!(!has_text(&read_svg(&f, "c.svg"), "0.7"), "count ticks");
    // Values outside :range are left out; a tensor of any shape is flattened.
    f.run(
        "(histogram (reshape (linspace 0 1 20) '(4 5)) {r.svg} :range (list 0 0.5) :bins 5 :title \"half\")",
        &["r.svg"],
    );
    let svg = read_svg(&f, "r.svg");
    assert!(has_text(&svg, "half") && has_text(&svg, "0.5"));
}

#[test]
fn histogram_errors_name_the_problem() {
    let mut f = Fixture::new();
    check_errors(
        &mut f,
        &[
            ("(histogram (list) {e.png})", "the data is empty"),
            ("(histogram (zeros 0) {e.png})", "the data is empty"),
            (
                "(histogram (list nan inf) {e.png})",
                "the data has no finite value",
            ),
            (
                "(histogram ys {e.png} :bins 0)",
                ":bins must be between 1 and 100000, got 0",
            ),
            (
                "(histogram ys {e.png} :bins -3)",
                ":bins must be between 1 and 100000, got -3",
            ),
            (
                "(histogram ys {e.png} :bins 2.5)",
                ":bins must be a whole number",
            ),
            (
                "(histogram ys {e.png} :range (list 1 0))",
                ":range must be two finite numbers with lo < hi",
            ),
            (
                "(histogram ys {e.png} :range (list 0 inf))",
                ":range must be two finite numbers with lo < hi",
            ),
            (
                "(histogram ys {e.png} :range 3)",
                ":range must be (list lo hi)",
            ),
            (
                "(histogram ys {e.png} :range (list 1 2 3))",
                ":range must be (list lo hi)",
            ),
            (
                "(histogram (list 1 \"a\") {e.png})",
                "element 1 is string \"a\", not a number",
            ),
            (
                "(histogram 'x {e.png})",
                "histogram takes a tensor or a list of numbers",
            ),
            (
                "(histogram ys 'e.png)",
                "the path must be a string, got symbol e.png",
            ),
        ],
    );
}

// Heatmaps.

#[test]
fn a_heatmap_puts_row_zero_at_the_bottom_in_viridis() {
    let mut f = Fixture::new();
    // 0 at the bottom-left cell, 1 at the top-right one.
    f.engine
        .eval("(define g (reshape (linspace 0 1 12) '(3 4)))")
        .unwrap();
    f.run(
        "(heatmap g {h.png} :colorbar #f :width 400 :height 300)",
        &["h.png"],
    );
    let (width, height, pixels) = decode_png(&f.path("h.png"));
    assert_eq!((width, height), (400, 300));
    let (low_x, low_y, low_n) = centroid(&pixels, width, VIRIDIS_LOW);
    let (high_x, high_y, high_n) = centroid(&pixels, width, VIRIDIS_HIGH);
    assert!(low_n > 1000 && high_n > 1000, "{low_n} and {high_n} pixels");
    assert!(low_x < high_x && low_y > high_y, "low at the bottom left");

    f.run("(heatmap g {h.svg})", &["h.svg"]);
    let svg = read_svg(&f, "h.svg");
    let (cols, rows, cells) = embedded_image(&svg);
    assert_eq!((cols, rows), (4, 3), "one image pixel per cell");
    let rgb = |p: [u8; 4]| [p[0], p[1], p[2]];
    assert_eq!(rgb(cells[8]), VIRIDIS_LOW, "bottom-left");
    assert_eq!(rgb(cells[3]), VIRIDIS_HIGH, "top-right");
    assert!(cells.iter().all(|p| p[3] == 255));
    // The colour bar's ticks run over the values.
    assert!(has_text(&svg, "0.8") && has_text(&svg, "0.2"));
    f.run("(heatmap g {nobar.svg} :colorbar #f)", &["nobar.svg"]);
    assert!(!has_text(&read_svg(&f, "nobar.svg"), "0.8"));
}

#[test]
fn heatmap_ranges_colour_limits_and_blank_nan_cells() {
    let mut f = Fixture::new();
    f.run(
        "(heatmap (tensor '((nan 1) (2 3))) {n.svg} :x-range (list -2 2) :y-range (list 10 20) :vmin 0 :vmax 6)",
        &["n.svg"],
    );
    let svg = read_svg(&f, "n.svg");
    let (_, _, cells) = embedded_image(&svg);
    // Top row (grid row 1): 2 and 3 of 0..6; bottom row: NaN (transparent), 1.
    assert_eq!(cells[2][3], 0, "a NaN cell is blank");
    assert_eq!(
        [cells[1][0], cells[1][1], cells[1][2]],
        VIRIDIS_MID,
        "3 is mid-way in 0..6"
    );
    for tick in ["-2", "2", "10", "20", "6"] {
        assert!(has_text(&svg, tick), "tick {tick}");
    }
    // Nested lists are read as a tensor; a constant grid is one colour.
    f.run("(heatmap '((5 5) (5 5)) {c.png} :colorbar #f)", &["c.png"]);
    let (width, _, pixels) = decode_png(&f.path("c.png"));
    assert!(centroid(&pixels, width, VIRIDIS_MID).2 > 10_000);
}

#[test]
fn a_large_heatmap_is_embedded_at_screen_resolution() {
    let mut f = Fixture::new();
    f.run(
        "(heatmap (reshape (linspace 0 1 1000000) '(1000 1000)) {big.svg})",
        &["big.svg"],
    );
    let svg = read_svg(&f, "big.svg");
    let (width, height, _) = embedded_image(&svg);
    assert!(width < 800 && height < 600, "{width}x{height}");
    assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
}

#[test]
fn heatmap_errors_name_the_shape() {
    let mut f = Fixture::new();
    check_errors(
        &mut f,
        &[
            (
                "(heatmap [1 2 3] {e.png})",
                "heatmap takes a 2-D tensor (rows are y, columns x), got a tensor of shape [3]",
            ),
            (
                "(heatmap (zeros '(2 2 2)) {e.png})",
                "got a tensor of shape [2 2 2]",
            ),
            (
                "(heatmap (zeros '(0 3)) {e.png})",
                "heatmap needs at least 1 row and 1 column, got a tensor of shape [0 3]",
            ),
            (
                "(heatmap 5 {e.png})",
                "heatmap takes a 2-D tensor, got integer 5",
            ),
            (
                "(heatmap (tensor '((nan nan))) {e.png})",
                "the tensor given to heatmap has no finite value",
            ),
            (
                "(heatmap (zeros '(2 2)) {e.png} :vmin 1 :vmax 0)",
                ":vmin 1 is above :vmax 0",
            ),
            (
                "(heatmap (zeros '(2 2)) {e.png} :vmin nan)",
                ":vmin must be a finite number",
            ),
            (
                "(heatmap (zeros '(2 2)) {e.png} :x-range (list 2 2))",
                ":x-range must be two finite numbers with lo < hi",
            ),
            (
                "(heatmap (zeros '(2 2)) {e.png} :y-range \"up\")",
                ":y-range must be (list lo hi)",
            ),
        ],
    );
}

// Contour plots.

#[test]
fn contour_lines_follow_the_levels_in_viridis() {
    let mut f = Fixture::new();
    f.engine
        .eval(
            "(define u (linspace -2 2 41))
             (define z (+ (* (reshape u '(1 41)) (reshape u '(1 41))) (* (reshape u '(41 1)) (reshape u '(41 1)))))",
        )
        .unwrap();
    f.run(
        "(contour z {c.svg} :levels 5 :x-range (list -2 2) :y-range (list -2 2))",
        &["c.svg"],
    );
    let svg = read_svg(&f, "c.svg");
    assert!(data_lines(&svg) > 100, "line pieces");
    // The lowest level in the first colour, the highest in the last.
    assert!(svg.contains("#440154") && svg.contains("#FDE725"));
    assert!(has_text(&svg, "-2") && has_text(&svg, "2"));

    f.run(
        "(contour z {c.png} :levels (list 1) :width 400 :height 400)",
        &["c.png"],
    );
    let (width, height, pixels) = decode_png(&f.path("c.png"));
    assert_eq!((width, height), (400, 400));
    // One level, in the middle colour: a circle of radius 1 around the
    // centre of the plot.
    let (x, y, n) = centroid(&pixels, width, VIRIDIS_MID);
    assert!(n > 200, "{n} line pixels");
    assert!(
        (x - 215.0).abs() < 40.0 && (y - 190.0).abs() < 40.0,
        "centred ({x}, {y})"
    );

    // A colour bar on request; NaN squares get no line.
    f.run(
        "(contour (tensor '((0 1 2) (1 nan 3) (2 3 4))) {n.svg} :colorbar #t)",
        &["n.svg"],
    );
    // A constant grid has no lines, and is still drawn.
    f.run("(contour (zeros '(3 3)) {flat.svg})", &["flat.svg"]);
    assert_eq!(data_lines(&read_svg(&f, "flat.svg")), 0);
}

#[test]
fn contour_errors_name_the_shape_and_levels() {
    let mut f = Fixture::new();
    check_errors(
        &mut f,
        &[
            (
                "(contour [1 2 3] {e.png})",
                "contour takes a 2-D tensor (rows are y, columns x), got a tensor of shape [3]",
            ),
            (
                "(contour (zeros '(1 5)) {e.png})",
                "contour needs at least 2 rows and 2 columns, got a tensor of shape [1 5]",
            ),
            (
                "(contour (zeros '(2 2)) {e.png} :levels 0)",
                ":levels must be between 1 and 1000, got 0",
            ),
            (
                "(contour (zeros '(2 2)) {e.png} :levels (list 1 \"a\"))",
                ":levels: element 1 is string",
            ),
            (
                "(contour (zeros '(2 2)) {e.png} :levels (list))",
                ":levels must list between 1 and 1000 values, got 0",
            ),
            (
                "(contour (zeros '(2 2)) {e.png} :levels (list nan))",
                ":levels must be finite numbers",
            ),
            (
                "(contour (tensor '((nan nan) (nan nan))) {e.png})",
                "the tensor given to contour has no finite value",
            ),
        ],
    );
}

// Paths.

#[test]
fn without_a_path_outside_a_notebook_every_chart_is_an_error() {
    let mut engine = Engine::new();
    engine
        .eval("(define ys (linspace 0 1 5)) (define g (zeros '(3 3)))")
        .unwrap();
    for (source, name) in [
        ("(plot ys)", "plot"),
        ("(plot ys ys)", "plot"),
        ("(plot-lines (list ys ys))", "plot-lines"),
        ("(histogram ys)", "histogram"),
        ("(heatmap g)", "heatmap"),
        ("(contour g :levels 3)", "contour"),
    ] {
        let err = engine.eval(source).expect_err(source);
        assert_eq!(err.kind(), EvalErrorKind::Arity, "{source}");
        assert_eq!(
            err.message(),
            format!(
                "{name} needs a file path ending in .png or .svg as its last argument outside a notebook (only a notebook shows a chart without writing it)"
            ),
        );
    }
}

#[test]
fn files_are_written_atomically_and_replace_old_ones() {
    let mut f = Fixture::new();
    std::fs::write(f.path("old.png"), b"not a picture").unwrap();
    f.run("(heatmap (zeros '(2 2)) {old.png})", &["old.png"]);
    let (width, height, _) = decode_png(&f.path("old.png"));
    assert_eq!((width, height), (800, 600));
    f.run("(histogram ys {h.svg})", &["h.svg"]);
    // No temporary file is left beside them.
    let mut names: Vec<String> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["h.svg", "old.png"]);
    // A failed write leaves no file and names the path.
    let source = f.source(
        "(contour (zeros '(2 2)) {missing/c.png})",
        &["missing/c.png"],
    );
    let err = f.engine.eval(&source).unwrap_err();
    assert_eq!(err.kind(), EvalErrorKind::Io);
    assert!(err.message().contains("cannot write"), "{}", err.message());
}

#[test]
fn the_new_charts_are_documented() {
    let engine = Engine::new();
    for name in ["histogram", "heatmap", "contour"] {
        let doc = engine.doc(name).expect("documented");
        assert!(doc.starts_with(&format!("({name} ")), "{doc}");
        assert!(doc.contains("path"), "{doc}");
    }
}
