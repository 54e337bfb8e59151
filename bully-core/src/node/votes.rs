//! What a member has voted and promised, with a quorum: the vote, the promise
//! to a leader, the promise to nobody after coming back, the hold after a
//! leadership of its own, the vote it deferred, the `Resign` it owes, and
//! whether it has promised nothing since a declared first boot.
//!
//! The safety core's rules about a member's own word live here, each once
//! (docs/protocol.md, Part 1): G3 (one vote per term), G4 (an acknowledgement
//! is a promise), G5 (no vote against a promise), G8 (releasing a promise),
//! G9 (the hold), G10 (coming back) and G12 (the first boot). The node asks
//! [`Votes`] whether it may vote and tells it what it sent; it never reaches
//! into its fields.

use crate::message::{NodeId, Term};
use crate::time::Instant;

/// A member's vote and promises (docs/protocol.md, "What a member keeps").
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Votes {
    /// The latest claim voted for, `(term, candidate)`: durable.
    vote: Option<(Term, NodeId)>,
    /// The leader it promised not to vote against, the term of the leadership
    /// it promised, and until when.
    promise: Option<((NodeId, Term), Instant)>,
    /// It may have forgotten a promise (it came back without a declared
    /// first boot): it votes for nobody, itself included, until then. Kept
    /// apart from `promise`, which acknowledging a leader's heartbeat
    /// replaces: a vote after a restart waits for this whatever it
    /// acknowledged since.
    forgotten_until: Option<Instant>,
    /// A leadership of its own ended under a resign delay: its work may still
    /// be stopping until then, so it votes for no other member.
    hold_until: Option<Instant>,
    /// A claim it could not vote for only because of a promise or a hold,
    /// `(claimant, term, ask)`: decided again when what held it ends.
    deferred: Option<(NodeId, Term, u64)>,
    /// A leadership of its own ended under a resign delay: the `Resign` still
    /// to send, `(term it led, claimant it yielded to, or itself)`.
    owed_resign: Option<(Term, NodeId)>,
    /// Declared a first boot, and no vote or acknowledgement sent since: it
    /// has promised nothing, so it owes no promise to nobody at its start.
    promised_nothing: bool,
}

impl Votes {
    /// The latest vote, `(term, candidate)`.
    pub(super) fn vote(&self) -> Option<(Term, NodeId)> {
        self.vote
    }

    /// Whether a vote for `candidate` in `term` would be a second vote: it
    /// voted in a later term, or for another member in `term`.
    ///
    /// docs/protocol.md: G3, one vote per term.
    pub(super) fn voted_elsewhere(&self, term: Term, candidate: NodeId) -> bool {
        self.vote
            .is_some_and(|(voted, whom)| voted > term || (voted == term && whom != candidate))
    }

    /// The term of its vote for a member other than `own`, if any: a term it
    /// must never stand in (G3).
    pub(super) fn term_voted_for_another(&self, own: NodeId) -> Option<Term> {
        self.vote
            .filter(|&(_, whom)| whom != own)
            .map(|(voted, _)| voted)
    }

    /// Records a vote for `candidate` in `term`: the durable state changes,
    /// and a member declared a first boot has now promised something.
    ///
    /// G3 holds because every vote passes `voted_elsewhere` first; G12 ends here.
    pub(super) fn cast(&mut self, term: Term, candidate: NodeId) {
        self.vote = Some((term, candidate));
        self.promised_nothing = false;
    }

    /// Promises `leader` of `term` not to vote against it until `until`
    /// (a follower lease after it received the request it acknowledges).
    /// A promise to the same leader is only ever extended: a late heartbeat
    /// of an older term must not narrow a promise made to this leader's newer
    /// claim (a `Resign` of the older term would then release it while the
    /// newer lease runs), nor a repeated ask shorten one.
    ///
    /// docs/protocol.md: G4, an acknowledgement is a promise.
    #[inline]
    pub(super) fn promise_to(&mut self, now: Instant, leader: NodeId, term: Term, until: Instant) {
        self.promised_nothing = false;
        let mut until = until;
        let mut promised_term = term;
        if let Some(((promised, newer), running)) = self.promise {
            if promised == leader && running > now {
                promised_term = promised_term.max(newer);
                until = until.max(running);
            }
        }
        self.promise = Some(((leader, promised_term), until));
    }

    /// The promise, `((leader, term), until)`, whether or not it still runs.
    pub(super) fn promise(&self) -> Option<((NodeId, Term), Instant)> {
        self.promise
    }

    /// Whether a promise to a leader, or to nobody, still runs at `now`.
    pub(super) fn any_promise_runs(&self, now: Instant) -> bool {
        self.promise.is_some_and(|(_, until)| until > now) || self.promised_to_nobody(now).is_some()
    }

    /// `from` resigned its leadership of `term`: a promise to it for that
    /// leadership or an older one protects nothing now. Returns whether one was
    /// released.
    ///
    /// docs/protocol.md: G8, releasing a promise.
    pub(super) fn release(&mut self, from: NodeId, term: Term) -> bool {
        let released = self
            .promise
            .is_some_and(|((leader, led), _)| leader == from && led <= term);
        if released {
            self.promise = None;
        }
        released
    }

