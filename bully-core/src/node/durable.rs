//! What a node keeps across a restart to keep its promises: [`DurableState`],
//! read with [`Node::durable_state`] and given back with
//! [`Node::with_durable_state`] or [`Node::restore`].

use crate::message::{NodeId, Term};
use crate::node::Node;

/// What a node must keep across a restart to keep its promises: see
/// [`Node::durable_state`] and [`Node::with_durable_state`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DurableState {
    /// The highest term seen or started.
    pub term: Term,
    /// With a quorum, the latest vote: `(term, candidate)`.
    pub vote: Option<(Term, NodeId)>,
}

impl Node {
    /// Resumes from persisted state before `start` (as
    /// [`Node::with_durable_state`] does); terms never go backwards, so a state
    /// older than the node's is ignored.
    ///
    /// Restoring the initial state ([`DurableState::default`], what a member
    /// that persists its state has before its first start) says that this
    /// member has never acknowledged a leader: with a quorum its
    /// [`start`](Node::start) then votes at once, where a node that was not
    /// restored, or restored a later state, first refuses every vote for a
    /// follower lease in case it forgot a promise. So a member that persists
    /// its state restores it, or the initial state when there is none yet, and
    /// a cold start with a quorum agrees within six message delays instead of
    /// a follower lease later.
    pub fn restore(&mut self, state: DurableState) {
        self.persisted_nothing =
            state == DurableState::default() && self.durable_state() == DurableState::default();
        // A vote implies its term was seen: a state whose vote is ahead of its
        // term (hand-edited, or corrupt) is read as being at the vote's term.
        let term = state
            .vote
            .map_or(state.term, |(voted, _)| state.term.max(voted));
        if term >= self.term {
            self.term = term;
            self.gate.vote = state.vote;
        }
    }

    /// What to persist to survive a restart: the term, and with a quorum the
    /// latest vote. It is small and `Copy`: a driver can compare it after each
    /// input with what it last wrote and write it when it changed.
    pub fn durable_state(&self) -> DurableState {
        DurableState {
            term: self.term,
            vote: self.gate.vote,
        }
    }
}
