//! The fencing token as the child sees it: one environment variable whose string
//! order is the token order.

use bully_core::{FencingToken, NodeId, Term};

/// The token as `BULLY_FENCING_TOKEN` carries it: the term and the leader's id as
/// two 20-digit zero-padded decimals joined by `-`, so that comparing two tokens
/// as strings (in a shell, SQL, anything) compares them as fencing tokens.
///
/// ```
/// use bully_agent::token::{format_token, parse_token};
/// use bully_core::{FencingToken, NodeId, Term};
///
/// let old = FencingToken { term: Term(9), leader: NodeId(5) };
/// let new = FencingToken { term: Term(10), leader: NodeId(2) };
/// assert_eq!(format_token(old), "00000000000000000009-00000000000000000005");
/// assert!(format_token(old) < format_token(new));
/// assert_eq!(parse_token(&format_token(new)), Some(new));
/// ```
pub fn format_token(token: FencingToken) -> String {
    format!("{:020}-{:020}", token.term.0, token.leader.0)
}

/// Reads a token written by [`format_token`]; `None` if it is not one.
pub fn parse_token(text: &str) -> Option<FencingToken> {
    let (term, leader) = text.split_once('-')?;
    if term.len() != 20 || leader.len() != 20 {
        return None;
    }
    Some(FencingToken {
        term: Term(term.parse().ok()?),
        leader: NodeId(leader.parse().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_order_is_token_order() {
        let tokens =
            [(1, 9), (2, 1), (2, 3), (10, 1), (u64::MAX, u64::MAX)].map(|(term, leader)| {
                FencingToken {
                    term: Term(term),
                    leader: NodeId(leader),
                }
            });
        for pair in tokens.windows(2) {
            assert!(pair[0] < pair[1]);
            assert!(format_token(pair[0]) < format_token(pair[1]));
            assert_eq!(parse_token(&format_token(pair[1])), Some(pair[1]));
        }
        assert_eq!(parse_token("3-5"), None);
        assert_eq!(
            parse_token("0000000000000000000x-00000000000000000005"),
            None
        );
    }
}
