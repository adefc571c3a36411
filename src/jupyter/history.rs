//! The cells of this kernel session, for `history_request`.
//!
//! Every cell run with `store_history` is kept with its execution count
//! as its line number and the plain text of its result, if it had one.
//! The kernel keeps no history across restarts: its one session is
//! numbered [`SESSION`], and a request for session 0 (IPython's name for
//! the current one) means it too.
//!
//! Requests are read leniently ([`Query`]): the protocol makes `n`,
//! `unique`, `session`, `start` and `stop` optional, so a search without
//! `n` gives every match and a tail without `n` the last ten cells, as
//! IPython does.

use jupyter_protocol::HistoryEntry;
use serde_json::Value;

/// The number of this kernel's session in history replies.
pub const SESSION: usize = 1;

/// How many cells a tail request without `n` gives (IPython's default).
const DEFAULT_TAIL: usize = 10;

/// One stored cell.
struct Cell {
    line: usize,
    input: String,
    output: Option<String>,
}

/// The stored cells, oldest first.
#[derive(Default)]
pub struct History {
    cells: Vec<Cell>,
}

/// A history request's content, every optional field optional.
#[derive(Debug)]
pub struct Query {
    hist_access_type: String,
    output: bool,
    session: Option<i64>,
    start: Option<i64>,
    stop: Option<i64>,
    n: Option<i64>,
    pattern: Option<String>,
    unique: bool,
}

impl Query {
    /// Reads a request's content; the error says what is wrong with it.
    /// A field given as `null` counts as left out.
    pub fn parse(content: Value) -> Result<Query, String> {
        let field = |name: &str| content.get(name).filter(|value| !value.is_null());
        let wrong =
            |name: &str, kind: &str| format!("malformed history request: {name} must be {kind}");
        let number = |name: &str| match field(name) {
            None => Ok(None),
            Some(value) => value
                .as_i64()
                .map(Some)
                .ok_or_else(|| wrong(name, "an integer")),
        };
        let flag = |name: &str| match field(name) {
            None => Ok(false),
            Some(value) => value.as_bool().ok_or_else(|| wrong(name, "true or false")),
        };
        let text = |name: &str| match field(name) {
            None => Ok(None),
            Some(value) => value
                .as_str()
                .map(|text| Some(text.to_string()))
                .ok_or_else(|| wrong(name, "a string")),
        };
        Ok(Query {
            hist_access_type: text("hist_access_type")?.ok_or_else(|| {
                "malformed history request: hist_access_type is missing".to_string()
            })?,
            output: flag("output")?,
            session: number("session")?,
            start: number("start")?,
            stop: number("stop")?,
            n: number("n")?,
            pattern: text("pattern")?,
            unique: flag("unique")?,
        })
    }
}

impl History {
    /// Keeps cell `line` (its execution count) with its result's text.
    pub fn record(&mut self, line: usize, input: &str, output: Option<String>) {
        self.cells.push(Cell {
            line,
            input: input.to_string(),
            output,
        });
    }

    /// The entries `query` asks for, oldest first, or why it cannot be
    /// answered.
    pub fn answer(&self, query: &Query) -> Result<Vec<HistoryEntry>, String> {
        let chosen: Vec<&Cell> = match query.hist_access_type.as_str() {
            "tail" => last(self.cells.iter().collect(), limit(query.n, DEFAULT_TAIL)),
            "range" => self.range(query),
            "search" => self.search(query)?,
            other => {
                return Err(format!(
                    "unknown hist_access_type {other:?}: use \"tail\", \"range\" or \"search\""
                ));
            }
        };
        Ok(chosen
            .into_iter()
            .map(|cell| {
                if query.output {
                    HistoryEntry::InputOutput(
                        SESSION,
                        cell.line,
                        (cell.input.clone(), cell.output.clone().unwrap_or_default()),
                    )
                } else {
                    HistoryEntry::Input(SESSION, cell.line, cell.input.clone())
                }
            })
            .collect())
    }

