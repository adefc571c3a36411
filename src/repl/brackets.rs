//! Finding the bracket that matches the one at the cursor, with Epsilon's
//! own lexer so brackets inside strings and comments are ignored.

use crate::reader::{FileId, Lexer, Token};

/// Byte offsets of the brackets in `line`, in order, with whether each opens.
fn brackets(line: &str) -> Vec<(usize, bool)> {
    let mut lexer = Lexer::new(line, FileId::NONE);
    let mut found = Vec::new();
    while let Ok(Some((token, span))) = lexer.next_token() {
        match token {
            Token::Open(_) => found.push((span.start as usize, true)),
            Token::Close(_) => found.push((span.start as usize, false)),
            _ => {}
        }
    }
    found
}

/// What the bracket next to the cursor pairs with.
#[derive(Debug, PartialEq, Eq)]
pub enum BracketMatch {
    /// The bracket at the first offset matches the one at the second.
    Pair(usize, usize),
    /// The bracket at this offset has no partner in the line.
    Unmatched(usize),
}

/// The bracket at the cursor (or just before it) and its partner.
pub fn match_at_cursor(line: &str, cursor: usize) -> Option<BracketMatch> {
    let all = brackets(line);
    let at = |offset: usize| all.iter().position(|(o, _)| *o == offset);
    let chosen = at(cursor).or_else(|| cursor.checked_sub(1).and_then(at))?;
    let (offset, opens) = all[chosen];
    let mut depth = 0i64;
    if opens {
        for (other, other_opens) in &all[chosen..] {
            depth += if *other_opens { 1 } else { -1 };
            if depth == 0 {
                return Some(BracketMatch::Pair(offset, *other));
            }
        }
    } else {
        for (other, other_opens) in all[..=chosen].iter().rev() {
            depth += if *other_opens { -1 } else { 1 };
            if depth == 0 {
                return Some(BracketMatch::Pair(offset, *other));
            }
        }
    }
    Some(BracketMatch::Unmatched(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_partner_of_an_opening_bracket() {
        assert_eq!(
            match_at_cursor("(+ 1 (* 2 3))", 0),
            Some(BracketMatch::Pair(0, 12))
        );
        assert_eq!(
            match_at_cursor("(+ 1 (* 2 3))", 5),
            Some(BracketMatch::Pair(5, 11))
        );
    }

    #[test]
    fn finds_the_partner_of_a_closing_bracket_before_the_cursor() {
        assert_eq!(
            match_at_cursor("(+ 1 [2 3])", 11),
            Some(BracketMatch::Pair(10, 0))
        );
    }

    #[test]
    fn brackets_in_strings_and_comments_are_ignored() {
        assert_eq!(
            match_at_cursor("(f \")\" x)", 0),
            Some(BracketMatch::Pair(0, 8))
        );
        assert_eq!(
            match_at_cursor("(f ; )\n x)", 0),
            Some(BracketMatch::Pair(0, 9))
        );
    }

    #[test]
    fn an_unclosed_bracket_is_reported() {
        assert_eq!(
            match_at_cursor("(+ 1 2", 0),
            Some(BracketMatch::Unmatched(0))
        );
        assert_eq!(match_at_cursor("abc", 1), None);
    }
}
