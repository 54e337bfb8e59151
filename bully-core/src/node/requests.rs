//! A claimant's and a leader's numbered requests for acknowledgement (a
//! claim's asks, then the heartbeat rounds), the acknowledgements each
//! gathered, and the lease they give.
//!
//! docs/protocol.md, G6 (numbered requests, and the lease): every request of a
//! term takes the next number, from 0, and keeps its send time; an
//! acknowledgement backs the request it names and every earlier one, never a
//! later one; the lease ends a leader lease after the send time of the newest
//! request a quorum acknowledged. Without a quorum nothing is acknowledged and
//! the heartbeat rounds only count, from 1.

use std::time::Duration;

use crate::message::Term;
use crate::time::Instant;

/// Requests remembered for lease accounting: acknowledgements of older ones
/// arrive too late to extend the lease anyway.
pub(super) const ROUNDS: usize = 8;

/// One request for acknowledgement: an ask of the claim, or a heartbeat round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Round {
    number: u64,
    sent_at: Option<Instant>,
    acks: usize,
}

/// The requests of this node's claim or leadership, and the lease.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Requests {
    /// The term whose claim and leadership `rounds` numbers requests for.
    term: Option<Term>,
    /// The latest requests' send times and acknowledgements.
    rounds: [Round; ROUNDS],
    /// When the lease runs out, from the newest request a quorum acknowledged.
    lease_until: Option<Instant>,
    /// The number the next request takes.
    next: u64,
}

impl Requests {
    /// Numbers a new request of the claim or leadership of `term`, sent at
    /// `now`: the first of a term is 0 (and the requests and lease of an
    /// older term are forgotten). Returns its number, and whether it began a
    /// new term (the caller forgets who acknowledged what, then).
    ///
    /// docs/protocol.md: G6, numbered requests, and the lease.
    pub(super) fn open(&mut self, now: Instant, term: Term) -> (u64, bool) {
        let new_term = self.term != Some(term);
        if new_term {
            self.term = Some(term);
            self.rounds = [Round::default(); ROUNDS];
            self.lease_until = None;
            self.next = 0;
        }
        let number = self.next;
        self.next = number.saturating_add(1);
        self.rounds[(number % ROUNDS as u64) as usize] = Round {
            number,
            sent_at: Some(now),
            acks: 0,
        };
        (number, new_term)
    }

    /// Numbers a heartbeat round without a quorum: nothing is acknowledged,
    /// the rounds only count, from 1.
    pub(super) fn count_unacknowledged(&mut self) -> u64 {
        self.next = self.next.max(1);
        let number = self.next;
        self.next = number.saturating_add(1);
        number
    }

    /// Without a quorum, a new leadership's heartbeat rounds count from 1.
    pub(super) fn restart_count(&mut self) {
        self.next = 1;
    }

    /// The number of the latest request (0 before any).
    pub(super) fn latest(&self) -> u64 {
        self.next.saturating_sub(1)
    }

    /// Whether an acknowledgement of request `round` of `term` names one sent:
    /// anything else is another term's, or forged.
    pub(super) fn was_sent(&self, term: Term, round: u64) -> bool {
        self.term == Some(term) && round < self.next
    }

    /// Credits one acknowledgement to every remembered request from `first` to
    /// `round`, and extends the lease to `lease` after the send of any that
    /// now has `needed` acknowledgements. Returns whether the lease moved.
    pub(super) fn count_ack(
        &mut self,
        first: u64,
        round: u64,
        needed: usize,
        lease: Duration,
    ) -> bool {
        let mut extended = false;
        for slot in &mut self.rounds {
            if slot.sent_at.is_some() && slot.number >= first && slot.number <= round {
                slot.acks += 1;
                if slot.acks >= needed {
                    if let Some(sent_at) = slot.sent_at {
                        let until = after(sent_at, lease);
                        if self.lease_until.is_none_or(|current| until > current) {
                            self.lease_until = Some(until);
                            extended = true;
                        }
                    }
                }
            }
        }
        extended
    }

    /// Takes one acknowledgement back from every request up to `acked`: its
    /// sender left the cluster.
    pub(super) fn uncount(&mut self, acked: u64) {
        for slot in &mut self.rounds {
            if slot.sent_at.is_some() && slot.number <= acked {
                slot.acks = slot.acks.saturating_sub(1);
            }
        }
    }

    /// Whether request `number` has `needed` acknowledgements.
    pub(super) fn has(&self, number: u64, needed: usize) -> bool {
        self.rounds
            .iter()
            .any(|slot| slot.sent_at.is_some() && slot.number == number && slot.acks >= needed)
    }

    /// The newest remembered request sent at least `round_trip` before `now`
    /// (0 if none).
    pub(super) fn due_by(&self, now: Instant, round_trip: Duration) -> u64 {
        self.rounds
            .iter()
            .filter(|slot| {
                slot.sent_at
                    .is_some_and(|sent| after(sent, round_trip) <= now)
            })
            .map(|slot| slot.number)
            .max()
            .unwrap_or(0)
    }

    /// Its own vote is the quorum: request `number` renews the lease, to
    /// `lease` after its send, as it is sent.
    pub(super) fn renew_alone(&mut self, number: u64, lease: Duration) {
        if let Some(sent_at) = self.rounds[(number % ROUNDS as u64) as usize].sent_at {
            self.lease_until = Some(after(sent_at, lease));
        }
    }

    /// When the lease runs out, if a quorum backed a request.
    pub(super) fn lease_until(&self) -> Option<Instant> {
        self.lease_until
    }

    /// The lease ran out, or the leadership ended: it backs nothing now.
    pub(super) fn end_lease(&mut self) {
        self.lease_until = None;
    }
}

fn after(at: Instant, delay: Duration) -> Instant {
    // `Config::validate` caps every delay far below `Instant`'s range.
    at.checked_add(delay).unwrap_or(at)
}

#[cfg(test)]
mod tests;
