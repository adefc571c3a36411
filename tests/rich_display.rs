//! Rich items reach a front end installed with `Engine::set_display`:
//! charts as PNG and SVG, progress bars as states that update in place.

use epsilon::display::{Rich, RichDisplay};
use epsilon::{Engine, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Keeps every item it is shown.
struct Recorder(Rc<RefCell<Vec<Rich>>>);

impl RichDisplay for Recorder {
    fn show(&mut self, item: Rich) {
        self.0.borrow_mut().push(item);
    }
}

fn engine_with_recorder() -> (Engine, Rc<RefCell<Vec<Rich>>>) {
    let mut engine = Engine::new();
    let items = Rc::new(RefCell::new(Vec::new()));
    engine.set_display(Box::new(Recorder(Rc::clone(&items))));
    (engine, items)
}

#[test]
fn a_progress_bar_is_shown_when_it_starts_and_when_it_finishes() {
    let (mut engine, items) = engine_with_recorder();
    engine
        .eval(
            r#"(define bar (progress 1000 :label "work"))
               (dotimes (i 1000) (progress-inc! bar :message (format "step {}" i)))
               (progress-finish! bar :message "done")"#,
        )
        .unwrap();
    let items = items.borrow();
    let states: Vec<_> = items
        .iter()
        .map(|item| match item {
            Rich::Progress(state) => state.clone(),
            other => panic!("expected progress, got {other:?}"),
        })
        .collect();
    // Updates in between are rate-limited: a fast loop sends few.
    assert!(states.len() >= 2 && states.len() < 100, "{}", states.len());
    let (first, last) = (&states[0], &states[states.len() - 1]);
    assert_eq!(
        (first.position, first.total, first.finished),
        (0, 1000, false)
    );
    assert_eq!(
        (last.position, last.total, last.finished),
        (1000, 1000, true)
    );
    assert_eq!(last.message, "done");
    assert_eq!(first.label.as_deref(), Some("work"));
    assert!(states.iter().all(|s| s.id == first.id));
    assert!(
        last.text()
            .starts_with("work [==============================")
    );
}

#[test]
fn fit_shows_its_progress_as_one_bar() {
    let (mut engine, items) = engine_with_recorder();
    engine
        .eval(
            r#"(define X (reshape (linspace -1 1 40) '(40 1)))
               (define Y (* 3 X))
               (define (loss w x y) (mean (let ((r (- (* w x) y))) (* r r))))
               (fit loss 0.0 (list X Y) :epochs 3 :batch-size 10)"#,
        )
        .unwrap();
    let items = items.borrow();
    let Some(Rich::Progress(last)) = items.last() else {
        panic!("no progress shown: {items:?}");
    };
    assert!(last.finished);
    assert_eq!((last.position, last.total), (12, 12));
    assert!(last.message.starts_with("loss "), "{}", last.message);
}

#[test]
fn a_plot_is_shown_as_png_and_svg_of_its_size() {
    let (mut engine, items) = engine_with_recorder();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("line.png");
    engine
        .eval(&format!(
            "(plot (linspace 0 1 20) (exp (linspace 0 1 20)) {:?} :width 320 :height 240)",
            path.to_str().unwrap()
        ))
        .unwrap();
    assert!(path.exists());
    let items = items.borrow();
    let [
        Rich::Image {
            png,
            svg,
            width,
            height,
        },
    ] = &items[..]
    else {
        panic!("expected one image, got {items:?}");
    };
    assert_eq!((*width, *height), (320, 240));
    let decoder = png::Decoder::new(std::io::Cursor::new(png.clone()));
    let info = decoder.read_info().unwrap().info().clone();
    assert_eq!((info.width, info.height), (320, 240));
    assert!(
        svg.starts_with("<svg") && svg.contains("polyline"),
        "{}",
        &svg[..80]
    );
}

#[test]
fn without_a_front_end_nothing_is_shown_and_programs_run_as_before() {
    let mut engine = Engine::new();
    let value = engine
        .eval("(let ((b (progress 3))) (progress-inc! b 3))")
        .unwrap();
    assert_eq!(value.as_i64().unwrap(), 3);
}

#[test]
fn a_chart_without_a_path_is_shown_inline_and_returns_nothing() {
    let (mut engine, items) = engine_with_recorder();
    for source in [
        "(plot (list 1 2 3) (list 1 4 9))",
        "(plot-lines (list (list (list 1 2) (list 3 4))) :style \"scatter\")",
        "(histogram (list 1 2 2 3) :bins 3 :width 300 :height 200)",
        "(heatmap (reshape (linspace 0 1 6) '(2 3)))",
        "(contour (reshape (linspace 0 1 9) '(3 3)) :levels 2)",
    ] {
        let value = engine.eval(source).unwrap();
        assert!(matches!(value, Value::Void), "{source} returned {value}");
    }
    let items = items.borrow();
    assert_eq!(items.len(), 5);
    for item in items.iter() {
        let Rich::Image {
            png, svg, width, ..
        } = item
        else {
            panic!("expected an image, got {item:?}");
        };
        let info = png::Decoder::new(std::io::Cursor::new(png.clone()))
            .read_info()
            .unwrap()
            .info()
            .clone();
        assert_eq!(info.width, *width);
        assert!(svg.starts_with("<svg"));
    }
    let Rich::Image {
        width, height, svg, ..
    } = &items[2]
    else {
        unreachable!("checked above");
    };
    assert_eq!((*width, *height), (300, 200));
    assert!(svg.contains("<rect"));
    let Rich::Image { svg, .. } = &items[3] else {
        unreachable!("checked above");
    };
    assert!(svg.contains("<image"), "the heatmap's cells");
}

#[test]
fn a_chart_with_a_path_in_a_notebook_is_written_and_shown_once() {
    let (mut engine, items) = engine_with_recorder();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("levels.svg");
    let path = path.to_str().unwrap();
    let value = engine
        .eval(&format!(
            "(contour (reshape (linspace 0 1 16) '(4 4)) {path:?})"
        ))
        .unwrap();
    assert_eq!(String::try_from(value).unwrap(), path);
    let items = items.borrow();
    let [Rich::Image { svg, .. }] = &items[..] else {
        panic!("expected one image, got {items:?}");
    };
    assert_eq!(
        *svg,
        std::fs::read_to_string(path).unwrap(),
        "the file's SVG is shown"
    );
}