    /// Whether a promise to another leader, to nobody, or a hold forbids
    /// voting for `candidate` now (`own` is this member: a hold does not keep
    /// it from voting for itself), and until when.
    ///
    /// docs/protocol.md: G5, no vote against a promise.
    pub(super) fn promised_elsewhere(
        &self,
        now: Instant,
        candidate: NodeId,
        own: NodeId,
    ) -> Option<Instant> {
        // The hold keeps another member from leading while this node's work
        // may still be stopping; a leadership of its own again is no such risk
        // (a driver runs one leadership's work at a time).
        let held = self
            .hold_until
            .filter(|&until| until > now && candidate != own);
        if let Some(until) = held.or(self.promised_to_nobody(now)) {
            return Some(until);
        }
        match self.promise {
            Some(((leader, _), until)) if until > now && leader != candidate => Some(until),
            _ => None,
        }
    }

    /// Until when a promise to nobody after coming back forbids every vote,
    /// if it runs.
    pub(super) fn promised_to_nobody(&self, now: Instant) -> Option<Instant> {
        self.forgotten_until.filter(|&until| until > now)
    }

    /// Until when it votes for nobody after coming back, run out or not.
    pub(super) fn votes_for_nobody_until(&self) -> Option<Instant> {
        self.forgotten_until
    }

    /// It came back (its first input, or its start) and may have forgotten a
    /// promise: it votes for nobody, itself included, until `until`, a
    /// follower lease from now (or later, if an earlier call said so).
    ///
    /// docs/protocol.md: G10, coming back.
    pub(super) fn forget_promises(&mut self, until: Instant) {
        self.forgotten_until = Some(self.forgotten_until.map_or(until, |u| u.max(until)));
    }

    /// A leadership of its own ended: it votes for no other member until
    /// `until` (or later, if an earlier hold runs longer).
    ///
    /// docs/protocol.md: G9, the hold.
    pub(super) fn hold(&mut self, until: Instant) {
        self.hold_until = Some(self.hold_until.map_or(until, |held| held.max(until)));
    }

    /// Until when a hold keeps it from voting for others, run out or not.
    pub(super) fn hold_until(&self) -> Option<Instant> {
        self.hold_until
    }

    /// Whether a hold still runs at `now`.
    pub(super) fn held(&self, now: Instant) -> bool {
        self.hold_until.is_some_and(|held| held > now)
    }

    /// The work of its last leadership stopped: the hold ends. Returns whether
    /// a hold, or a `Resign` it owes, was waiting for that.
    pub(super) fn end_hold(&mut self) -> bool {
        self.hold_until.take().is_some() || self.owed_resign.is_some()
    }

    /// Defers its decision on `claimant`'s claim of `term`, ask `round`, to
    /// when what held the vote ends.
    ///
    /// R18 decides it again (`Node::cast_deferred_vote`).
    pub(super) fn defer(&mut self, claimant: NodeId, term: Term, round: u64) {
        self.deferred = Some((claimant, term, round));
    }

    /// Whether a vote waits for what held it to end.
    pub(super) fn has_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// The deferred claim, `(claimant, term, ask)`, to decide now.
    pub(super) fn take_deferred(&mut self) -> Option<(NodeId, Term, u64)> {
        self.deferred.take()
    }

    /// Drops a deferred claim of `member`, which left. Returns whether there
    /// was one.
    pub(super) fn drop_deferred_of(&mut self, member: NodeId) -> bool {
        let of_member = self
            .deferred
            .is_some_and(|(claimant, _, _)| claimant == member);
        if of_member {
            self.deferred = None;
        }
        of_member
    }

    /// Forgets a deferred claim: it voted for one.
    pub(super) fn clear_deferred(&mut self) {
        self.deferred = None;
    }

    /// It owes the members a `Resign` of `term`, after its hold: yielded to
    /// `claimant`, or, naming itself, after a step-down.
    pub(super) fn owe_resign(&mut self, term: Term, claimant: NodeId) {
        self.owed_resign = Some((term, claimant));
    }

    /// Whether it owes a `Resign`.
    pub(super) fn owes_resign(&self) -> bool {
        self.owed_resign.is_some()
    }

    /// The `Resign` it owes, `(term, claimant)`, to send now.
    pub(super) fn take_owed_resign(&mut self) -> Option<(Term, NodeId)> {
        self.owed_resign.take()
    }

    /// Whether it has promised nothing since a declared first boot.
    pub(super) fn promised_nothing(&self) -> bool {
        self.promised_nothing
    }

    /// Resumes from a durable state, before the node's first input: a first
    /// boot only into a node that has voted nothing, and a vote only if newer
    /// than its own. `at_term_zero` says the node has seen no term yet.
    ///
    /// The durable state is G11 and the declared first boot G12 (`durable.rs`).
    pub(super) fn restore(
        &mut self,
        vote: Option<(Term, NodeId)>,
        first_boot: bool,
        at_term_zero: bool,
    ) {
        // A first boot may have seen terms (it heard elections it had no
        // part in), never voted; and a node that already holds a state that
        // is no first boot stays one.
        self.promised_nothing = first_boot
            && vote.is_none()
            && self.vote.is_none()
            && (at_term_zero || self.promised_nothing);
        let newer_vote = vote.map(|(voted, _)| voted) > self.vote.map(|(voted, _)| voted);
        if newer_vote {
            self.vote = vote;
        }
    }
}

#[cfg(test)]
mod tests;
