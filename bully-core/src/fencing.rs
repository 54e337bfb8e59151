//! The resource side of fencing: [`FencingGuard`].

use crate::event::FencingToken;

/// Accepts an operation only under a fencing token at least as new as the newest
/// it has seen, so a deposed leader that still believes it leads (paused, cut
/// off, or running out its lease on a slow clock) cannot overwrite its
/// successor's work.
///
/// Keep one guard per protected resource, next to the resource (in the storage
/// layer, not in the client), and persist [`highest`](FencingGuard::highest) with
/// it if the resource outlives the process.
///
/// ```
/// use bully_core::{FencingGuard, FencingToken, NodeId, Term};
///
/// let mut storage = Vec::new();
/// let mut guard = FencingGuard::new();
/// let mut write = |token: FencingToken, value: &str| {
///     guard.check(token)?;
///     storage.push(value.to_owned());
///     Ok::<(), bully_core::Fenced>(())
/// };
///
/// // Node 5 leads in term 3 and writes.
/// let old = FencingToken { term: Term(3), leader: NodeId(5) };
/// write(old, "a").unwrap();
/// // 5 is cut off; 4 is elected in term 4 and writes.
/// let new = FencingToken { term: Term(4), leader: NodeId(4) };
/// write(new, "b").unwrap();
/// // 5's write arrives late: it is refused, and 4's value stands.
/// let refused = write(old, "c").unwrap_err();
/// assert_eq!(refused.highest, new);
/// write(new, "d").unwrap();
/// assert_eq!(storage, ["a", "b", "d"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FencingGuard {
    highest: Option<FencingToken>,
}

/// An operation under a token older than one the guard has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fencing token {presented} is older than {highest}")]
pub struct Fenced {
    /// The token presented.
    pub presented: FencingToken,
    /// The newest token the guard has seen.
    pub highest: FencingToken,
}

impl FencingGuard {
    /// A guard that has seen no token yet.
    pub fn new() -> FencingGuard {
        FencingGuard::default()
    }

    /// A guard that resumes from the newest token it had seen (persisted with the
    /// resource).
    pub fn resume(highest: FencingToken) -> FencingGuard {
        FencingGuard {
            highest: Some(highest),
        }
    }

    /// Accepts `token` if it is not older than the newest seen, and remembers it.
    pub fn check(&mut self, token: FencingToken) -> Result<(), Fenced> {
        match self.highest {
            Some(highest) if token < highest => Err(Fenced {
                presented: token,
                highest,
            }),
            _ => {
                self.highest = Some(token);
                Ok(())
            }
        }
    }

    /// The newest token seen.
    pub fn highest(&self) -> Option<FencingToken> {
        self.highest
    }
}