    /// Lines `start` (default 1) up to but not including `stop` (default:
    /// all) of this session; nothing for an earlier session.
    fn range(&self, query: &Query) -> Vec<&Cell> {
        if let Some(session) = query.session
            && session != 0
            && session != SESSION as i64
        {
            return Vec::new();
        }
        let start = query.start.unwrap_or(0);
        self.cells
            .iter()
            .filter(|cell| {
                let line = cell.line as i64;
                line >= start && query.stop.is_none_or(|stop| line < stop)
            })
            .collect()
    }

    /// The cells whose input matches the glob `pattern` (`*` any text,
    /// `?` one character, `[abc]` a set; the whole input must match):
    /// with `unique`, the latest of equal inputs; with `n`, the last `n`.
    fn search(&self, query: &Query) -> Result<Vec<&Cell>, String> {
        let pattern = query.pattern.as_deref().unwrap_or("*");
        let glob = Glob::new(pattern)?;
        let matching: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|cell| glob.matches(&cell.input))
            .collect();
        let matching = if query.unique {
            let mut seen = std::collections::HashSet::new();
            let mut latest: Vec<&Cell> = matching
                .into_iter()
                .rev()
                .filter(|cell| seen.insert(cell.input.as_str()))
                .collect();
            latest.reverse();
            latest
        } else {
            matching
        };
        Ok(match query.n {
            Some(n) => last(matching, limit(Some(n), 0)),
            None => matching,
        })
    }
}

/// `n` as a count (a negative one is none), or `default` when absent.
fn limit(n: Option<i64>, default: usize) -> usize {
    n.map_or(default, |n| usize::try_from(n).unwrap_or(0))
}

/// The last `n` of `cells`.
fn last(mut cells: Vec<&Cell>, n: usize) -> Vec<&Cell> {
    let skip = cells.len().saturating_sub(n);
    cells.drain(..skip);
    cells
}

/// A glob pattern, as IPython's history search takes it.
struct Glob {
    parts: Vec<Part>,
}

enum Part {
    Char(char),
    Any,
    AnyRun,
    Set { negated: bool, chars: Vec<char> },
}

impl Glob {
    fn new(pattern: &str) -> Result<Glob, String> {
        let mut parts = Vec::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            parts.push(match c {
                '*' => Part::AnyRun,
                '?' => Part::Any,
                '[' => {
                    let mut set: Vec<char> = Vec::new();
                    let mut negated = false;
                    let mut closed = false;
                    for (i, c) in chars.by_ref().enumerate() {
                        match c {
                            '^' | '!' if i == 0 => negated = true,
                            ']' if !set.is_empty() => {
                                closed = true;
                                break;
                            }
                            c => set.push(c),
                        }
                    }
                    if !closed {
                        return Err(format!(
                            "the history search pattern {pattern:?} opens a [ set it does not close"
                        ));
                    }
                    Part::Set {
                        negated,
                        chars: set,
                    }
                }
                c => Part::Char(c),
            });
        }
        Ok(Glob { parts })
    }

    fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        matches_from(&self.parts, &text)
    }
}

