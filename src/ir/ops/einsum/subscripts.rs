//! The subscripts of an `einsum` read into labelled axes: letters become
//! labels, `...` becomes one label per broadcast axis (right-aligned over
//! the operands), the output is the written one or NumPy's implicit one,
//! and every label gets one size (1 broadcasts). Knows nothing of plans.

use super::EinsumError;
use crate::ir::shape::show;

/// An index: letters `A..Z` are 0..26 and `a..z` 26..52 (so sorting
/// labels sorts letters as NumPy does); broadcast axes under `...` are 52
/// and up, outermost first.
pub(super) type Label = usize;

pub(super) const ELLIPSIS: Label = 52;

/// One item of a term's subscripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Item {
    Letter(Label),
    Ellipsis,
}

/// The parsed subscripts.
pub(super) struct Parsed {
    pub(super) inputs: Vec<Vec<Item>>,
    output: Option<Vec<Item>>,
}

fn letter_label(c: char) -> Option<Label> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(c as usize - 'a' as usize + 26),
        _ => None,
    }
}

pub(super) fn label_name(label: Label) -> String {
    match label {
        0..26 => char::from(b'A' + label as u8).to_string(),
        26..52 => char::from(b'a' + (label - 26) as u8).to_string(),
        _ => format!("... axis {}", label - ELLIPSIS),
    }
}

fn parse_term(term: &str, subscripts: &str) -> Result<Vec<Item>, EinsumError> {
    let mut items = Vec::new();
    let mut rest = term;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if items.contains(&Item::Ellipsis) {
                return Err(EinsumError(format!(
                    "\"{subscripts}\" has two ellipses in one term"
                )));
            }
            items.push(Item::Ellipsis);
            rest = after;
            continue;
        }
        let Some(label) = letter_label(c) else {
            return Err(EinsumError(format!(
                "\"{subscripts}\" has the character '{c}': subscripts are letters, ',', '->' and '...'"
            )));
        };
        items.push(Item::Letter(label));
        rest = &rest[c.len_utf8()..];
    }
    Ok(items)
}

pub(super) fn parse(subscripts: &str) -> Result<Parsed, EinsumError> {
    let compact: String = subscripts.chars().filter(|c| !c.is_whitespace()).collect();
    let (left, right) = match compact.split_once("->") {
        Some((_, right)) if right.contains("->") => {
            return Err(EinsumError(format!("\"{subscripts}\" has two '->'")));
        }
        Some((left, right)) => (left, Some(right)),
        None => (compact.as_str(), None),
    };
    let inputs = left
        .split(',')
        .map(|term| parse_term(term, subscripts))
        .collect::<Result<Vec<_>, _>>()?;
    let output = match right {
        Some(right) if right.contains(',') => {
            return Err(EinsumError(format!(
                "\"{subscripts}\" has more than one output term"
            )));
        }
        Some(right) => Some(parse_term(right, subscripts)?),
        None => None,
    };
    Ok(Parsed { inputs, output })
}

/// The labels of each operand's axes (`...` expanded, right-aligned over
/// `width` broadcast axes), after checking each term against its rank.
pub(super) fn expand(
    parsed: &Parsed,
    shapes: &[&[usize]],
    subscripts: &str,
) -> Result<(Vec<Vec<Label>>, usize), EinsumError> {
    let mut widths = Vec::with_capacity(shapes.len());
    for (k, (term, shape)) in parsed.inputs.iter().zip(shapes).enumerate() {
        let letters = term.iter().filter(|i| **i != Item::Ellipsis).count();
        let has_ellipsis = term.contains(&Item::Ellipsis);
        if letters > shape.len() || (!has_ellipsis && letters != shape.len()) {
            return Err(EinsumError(format!(
                "\"{subscripts}\": operand {k} has shape {} but its subscripts name {letters} axes",
                show(shape)
            )));
        }
        widths.push(shape.len() - letters);
    }
    let width = widths.iter().copied().max().unwrap_or(0);
    let labels = parsed
        .inputs
        .iter()
        .zip(&widths)
        .map(|(term, &w)| {
            let mut labels = Vec::new();
            for item in term {
                match item {
                    Item::Letter(l) => labels.push(*l),
                    Item::Ellipsis => labels.extend((width - w..width).map(|q| ELLIPSIS + q)),
                }
            }
            labels
        })
        .collect();
    Ok((labels, width))
}

/// The output's labels: as written, or NumPy's implicit output (the
/// broadcast axes, then the letters used once, in alphabetical order).
pub(super) fn output_labels(
    parsed: &Parsed,
    labels: &[Vec<Label>],
    width: usize,
    subscripts: &str,
) -> Result<Vec<Label>, EinsumError> {
    let Some(output) = &parsed.output else {
        let mut counts = [0usize; ELLIPSIS];
        for &l in labels.iter().flatten().filter(|&&l| l < ELLIPSIS) {
            counts[l] += 1;
        }
        let mut out: Vec<Label> = (ELLIPSIS..ELLIPSIS + width).collect();
        out.extend((0..ELLIPSIS).filter(|&l| counts[l] == 1));
        return Ok(out);
    };
    let mut out = Vec::new();
    for item in output {
        match item {
            Item::Ellipsis => out.extend(ELLIPSIS..ELLIPSIS + width),
            Item::Letter(l) => {
                if out.contains(l) {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\" repeats '{}' in the output",
                        label_name(*l)
                    )));
                }
                if !labels.iter().flatten().any(|x| x == l) {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\": the output index '{}' is in no input",
                        label_name(*l)
                    )));
                }
                out.push(*l);
            }
        }
    }
    if width > 0 && !output.contains(&Item::Ellipsis) {
        return Err(EinsumError(format!(
            "\"{subscripts}\": the operands have broadcast axes ('...') but the output does not say where they go"
        )));
    }
    Ok(out)
}

/// The size of every label over all operands: equal, or 1 (which
/// broadcasts).
pub(super) fn label_sizes(
    labels: &[Vec<Label>],
    shapes: &[&[usize]],
    subscripts: &str,
) -> Result<Vec<usize>, EinsumError> {
    let mut sizes = vec![1usize; ELLIPSIS + 64];
    let mut seen: Vec<Option<usize>> = vec![None; sizes.len()];
    for (k, (term, shape)) in labels.iter().zip(shapes).enumerate() {
        for (&l, &n) in term.iter().zip(shape.iter()) {
            if l >= sizes.len() {
                return Err(EinsumError(format!(
                    "\"{subscripts}\": too many broadcast axes"
                )));
            }
            match seen[l] {
                Some(j) if j == k && sizes[l] != n => {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\": the repeated index '{}' has sizes {} and {n} in operand {k} (shape {})",
                        label_name(l),
                        sizes[l],
                        show(shape)
                    )));
                }
                Some(j) if sizes[l] != n && sizes[l] != 1 && n != 1 => {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\": index '{}' has size {} in operand {j} (shape {}) and {n} in operand {k} (shape {})",
                        label_name(l),
                        sizes[l],
                        show(shapes[j]),
                        show(shape)
                    )));
                }
                Some(_) if n == 1 => {}
                _ => {
                    sizes[l] = n;
                    seen[l] = Some(k);
                }
            }
        }
    }
    Ok(sizes)
}
