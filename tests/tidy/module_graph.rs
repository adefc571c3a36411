//! The import graph between the crate's top-level modules, read from the
//! source text: `use` lines (groups, `self`, `super::` chains) and inline
//! `crate::`/`super::` paths in code, with comments and string literals
//! removed first. A path through a re-export at the crate root
//! (`crate::Value`) counts as an import of the module that defines it.
//!
//! Method calls are invisible here: a call across layers goes through a
//! path (a free function or a type named in a `use` line), so it shows.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// One import: the module imported and where (file:line) it happens.
pub struct Import {
    pub to: String,
    pub at: String,
}

/// Every import of each top-level module of `src/` (the binary's
/// `main.rs` aside: it uses the library's public API).
pub fn imports(src: &Path) -> BTreeMap<String, Vec<Import>> {
    let tops = top_modules(src);
    let mut graph: BTreeMap<String, Vec<Import>> = BTreeMap::new();
    for (path, module) in module_files(src, src, &mut Vec::new()) {
        if module == ["main"] {
            continue;
        }
        let text = fs::read_to_string(&path).expect("source file is readable");
        let code = strip_comments_and_strings(&text);
        let relative = path
            .strip_prefix(src)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (line, target) in references(&code, &module, &tops) {
            if target != module[0] {
                graph.entry(module[0].clone()).or_default().push(Import {
                    to: target,
                    at: format!("src/{relative}:{line}"),
                });
            }
        }
        graph.entry(module[0].clone()).or_default();
    }
    graph
}

/// The strongly connected components of more than one module.
pub fn cycles(graph: &BTreeMap<String, Vec<Import>>) -> Vec<Vec<String>> {
    let names: Vec<&String> = graph.keys().collect();
    let index_of = |name: &str| names.iter().position(|n| n.as_str() == name);
    let edges: Vec<BTreeSet<usize>> = names
        .iter()
        .map(|name| {
            graph[*name]
                .iter()
                .filter_map(|i| index_of(&i.to))
                .collect()
        })
        .collect();
    // Tarjan's algorithm.
    struct State {
        next: usize,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        found: Vec<Vec<usize>>,
    }
    fn visit(v: usize, edges: &[BTreeSet<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &edges[v] {
            match s.index[w] {
                None => {
                    visit(w, edges, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.found.push(component);
        }
    }
    let n = names.len();
    let mut state = State {
        next: 0,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        found: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(v, &edges, &mut state);
        }
    }
    state
        .found
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|&v| names[v].clone()).collect();
            names.sort();
            names
        })
        .collect()
}

/// The names of the top-level modules (files and folders of `src/`).
fn top_modules(src: &Path) -> BTreeSet<String> {
    fs::read_dir(src)
        .expect("src is readable")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_stem()?.to_str()?.to_string();
            (path.is_dir() || path.extension().is_some_and(|e| e == "rs")).then_some(name)
        })
        .filter(|name| name != "lib")
        .collect()
}

/// Every `.rs` file under `dir` with its module path (`src/ad/vmap/mod.rs`
/// is `["ad", "vmap"]`, `src/tape/loops.rs` is `["tape", "loops"]`).
fn module_files(
    src: &Path,
    dir: &Path,
    prefix: &mut Vec<String>,
) -> Vec<(std::path::PathBuf, Vec<String>)> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("source folder is readable")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let Some(stem) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if path.is_dir() {
            prefix.push(stem);
            files.extend(module_files(src, &path, prefix));
            prefix.pop();
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.clone();
            if stem != "mod" && !(dir == src && stem == "lib") {
                module.push(stem);
            }
            if !module.is_empty() {
                files.push((path, module));
            }
        }
    }
    files
}

