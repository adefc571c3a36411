//! Parameter trees on disk: nested lists of tensors and numbers, saved as
//! NumPy's `.npz` (one array per leaf, named by its path: `tree` for a
//! lone leaf, `tree.0.1` for the second item of the first list) or as JSON
//! (a list is an array, a number a number, a tensor an object with `shape`
//! and `data`; NaN and infinities, which JSON lacks, are `null`, read back
//! as NaN). Files are written to a temporary name beside the target and
//! renamed, so a failed save leaves the old file whole. An `.npz` whose
//! names are not all tree paths (NumPy's `np.savez(f, w=..., b=...)`) is
//! read as its arrays by name, in the file's order ([`Contents::Named`]);
//! arrays of any number kind `npy` reads become float64 tensors.

pub use super::files::write_atomically;
use ndarray::{ArrayD, IxDyn};
use std::io::Cursor;
use std::path::Path;

/// A parameter tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    /// A tensor.
    Tensor(ArrayD<f64>),
    /// A whole number.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A list of trees.
    List(Vec<Tree>),
}

/// The formats, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// NumPy's zip of `.npy` arrays.
    Npz,
    /// JSON.
    Json,
}

impl Format {
    /// The deepest nesting of lists a tree saved in this format may have:
    /// what `load` reads back. `save` refuses deeper trees.
    pub fn max_depth(self) -> usize {
        match self {
            Format::Npz => MAX_DEPTH,
            Format::Json => MAX_JSON_DEPTH,
        }
    }

    /// The format's extension, for messages.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Npz => ".npz",
            Format::Json => ".json",
        }
    }

    /// The format of `path` by its extension.
    pub fn of(path: &str) -> Result<Format, String> {
        match Path::new(path).extension().and_then(|e| e.to_str()) {
            Some("npz") => Ok(Format::Npz),
            Some("json") => Ok(Format::Json),
            _ => Err(format!(
                "{path}: parameter trees are saved as .npz or .json (by the extension)"
            )),
        }
    }
}

/// The deepest nesting of lists in `tree` (0 for a leaf), counted
/// without recursion.
pub fn depth(tree: &Tree) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(tree, 0usize)];
    while let Some((tree, depth)) = pending.pop() {
        if let Tree::List(items) = tree {
            deepest = deepest.max(depth + 1);
            pending.extend(items.iter().map(|item| (item, depth + 1)));
        }
    }
    deepest
}

/// Saves `tree` to `path` in the format its extension names; a tree
/// nested deeper than the format reads back is an error.
pub fn save(path: &str, tree: &Tree) -> Result<(), String> {
    let format = Format::of(path)?;
    if depth(tree) > format.max_depth() {
        return Err(too_deep(path, format));
    }
    let bytes = match format {
        Format::Npz => npz_bytes(tree).map_err(|err| format!("{path}: {err}"))?,
        Format::Json => {
            serde_json::to_vec(&json_of(tree)).map_err(|err| format!("{path}: {err}"))?
        }
    };
    write_atomically(path, &bytes)
}

/// The error for a tree nested deeper than `format` reads back.
pub fn too_deep(path: &str, format: Format) -> String {
    let npz = match format {
        Format::Json => format!(" (.npz takes {MAX_DEPTH})"),
        Format::Npz => String::new(),
    };
    format!(
        "{path}: the tree nests lists more than {} deep, deeper than load-tree reads back from {}{npz}",
        format.max_depth(),
        format.extension()
    )
}

/// What a file holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Contents {
    /// A tree, as `save` writes it.
    Tree(Tree),
    /// Arrays an `.npz` names freely (`np.savez(f, w=..., b=...)`), in the
    /// file's order.
    Named(Vec<(String, Tree)>),
}

/// Loads the tree saved at `path`, or the arrays an `.npz` names freely.
pub fn load(path: &str) -> Result<Contents, String> {
    let format = Format::of(path)?;
    let bytes = super::files::read_bytes(path)?;
    match format {
        Format::Npz => tree_of_npz(&bytes).map_err(|err| format!("{path}: {err}")),
        Format::Json => {
            let json: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|err| format!("{path}: not JSON: {err}"))?;
            tree_of_json(&json)
                .map(Contents::Tree)
                .map_err(|err| format!("{path}: {err}"))
        }
    }
}

