//! Acknowledgements and the lease, with a quorum: a follower acknowledges its
//! leader's heartbeat rounds and so promises (G4); the claimant or leader
//! counts each acknowledgement toward the request it names, and its lease
//! moves with the newest request a quorum acknowledged (G6); a lease that runs
//! out ends the leadership (G7, R19). The requests' own bookkeeping is
//! `requests.rs`.

use super::{Node, Phase};
use crate::event::{Event, Leader};
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Numbers a new request for acknowledgement of this node's claim or
    /// leadership of `term`, sent at `now`, and returns its number (see
    /// `requests.rs`). A new term forgets who acknowledged what.
    pub(super) fn open_request(&mut self, now: Instant, term: Term) -> u64 {
        let (number, new_term) = self.requests.open(now, term);
        if new_term {
            self.members.reset_acks();
        }
        number
    }

    /// The number of the latest request for acknowledgement of this node's
    /// claim or leadership (0 before any).
    pub(super) fn latest_round(&self) -> u64 {
        self.requests.latest()
    }

    /// After a heartbeat from `from` was handled: acknowledge it and promise.
    pub(super) fn acknowledge_heartbeat(
        &mut self,
        now: Instant,
        from: NodeId,
        term: Term,
        round: u64,
    ) {
        let following = self.leader == Some(Leader { id: from, term });
        if !following || !self.members.is_voter(self.id) {
            return;
        }
        self.promise_to(now, from, term);
        self.send(from, Message::Ack { term, round });
    }

    /// Promises `leader` of `term` not to vote against it for a follower lease
    /// from `now`, the moment it received the request it acknowledges.
    ///
    /// The promise itself is G4 (`Votes::promise_to`).
    pub(super) fn promise_to(&mut self, now: Instant, leader: NodeId, term: Term) {
        let until = Self::after(now, self.timings.follower_lease);
        self.votes.promise_to(now, leader, term, until);
    }

    /// Ack from `from` of request `round` of `term`: a vote for this node's
    /// claim, or an acknowledgement of its leadership's heartbeat round.
    /// The phase asked for acknowledgements of `term` (`dispatch.rs`).
    pub(super) fn on_ack(&mut self, now: Instant, from: NodeId, term: Term, round: u64) {
        if !self.requests.was_sent(term, round) {
            // A request never sent (forged), or of an older claim of `term`'s.
            self.drop_input(DropReason::Outdated);
            return;
        }
        self.count_round_ack(from, round);
        self.confirm_if_quorum(now);
    }

    /// Credits `from`'s acknowledgement to every remembered request up to
    /// `round` it had not acknowledged, and extends the lease by any request
    /// that now has its quorum.
    pub(super) fn count_round_ack(&mut self, from: NodeId, round: u64) {
        let (Some(first), Some(needed)) = (self.members.ack_round(from, round), self.acks_needed())
        else {
            return;
        };
        let extended = self
            .requests
            .count_ack(first, round, needed, self.timings.leader_lease);
        if extended && self.phase == Phase::Leading {
            self.arm_lease_timer();
        }
    }

    /// How many acknowledgements from others a request needs for a quorum
    /// (its own vote counts too, if it votes); `None` without a quorum.
    pub(super) fn acks_needed(&self) -> Option<usize> {
        let own = usize::from(self.members.is_voter(self.id));
        Some(self.quorum()?.saturating_sub(own))
    }

    /// A member that left no longer backs a lease: its acknowledgements are
    /// taken back from every request they were credited to.
    pub(super) fn uncount_acks_of(&mut self, member: NodeId) {
        if let Some(acked) = self.members.acked_round(member) {
            self.requests.uncount(acked);
        }
    }

    /// Whether request `number` of this claim or leadership has been
    /// acknowledged by a quorum (so has every round without a quorum gate,
    /// where nothing is acknowledged).
    pub(super) fn round_has_quorum(&self, number: u64) -> bool {
        self.acks_needed()
            .is_none_or(|needed| self.requests.has(number, needed))
    }

    /// The newest remembered heartbeat round sent at least a round trip before
    /// `now` (0 if none): a member that still hears this leader has
    /// acknowledged it by now.
    pub(super) fn round_due_by(&self, now: Instant) -> u64 {
        self.requests.due_by(now, self.timings.round_trip)
    }

    /// Numbers the heartbeat round sent at `now`, the next request of the
    /// leadership of `term`, and returns its number.
    pub(super) fn record_round(&mut self, now: Instant, term: Term) -> u64 {
        if self.quorum().is_none() {
            return self.requests.count_unacknowledged();
        }
        let number = self.open_request(now, term);
        if self.count_own_quorum(number) {
            self.arm_lease_timer();
        }
        number
    }

    /// When its own vote is the quorum (a cluster of one): nobody else's
    /// acknowledgement is needed, and request `number` renews the lease as it
    /// is sent. Returns whether it did.
    pub(super) fn count_own_quorum(&mut self, number: u64) -> bool {
        let own = usize::from(self.members.is_voter(self.id));
        if self.quorum().is_none_or(|quorum| own < quorum) {
            return false;
        }
        self.requests.renew_alone(number, self.timings.leader_lease);
        true
    }

    pub(super) fn arm_lease_timer(&mut self) {
        if let Some(until) = self.requests.lease_until() {
            self.timers.set(Timer::Lease, until);
        }
    }

    /// The lease ran out before a quorum acknowledged a newer round: this node can
    /// no longer be sure nobody else leads, so it stops.
    ///
    /// docs/protocol.md: G7, a lapsed lease ends the leadership; R19, its resignation.
    pub(super) fn on_lease_timeout(&mut self, now: Instant) {
        let expired = self
            .requests
            .lease_until()
            .is_some_and(|until| until <= now);
        if expired {
            self.events
                .push_back(Event::LeaseExpired { term: self.term });
            // Tell whoever still hears it that it no longer leads, so that they
            // elect after the staggered part of their timeout, not the whole of
            // it (a leader cut off from all but a hub: the hub elects at once).
            self.broadcast_resign(self.term);
            self.resign_leadership();
            self.requests.end_lease();
            self.connectivity
                .quorum_lost(now, self.members.acknowledging());
            self.arm_leader_timeout(now);
        }
    }
}