/// The source with comments, string and character literals blanked
/// (newlines kept, so line numbers hold).
pub fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"') | Some('#'))
            && !is_ident(chars.get(i.wrapping_sub(1)).copied())
        {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(chars[i..j.min(chars.len())].iter().map(|&c| blank(c)));
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(chars.len());
            out.extend(chars[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == '\'' && !is_ident(chars.get(i.wrapping_sub(1)).copied()) {
            // A character literal ('a', '\n', '\u{1F600}'), not a lifetime.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|k| i + 3 + k)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(chars[i..end].iter().map(|&c| blank(c)));
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Crate-root re-exports (lib.rs) and the module that defines each.
const ROOT_REEXPORTS: &[(&str, &str)] = &[
    ("Value", "lisp"),
    ("EvalErrorKind", "lisp"),
    ("Notation", "lisp"),
    ("Engine", "engine"),
    ("Error", "error"),
    ("Location", "error"),
    ("show_library_frames", "error"),
    ("CompiledGrad", "compiled"),
];

/// The top-level modules a file of module path `module` refers to, with
/// the line of each reference.
pub fn references(code: &str, module: &[String], tops: &BTreeSet<String>) -> Vec<(usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut line = 1;
    // Inline `mod name {` blocks open at these brace depths.
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
        } else if c == '{' {
            depth += 1;
        } else if c == '}' {
            if inline_mods.last() == Some(&depth) {
                inline_mods.pop();
            }
            depth = depth.saturating_sub(1);
        }
        let at_word = !is_ident(chars.get(i.wrapping_sub(1)).copied())
            && chars.get(i.wrapping_sub(1)) != Some(&':');
        if at_word && starts_with(&chars, i, "mod ") {
            // `mod name {` (not `mod name;`).
            let mut j = i + 4;
            while j < chars.len() && (is_ident(Some(chars[j])) || chars[j] == ' ') {
                j += 1;
            }
            if chars.get(j) == Some(&'{') {
                inline_mods.push(depth + 1);
            }
        }
        let here = module.len() + inline_mods.len();
        if at_word && starts_with(&chars, i, "crate::") {
            for name in path_heads(&chars, i + "crate::".len()) {
                if let Some(top) = resolve_root(&name, tops) {
                    found.push((line, top));
                }
            }
        } else if at_word && starts_with(&chars, i, "super::") {
            let mut j = i;
            let mut ups = 0;
            while starts_with(&chars, j, "super::") {
                ups += 1;
                j += "super::".len();
            }
            if ups >= here {
                // The chain reaches the crate root: the next names are
                // top-level modules (or root re-exports).
                for name in path_heads(&chars, j) {
                    if let Some(top) = resolve_root(&name, tops) {
                        found.push((line, top));
                    }
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    found
}

fn starts_with(chars: &[char], at: usize, text: &str) -> bool {
    text.chars()
        .enumerate()
        .all(|(k, c)| chars.get(at + k) == Some(&c))
}

/// The first segment of the path starting at `at`, or of each member of a
/// `{...}` group there.
fn path_heads(chars: &[char], at: usize) -> Vec<String> {
    let ident = |from: usize| -> String {
        chars[from..]
            .iter()
            .take_while(|c| is_ident(Some(**c)))
            .collect()
    };
    if chars.get(at) != Some(&'{') {
        return vec![ident(at)];
    }
    let mut heads = Vec::new();
    let mut nesting = 0;
    let mut expecting = true;
    let mut j = at + 1;
    while j < chars.len() {
        match chars[j] {
            '{' => nesting += 1,
            '}' if nesting == 0 => break,
            '}' => nesting -= 1,
            ',' if nesting == 0 => expecting = true,
            c if expecting && is_ident(Some(c)) => {
                heads.push(ident(j));
                expecting = false;
            }
            _ => {}
        }
        j += 1;
    }
    heads
}

/// The top-level module `name` (a segment right after `crate::`) belongs to.
fn resolve_root(name: &str, tops: &BTreeSet<String>) -> Option<String> {
    if tops.contains(name) {
        return Some(name.to_string());
    }
    ROOT_REEXPORTS
        .iter()
        .find(|(item, _)| *item == name)
        .map(|(_, module)| module.to_string())
}
