//! What a node keeps across a restart, as the node reads it out
//! ([`Node::durable_state`]) and takes it back ([`Node::restore`]); the state
//! itself is [`DurableState`] (`durable.rs`).

use super::{DurableState, Node};
use crate::message::Term;

impl Node {
    /// Resumes from persisted state before the node's first input (as
    /// [`Node::with_durable_state`](crate::Node::with_durable_state) does). Once the node has taken an input
    /// its own state is newer than any it could have persisted, and a restore
    /// changes nothing: a term or vote moved back would let it vote twice in
    /// one term.
    ///
    /// A state with [`first_boot`](DurableState::first_boot) set, restored into
    /// a node that has seen nothing yet, says this member never promised
    /// anything: with a quorum its [`start`](Node::start) then votes at once.
    /// Every other node, restored or not, refuses every vote for a follower
    /// lease from its first input and from its start, in case it acknowledged
    /// a leader before it restarted and forgot.
    pub fn restore(&mut self, state: DurableState) {
        if self.latest.is_some() {
            return;
        }
        self.votes
            .restore(state.vote, state.first_boot, self.term == Term(0));
        // A vote implies its term was seen: a state whose vote is ahead of its
        // term (hand-edited, or corrupt) is read as being at the vote's term.
        let term = state
            .vote
            .map_or(state.term, |(voted, _)| state.term.max(voted));
        self.term = self.term.max(term);
    }

    /// What to persist to survive a restart: the term, with a quorum the
    /// latest vote, and whether this member has still promised nothing since
    /// its declared first boot. It is small and `Copy`: a driver can compare
    /// it after each input with what it last wrote and write it when it
    /// changed, before it sends what the input produced.
    ///
    /// docs/protocol.md: G11, the durable state.
    pub fn durable_state(&self) -> DurableState {
        DurableState {
            term: self.term,
            vote: self.votes.vote(),
            first_boot: self.votes.promised_nothing(),
        }
    }
}