/// The leaves of `tree` with their paths.
fn leaves<'a>(
    tree: &'a Tree,
    path: String,
    out: &mut Vec<(String, &'a Tree)>,
) -> Result<(), String> {
    match tree {
        Tree::List(items) if items.is_empty() => Err(format!(
            "the empty list at {path} has no array in .npz; save as .json to keep it"
        )),
        Tree::List(items) => {
            for (index, item) in items.iter().enumerate() {
                leaves(item, format!("{path}.{index}"), out)?;
            }
            Ok(())
        }
        leaf => {
            out.push((path, leaf));
            Ok(())
        }
    }
}

fn npz_bytes(tree: &Tree) -> Result<Vec<u8>, String> {
    let mut found = Vec::new();
    leaves(tree, "tree".to_string(), &mut found)?;
    let mut writer = ndarray_npy::NpzWriter::new(Cursor::new(Vec::new()));
    for (name, leaf) in found {
        let written = match leaf {
            Tree::Tensor(t) => writer.add_array(name, t),
            Tree::Float(x) => writer.add_array(name, &ndarray::arr0(*x)),
            Tree::Int(n) => writer.add_array(name, &ndarray::arr0(*n)),
            Tree::List(_) => unreachable!("leaves are not lists"),
        };
        written.map_err(|err| err.to_string())?;
    }
    let cursor = writer.finish().map_err(|err| err.to_string())?;
    Ok(cursor.into_inner())
}

fn tree_of_npz(bytes: &[u8]) -> Result<Contents, String> {
    let entries = super::npz::entries(bytes)?;
    if !entries.iter().all(|(name, _)| is_tree_path(name)) {
        // Arrays NumPy saved under names of their own, in the file's order.
        return entries
            .iter()
            .map(|(name, data)| read_leaf(name, data).map(|leaf| (name.clone(), leaf)))
            .collect::<Result<_, _>>()
            .map(Contents::Named);
    }
    let mut paths = entries
        .iter()
        .map(|(name, data)| parse_path(name).map(|path| (path, name, data)))
        .collect::<Result<Vec<_>, _>>()?;
    paths.sort();
    let mut root: Option<Tree> = None;
    for (path, name, data) in paths {
        let leaf = read_leaf(name, data)?;
        place(&mut root, &path, leaf, name)?;
    }
    root.map(Contents::Tree)
        .ok_or_else(|| "the file holds no arrays".to_string())
}

