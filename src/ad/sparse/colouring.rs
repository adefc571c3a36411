//! Greedy colourings that compress a sparse Jacobian (columns that share
//! no row get one colour) or a sparse symmetric Hessian (a star
//! colouring: no path on four vertices in two colours).

use super::Pattern;
use std::cmp::Reverse;

/// A colour per column (or per vertex), `0..count`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Colouring {
    /// Each column's colour.
    pub colours: Vec<usize>,
    /// How many colours.
    pub count: usize,
}

impl Colouring {
    /// The columns of each colour, in increasing order.
    pub fn groups(&self) -> Vec<Vec<usize>> {
        let mut groups = vec![Vec::new(); self.count];
        for (j, &c) in self.colours.iter().enumerate() {
            groups[c].push(j);
        }
        groups
    }
}

const UNCOLOURED: usize = usize::MAX;

/// Picks the smallest colour not marked for `owner` in `forbidden`
/// (`forbidden[c] == owner`: colour `c` is taken), growing the table.
fn smallest_free(forbidden: &mut Vec<usize>, owner: usize) -> usize {
    match forbidden.iter().position(|&o| o != owner) {
        Some(c) => c,
        None => {
            forbidden.push(UNCOLOURED);
            forbidden.len() - 1
        }
    }
}

/// The columns of `pattern` coloured so that two columns sharing a row
/// differ: greedy, columns with the most rows first. The number of
/// colours is at least the largest row's number of entries, and at most
/// one more than the most columns any column shares a row with.
pub fn column_colouring(pattern: &Pattern) -> Colouring {
    let by_column = pattern.transpose();
    let n = pattern.ncols();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&j| Reverse(by_column.row(j).len()));
    let mut colours = vec![UNCOLOURED; n];
    let mut forbidden: Vec<usize> = Vec::new();
    for &j in &order {
        for &i in by_column.row(j) {
            for &k in pattern.row(i) {
                if colours[k] != UNCOLOURED {
                    forbidden[colours[k]] = j;
                }
            }
        }
        colours[j] = smallest_free(&mut forbidden, j);
    }
    Colouring {
        count: forbidden.len(),
        colours,
    }
}

/// Whether no two columns of a row of `pattern` share a colour.
pub fn is_column_colouring(pattern: &Pattern, colouring: &Colouring) -> bool {
    pattern.rows().all(|row| {
        let mut seen: Vec<usize> = row.iter().map(|&j| colouring.colours[j]).collect();
        seen.sort_unstable();
        seen.windows(2).all(|w| w[0] != w[1])
    })
}

/// A star colouring of the graph whose edges are the off-diagonal entries
/// of the symmetric `pattern`: neighbours differ, and every path on four
/// vertices has at least three colours, so each entry of a symmetric
/// matrix with this pattern can be read from one product per colour
/// (`recover_symmetric`). Greedy, vertices of highest degree first; a
/// colour is refused for `v` where it would close a two-coloured path
/// `v w x y` (`x` has that colour and `y` has `w`'s) or `u v w x` (`u`
/// and `w` share a colour, `x` has that colour). `None` for a pattern
/// that is not symmetric.
pub fn star_colouring(pattern: &Pattern) -> Option<Colouring> {
    if !pattern.is_symmetric() {
        return None;
    }
    let n = pattern.nrows();
    let neighbours = |v: usize| pattern.row(v).iter().copied().filter(move |&w| w != v);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&v| Reverse(neighbours(v).count()));
    let mut colours = vec![UNCOLOURED; n];
    // around[v]: (colour, how many coloured neighbours of v have it).
    let mut around: Vec<Vec<(usize, u32)>> = vec![Vec::new(); n];
    let count_of = |around: &[(usize, u32)], c: usize| {
        around
            .iter()
            .find(|(colour, _)| *colour == c)
            .map_or(0, |(_, k)| *k)
    };
    let mut forbidden: Vec<usize> = Vec::new();
    for &v in &order {
        for w in neighbours(v).filter(|&w| colours[w] != UNCOLOURED) {
            forbidden[colours[w]] = v;
        }
        for w in neighbours(v).filter(|&w| colours[w] != UNCOLOURED) {
            let a = colours[w];
            let v_twice = count_of(&around[v], a) >= 2;
            for x in neighbours(w).filter(|&x| x != v && colours[x] != UNCOLOURED) {
                if v_twice || count_of(&around[x], a) >= 2 {
                    forbidden[colours[x]] = v;
                }
            }
        }
        let c = smallest_free(&mut forbidden, v);
        colours[v] = c;
        for w in neighbours(v) {
            match around[w].iter_mut().find(|(colour, _)| *colour == c) {
                Some((_, k)) => *k += 1,
                None => around[w].push((c, 1)),
            }
        }
    }
    Some(Colouring {
        count: forbidden.len(),
        colours,
    })
}

/// Whether `colouring` is a star colouring of the symmetric `pattern`'s
/// graph: neighbours differ, and no path `v w x y` has `v`, `x` of one
/// colour and `w`, `y` of another.
pub fn is_star_colouring(pattern: &Pattern, colouring: &Colouring) -> bool {
    let colour = |v: usize| colouring.colours[v];
    let neighbours = |v: usize| pattern.row(v).iter().copied().filter(move |&w| w != v);
    for w in 0..pattern.nrows() {
        for x in neighbours(w) {
            if colour(w) == colour(x) {
                return false;
            }
            for v in neighbours(w).filter(|&v| v != x && colour(v) == colour(x)) {
                if neighbours(x).any(|y| y != w && y != v && colour(y) == colour(w)) {
                    return false;
                }
            }
        }
    }
    true
}