/// Whether `parts` match all of `text` (backtracking over `*`).
fn matches_from(parts: &[Part], text: &[char]) -> bool {
    // The classic two-pointer walk: remember the last `*` and retry it
    // with one more character when a later part fails.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let step = match parts.get(p) {
            Some(Part::AnyRun) => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some(Part::Any) => true,
            Some(Part::Char(c)) => *c == text[t],
            Some(Part::Set { negated, chars }) => chars.contains(&text[t]) != *negated,
            None => false,
        };
        if step {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    parts[p..].iter().all(|part| matches!(part, Part::AnyRun))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history() -> History {
        let mut history = History::default();
        history.record(1, "(+ 1 2)", Some("3".into()));
        history.record(2, "(define x 4)", None);
        history.record(3, "(+ 1 2)", Some("3".into()));
        history.record(5, "(* x x)", Some("16".into()));
        history
    }

    fn lines(entries: &[HistoryEntry]) -> Vec<usize> {
        entries
            .iter()
            .map(|entry| match entry {
                HistoryEntry::Input(_, line, _) | HistoryEntry::InputOutput(_, line, _) => *line,
            })
            .collect()
    }

    fn ask(history: &History, query: serde_json::Value) -> Result<Vec<usize>, String> {
        history
            .answer(&Query::parse(query).unwrap())
            .map(|entries| lines(&entries))
    }

    #[test]
    fn tail_gives_the_last_n_cells_or_the_last_ten() {
        let mut h = history();
        let tail = json!({"hist_access_type": "tail", "n": 2, "output": false, "raw": true});
        assert_eq!(ask(&h, tail), Ok(vec![3, 5]));
        let tail = json!({"hist_access_type": "tail", "output": false, "raw": true});
        assert_eq!(ask(&h, tail.clone()), Ok(vec![1, 2, 3, 5]));
        for line in 6..=15 {
            h.record(line, "(void)", None);
        }
        assert_eq!(ask(&h, tail), Ok((6..=15).collect()));
    }

    #[test]
    fn range_is_by_line_with_an_exclusive_stop() {
        let h = history();
        let range = |session: serde_json::Value| {
            json!({"hist_access_type": "range", "session": session, "start": 2, "stop": 5,
                   "output": false, "raw": true})
        };
        assert_eq!(ask(&h, range(json!(1))), Ok(vec![2, 3]));
        assert_eq!(ask(&h, range(json!(0))), Ok(vec![2, 3]));
        assert_eq!(ask(&h, range(json!(-1))), Ok(vec![]));
        let open = json!({"hist_access_type": "range", "start": 3, "output": false, "raw": true});
        assert_eq!(ask(&h, open), Ok(vec![3, 5]));
    }

    #[test]
    fn search_without_n_or_unique_gives_every_match() {
        let h = history();
        let search =
            json!({"hist_access_type": "search", "pattern": "(+*", "output": false, "raw": true});
        assert_eq!(ask(&h, search), Ok(vec![1, 3]));
        let unique = json!({"hist_access_type": "search", "pattern": "(+*", "unique": true,
                            "output": false, "raw": true});
        assert_eq!(ask(&h, unique), Ok(vec![3]));
        let n = json!({"hist_access_type": "search", "pattern": "*x*", "n": 1,
                       "output": false, "raw": true});
        assert_eq!(ask(&h, n), Ok(vec![5]));
    }

    #[test]
    fn output_pairs_each_input_with_its_result() {
        let h = history();
        let query =
            Query::parse(json!({"hist_access_type": "tail", "n": 2, "output": true, "raw": true}));
        let entries = h.answer(&query.unwrap()).unwrap();
        let json = serde_json::to_value(&entries).unwrap();
        assert_eq!(
            json,
            json!([[1, 3, ["(+ 1 2)", "3"]], [1, 5, ["(* x x)", "16"]]])
        );
    }

    #[test]
    fn bad_requests_are_explained() {
        let h = history();
        let err = ask(
            &h,
            json!({"hist_access_type": "everything", "output": false, "raw": true}),
        );
        assert!(
            err.unwrap_err()
                .contains("unknown hist_access_type \"everything\"")
        );
        let err = ask(
            &h,
            json!({"hist_access_type": "search", "pattern": "[ab", "output": false, "raw": true}),
        );
        assert!(err.unwrap_err().contains("does not close"));
        let err = Query::parse(json!({"output": false})).unwrap_err();
        assert!(err.contains("hist_access_type is missing"), "{err}");
        let err = Query::parse(json!({"hist_access_type": "tail", "n": "3"})).unwrap_err();
        assert!(err.contains("n must be an integer"), "{err}");
    }

    #[test]
    fn globs_match_the_whole_input() {
        let glob = |p: &str, t: &str| Glob::new(p).unwrap().matches(t);
        assert!(glob("*", ""));
        assert!(glob("a*c", "abbbc"));
        assert!(!glob("a*c", "abcd"));
        assert!(glob("?b*", "ab"));
        assert!(glob("[xy]1", "y1"));
        assert!(!glob("[!xy]1", "y1"));
        assert!(glob("*λ?", "(λx"));
        assert!(glob("a*b*c", "a-b-b-c"));
    }
}