/// Whether `name` is a tree leaf's path: `tree`, `tree.0`, `tree.0.1`, ...
fn is_tree_path(name: &str) -> bool {
    let mut parts = name.split('.');
    parts.next() == Some("tree")
        && parts.all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// A leaf from its `.npy` bytes: a 0-d integer (or bool) array is a whole
/// number, a 0-d float array a number, any other array a float64 tensor
/// (integers, bools and float32 numbers converted exactly).
fn read_leaf(name: &str, bytes: &[u8]) -> Result<Tree, String> {
    let failed = |err: String| format!("the array {name}: {err}");
    if let Some(n) = super::npy::scalar_integer(bytes).map_err(failed)? {
        return i64::try_from(n)
            .map(Tree::Int)
            .map_err(|_| failed(format!("{n} is past the largest whole number, 2^63 - 1")));
    }
    let (_, array) = super::npy::read(bytes, super::npy::Target::F64).map_err(failed)?;
    let super::npy::Array::F64(array) = array else {
        return Err(failed(
            "it holds complex numbers; a parameter tree holds real tensors (read it with load-npy)"
                .to_string(),
        ));
    };
    Ok(if array.ndim() == 0 {
        Tree::Float(array[IxDyn(&[])])
    } else {
        Tree::Tensor(array)
    })
}

/// How deep a tree saved as `.npz` may nest (lists are read recursively).
const MAX_DEPTH: usize = 1_000;

/// How deep a tree saved as JSON may nest: JSON's reader takes 128 levels
/// of arrays and objects, and a tensor leaf is an object holding arrays.
const MAX_JSON_DEPTH: usize = 120;

/// `tree.0.1` as `[0, 1]`.
fn parse_path(name: &str) -> Result<Vec<usize>, String> {
    if name.split('.').count() > MAX_DEPTH + 1 {
        return Err(format!(
            "an array's path nests more than {MAX_DEPTH} lists deep"
        ));
    }
    let mut parts = name.split('.');
    if parts.next() != Some("tree") {
        return Err(format!(
            "the array {name} is not named as a tree leaf (tree, tree.0, tree.0.1, ...)"
        ));
    }
    parts
        .map(|part| {
            part.parse()
                .map_err(|_| format!("the array {name} has a path that is not indices"))
        })
        .collect()
}

/// Puts `leaf` at `path` under `root`; leaves come in path order, so each
/// index is the next item of its list or the last one (going deeper).
fn place(root: &mut Option<Tree>, path: &[usize], leaf: Tree, name: &str) -> Result<(), String> {
    let Some((&index, rest)) = path.split_first() else {
        return match root {
            None => {
                *root = Some(leaf);
                Ok(())
            }
            Some(_) => Err(format!(
                "the array {name} is a leaf where the tree has a list"
            )),
        };
    };
    let node = root.get_or_insert_with(|| Tree::List(Vec::new()));
    let Tree::List(items) = node else {
        return Err(format!("the array {name} is under a leaf"));
    };
    if index == items.len() {
        let mut slot = None;
        place(&mut slot, rest, leaf, name)?;
        items.push(slot.expect("placed"));
        return Ok(());
    }
    let is_last = index + 1 == items.len();
    match items.get_mut(index) {
        Some(last) if is_last && !rest.is_empty() => {
            let mut slot = Some(std::mem::replace(last, Tree::Int(0)));
            place(&mut slot, rest, leaf, name)?;
            *last = slot.expect("placed");
            Ok(())
        }
        _ => Err(format!(
            "the array {name} leaves a gap: no array for item {} of its list",
            items.len()
        )),
    }
}

fn json_number(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

fn json_of(tree: &Tree) -> serde_json::Value {
    match tree {
        Tree::Int(n) => serde_json::Value::from(*n),
        Tree::Float(x) => json_number(*x),
        Tree::List(items) => serde_json::Value::Array(items.iter().map(json_of).collect()),
        Tree::Tensor(t) => serde_json::json!({
            "shape": t.shape(),
            "data": t.iter().map(|x| json_number(*x)).collect::<Vec<_>>(),
        }),
    }
}

fn float_of_json(value: &serde_json::Value) -> Result<f64, String> {
    match value {
        serde_json::Value::Null => Ok(f64::NAN),
        serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a number")),
        other => Err(format!("{other} is not a number")),
    }
}

fn tree_of_json(value: &serde_json::Value) -> Result<Tree, String> {
    match value {
        serde_json::Value::Number(n) => Ok(match n.as_i64() {
            Some(i) => Tree::Int(i),
            None => Tree::Float(float_of_json(value)?),
        }),
        serde_json::Value::Null => Ok(Tree::Float(f64::NAN)),
        serde_json::Value::Array(items) => items
            .iter()
            .map(tree_of_json)
            .collect::<Result<_, _>>()
            .map(Tree::List),
        serde_json::Value::Object(fields) => {
            let (Some(shape), Some(data)) = (fields.get("shape"), fields.get("data")) else {
                return Err(
                    "an object is a tensor: {\"shape\": [...], \"data\": [...]}".to_string()
                );
            };
            let shape: Vec<usize> = shape
                .as_array()
                .ok_or("a tensor's shape is a list of sizes")?
                .iter()
                .map(|d| {
                    d.as_u64()
                        .and_then(|d| usize::try_from(d).ok())
                        .ok_or("a tensor's shape is a list of sizes")
                })
                .collect::<Result<_, _>>()?;
            let limit = crate::ir::shape::MAX_RANK;
            if shape.len() > limit {
                return Err(format!(
                    "a tensor's shape has {} axes; a tensor may have at most {limit}",
                    shape.len()
                ));
            }
            let data: Vec<f64> = data
                .as_array()
                .ok_or("a tensor's data is a list of numbers")?
                .iter()
                .map(float_of_json)
                .collect::<Result<_, _>>()?;
            let count = data.len();
            ArrayD::from_shape_vec(IxDyn(&shape), data)
                .map(Tree::Tensor)
                .map_err(|_| format!("a tensor of shape {shape:?} with {count} numbers"))
        }
        other => Err(format!("{other} is not a tensor, number or list")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Tree {
        Tree::List(vec![
            Tree::List(vec![
                Tree::Tensor(
                    ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).map(f64::from).collect())
                        .unwrap(),
                ),
                Tree::Tensor(
                    ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.5, f64::INFINITY, -1.0]).unwrap(),
                ),
            ]),
            Tree::Float(0.125),
            Tree::Int(7),
        ])
    }

    #[test]
    fn npz_and_json_round_trip() {
        let dir = std::env::temp_dir().join(format!("epsilon-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let npz = dir.join("p.npz").to_string_lossy().into_owned();
        save(&npz, &sample()).unwrap();
        assert_eq!(load(&npz).unwrap(), Contents::Tree(sample()));
        let json = dir.join("p.json").to_string_lossy().into_owned();
        save(&json, &sample()).unwrap();
        // JSON has no infinity: it comes back as NaN.
        let Contents::Tree(Tree::List(top)) = load(&json).unwrap() else {
            panic!()
        };
        let Tree::List(layer) = &top[0] else { panic!() };
        let Tree::Tensor(b) = &layer[1] else { panic!() };
        assert!(b[1].is_nan() && b[0] == 0.5);
        assert_eq!(top[1], Tree::Float(0.125));
        assert_eq!(top[2], Tree::Int(7));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A tensor under `depth` lists.
    fn nested(depth: usize) -> Tree {
        let mut tree = Tree::Tensor(ArrayD::from_elem(IxDyn(&[2]), 1.5));
        for _ in 0..depth {
            tree = Tree::List(vec![Tree::Int(1), tree]);
        }
        tree
    }

    #[test]
    fn save_refuses_what_load_cannot_read_back() {
        let dir = std::env::temp_dir().join(format!("epsilon-deep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for format in [Format::Npz, Format::Json] {
            let path = dir
                .join(format!("deep{}", format.extension()))
                .to_string_lossy()
                .into_owned();
            let deepest = nested(format.max_depth());
            assert_eq!(depth(&deepest), format.max_depth());
            save(&path, &deepest).unwrap();
            assert_eq!(load(&path).unwrap(), Contents::Tree(deepest), "{path}");
            let error = save(&path, &nested(format.max_depth() + 1)).unwrap_err();
            assert!(
                error.contains("deeper than load-tree reads back"),
                "{error}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(
            tree_of_npz(b"PK\x03\x04 truncated")
                .unwrap_err()
                .contains("not an .npz file")
        );
        assert!(Format::of("x.csv").unwrap_err().contains(".npz or .json"));
        let gap = Tree::List(vec![Tree::Float(1.0), Tree::Float(2.0)]);
        let mut bytes = npz_bytes(&gap).unwrap();
        // Rename tree.0 to tree.5 in the zip's names (same length).
        let at = bytes.windows(6).position(|w| w == b"tree.0").unwrap();
        bytes[at + 5] = b'5';
        let second = bytes
            .windows(6)
            .skip(at + 1)
            .position(|w| w == b"tree.0")
            .unwrap()
            + at
            + 1;
        bytes[second + 5] = b'5';
        let error = tree_of_npz(&bytes).unwrap_err();
        assert!(error.contains("leaves a gap"), "{error}");
        let empty = Tree::List(vec![Tree::List(vec![])]);
        assert!(
            npz_bytes(&empty)
                .unwrap_err()
                .contains("empty list at tree.0")
        );
    }
}
