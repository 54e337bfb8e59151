//! What the safety core of one member holds, as [`Node::safety`](crate::Node::safety)
//! reads it out after an input: the state the safety core's invariants
//! (docs/protocol.md, "The safety core") are about. The checks themselves,
//! which a test harness runs after every input, are `bully-sim`'s
//! `invariants` module.

use std::time::Duration;

use crate::event::FencingToken;
use crate::message::{NodeId, Term};
use crate::time::Instant;

/// What the safety core of one member holds, read with
/// [`Node::safety`](crate::Node::safety) after an input.
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, DurableState, Node, NodeId, Quorum};
/// let config = Config::default().with_quorum(Quorum::Majority);
/// let mut node = Node::new(NodeId(1), [NodeId(1), NodeId(2), NodeId(3)], config.clone())?;
/// let now = Instant::now();
/// node.start(now);
/// // Not declared a first boot: it may have forgotten a promise, so it
/// // votes for nobody for a follower lease.
/// let safety = node.safety();
/// assert_eq!(safety.promise, None);
/// assert_eq!(safety.votes_for_nobody_until, Some(now + config.follower_lease()));
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SafetyState {
    /// The member.
    pub id: NodeId,
    /// Its term.
    pub term: Term,
    /// The highest fencing token it accepted.
    pub highest: Option<FencingToken>,
    /// Its latest vote, `(term, candidate)`.
    pub vote: Option<(Term, NodeId)>,
    /// Its promise to a leader, if any.
    pub promise: Option<Promise>,
    /// Until when it votes for nobody, itself included, because it came back
    /// without a declared first boot and may have forgotten a promise.
    pub votes_for_nobody_until: Option<Instant>,
    /// Until when a leadership of its own that ended holds its votes for
    /// others (the resign delay).
    pub hold_until: Option<Instant>,
    /// The term of its own leadership, while it leads.
    pub leading: Option<Term>,
    /// Until when its leadership is exclusive
    /// ([`Node::lease_until`](crate::Node::lease_until)).
    pub lease_until: Option<Instant>,
    /// Whether it was declared a first boot and has promised nothing since
    /// ([`DurableState::first_boot`](crate::DurableState::first_boot)).
    pub first_boot: bool,
    /// How many voters must stand behind a leader; `None` without a quorum.
    pub quorum: Option<usize>,
    /// Whether its vote counts.
    pub voter: bool,
    /// The follower lease its configuration gives a promise.
    pub follower_lease: Duration,
}

/// A member's promise not to vote against a leader until an instant of its
/// own clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Promise {
    /// The leader promised.
    pub to: NodeId,
    /// The term of the leadership promised (or a later one of the same leader).
    pub term: Term,
    /// When it runs out.
    pub until: Instant,
}

impl Promise {
    /// Whether it still runs at `now`.
    pub fn runs_at(&self, now: Instant) -> bool {
        self.until > now
    }
}
