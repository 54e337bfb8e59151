//! Where the sources' three algorithms differ, in one place: each input that
//! classic Bully (`classic.rs`), modified Bully (`modified.rs`) and the ring
//! (`ring.rs`) handle their own way is dispatched here, and nowhere else in
//! the node asks which algorithm runs.
//!
//! What they share (terms, the quorum gate, leadership, the detector, the
//! probe) does not look: an algorithm only decides how an election is run and
//! how its winner is found (docs/protocol.md, R31 and R32 for the shortcuts
//! of the two variants).

use std::time::Duration;

use super::Node;
use super::collection::Ask;
use crate::config::Algorithm;
use crate::message::{NodeId, Term};
use crate::stats::DropReason;
use crate::time::Instant;

impl Node {
    /// Runs the election of the current term, entered already
    /// (`Node::enter_election`): classic asks the members above, modified
    /// everyone, the ring passes a token.
    pub(super) fn open_election(&mut self, now: Instant) {
        match self.config.algorithm() {
            Algorithm::Classic => self.classic_open_election(now),
            Algorithm::Modified => self.modified_open_election(now, Ask::Everyone),
            Algorithm::Ring => self.ring_open_election(now),
        }
    }

    /// An `Election` from `from` in `term` (also one that waited for a
    /// probe's verdict). The ring has its own token instead.
    #[inline]
    pub(super) fn on_election(&mut self, now: Instant, from: NodeId, term: Term) {
        match self.config.algorithm() {
            Algorithm::Classic => self.classic_on_election(now, from, term),
            Algorithm::Modified => self.modified_on_election(now, from, term),
            Algorithm::Ring => self.drop_input(DropReason::Unexpected),
        }
    }

    /// An `Answer` from `from` in `term`: a higher member alive (classic,
    /// modified), or a hop acknowledged (ring).
    #[inline]
    pub(super) fn on_answer(&mut self, now: Instant, from: NodeId, term: Term) {
        match self.config.algorithm() {
            Algorithm::Classic => self.classic_on_answer(now, from, term),
            Algorithm::Modified => self.modified_on_answer(now, from, term),
            Algorithm::Ring => self.ring_on_answer(from, term),
        }
    }

    /// The `Answer` timer of an election (not of a claim): nobody above
    /// answered in time (classic), or the collection is over (modified). The
    /// ring's hops have their own timer.
    pub(super) fn on_answer_timeout(&mut self, now: Instant) {
        match self.config.algorithm() {
            Algorithm::Classic => self.classic_on_answer_timeout(now),
            Algorithm::Modified => self.modified_on_answer_timeout(now),
            Algorithm::Ring => {}
        }
    }

    /// A `Takeover` from `from` in `term`: modified Bully's only.
    pub(super) fn on_takeover(&mut self, now: Instant, from: NodeId, term: Term) {
        match self.config.algorithm() {
            Algorithm::Modified => self.modified_on_takeover(now, from, term),
            Algorithm::Classic | Algorithm::Ring => self.drop_input(DropReason::Unexpected),
        }
    }

    /// The ring's first pass: the ring's only.
    pub(super) fn on_ring_election(
        &mut self,
        now: Instant,
        from: NodeId,
        (term, initiator): (Term, NodeId),
        active: Vec<NodeId>,
    ) {
        match self.config.algorithm() {
            Algorithm::Ring => self.ring_on_election(now, from, term, initiator, active),
            Algorithm::Classic | Algorithm::Modified => self.drop_input(DropReason::Unexpected),
        }
    }

    /// The ring's second pass: the ring's only.
    pub(super) fn on_ring_coordinator(
        &mut self,
        now: Instant,
        from: NodeId,
        result: (Term, NodeId, NodeId),
        active: Vec<NodeId>,
    ) {
        match self.config.algorithm() {
            Algorithm::Ring => self.ring_on_coordinator(now, from, result, active),
            Algorithm::Classic | Algorithm::Modified => self.drop_input(DropReason::Unexpected),
        }
    }

    /// How long a participant in another member's election (modified: the
    /// raised flag; ring: a token passed on) waits for its result, at `rank`.
    pub(super) fn participant_wait(&self, rank: usize) -> Duration {
        match self.config.algorithm() {
            Algorithm::Ring => self.timings.ring_timeout(self.members.len(), rank),
            Algorithm::Classic | Algorithm::Modified => self.timings.flag_timeout_at_rank(rank),
        }
    }

    /// Whether the highest candidate wins without asking anyone (classic,
    /// modified), so that it may announce itself as it starts (R3). The ring
    /// elects by passing a token round every member, whose second pass is the
    /// announcement.
    pub(super) fn highest_wins_unasked(&self) -> bool {
        self.config.algorithm() != Algorithm::Ring
    }

    /// Whether a resignation names a successor (R21): the ring names nobody,
    /// its token skipping cut links on its own (see `succession.rs`).
    pub(super) fn names_successor(&self) -> bool {
        self.config.algorithm() != Algorithm::Ring
    }
}
