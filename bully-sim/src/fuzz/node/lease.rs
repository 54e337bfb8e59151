//! [`node`](super::node)'s watch on `Node::lease_until`: the lease a node claims
//! never reaches past what its own claims and heartbeat rounds allow, exists only
//! while it leads with a quorum, and only moves forward within one leadership.
//!
//! The rule is G6 of docs/protocol.md: a leader's lease ends
//! `Config::leader_lease` after the send time of a request for acknowledgement
//! (an ask of its claim, a `Coordinator`, or a heartbeat round) that a quorum
//! acknowledged, each acknowledgement naming the request it answers and backing
//! that request and earlier ones only. The watch keeps its own account, from
//! what the node sent and what it was sent: which requests went out when, and
//! the latest request each voter acknowledged. The node may date its lease from
//! no later a request than that account allows (it may forget old requests, or
//! drop acknowledgements it no longer needs, and lease less). Whether the
//! account is right is independent of the node's own counting: a vote for one
//! ask counted toward a later one breaks it at once.

use std::collections::BTreeMap;
use std::time::Duration;

use bully_core::{Instant, Message, NodeId, Term};

/// What a node sent that its lease may be dated from, and the lease it held.
#[derive(Debug, Default)]
pub(super) struct LeaseWatch {
    /// The latest instant at which the node sent a claim or a heartbeat round it
    /// had not sent before, or was alone in its cluster (a round then goes to
    /// nobody, and renews the lease all the same).
    latest_send: Option<Instant>,
    /// The latest instant at which its own vote was the quorum (alone, or the
    /// only voter): any request it made then backed its lease at once. A
    /// membership change that adds voters leaves that lease to run out.
    own_quorum_at: Option<Instant>,
    /// The newest heartbeat round seen, `(term, round)`: a reminder to a member
    /// that fell behind repeats the current round and renews nothing.
    round: Option<(Term, u64)>,
    /// The lease seen after the previous input, with its leadership's term.
    held: Option<(Term, Instant)>,
    /// Every request for acknowledgement the node sent, `(term, round)`, and
    /// when it first went out.
    requests: BTreeMap<(Term, u64), Instant>,
    /// The latest request of each term each member acknowledged, counted only
    /// once the node had sent it.
    acked: BTreeMap<(Term, NodeId), u64>,
    /// The smallest quorum seen in this incarnation: a membership change may
    /// raise the quorum under a lease a smaller one granted (the documented
    /// caveat of changes at runtime), which then runs out on its own.
    smallest_quorum: Option<usize>,
    /// The lease held, with its term, when a member whose acknowledgements
    /// backed it left: a quorum of the old membership granted it, and every
    /// quorum of the new one meets that quorum less the member removed, so it
    /// runs out on its own; only its renewals need the new membership's quorum.
    held_at_removal: Option<(Term, Instant)>,
}

/// What the node says of its lease after one input.
#[derive(Clone, Copy, Debug)]
pub(super) struct LeaseView {
    /// The term of its own leadership, if it leads.
    pub(super) leading: Option<Term>,
    /// Whether its configuration has a quorum.
    pub(super) quorum: bool,
    /// `Node::lease_until`.
    pub(super) until: Option<Instant>,
    /// `Config::leader_lease`.
    pub(super) lease: Duration,
    /// How many voters a leader needs, and whether the node's own vote counts
    /// toward them.
    pub(super) quorum_size: Option<(usize, bool)>,
}

impl LeaseWatch {
    /// The node sent `message` at `at`.
    pub(super) fn sent(&mut self, message: &Message, at: Instant) {
        match *message {
            Message::Coordinator { term, round } => {
                self.latest_send = Some(at);
                self.requests.entry((term, round)).or_insert(at);
            }
            Message::Heartbeat { term, round } => {
                self.requests.entry((term, round)).or_insert(at);
                if self.round.is_none_or(|newest| (term, round) > newest) {
                    self.round = Some((term, round));
                    self.latest_send = Some(at);
                }
            }
            _ => {}
        }
    }

    /// Member `from`, a voter, sent the node `Ack { term, round }`: it backs
    /// the request it names, if the node sent it, and every earlier one.
    pub(super) fn acknowledged(&mut self, from: NodeId, term: Term, round: u64) {
        if !self.requests.contains_key(&(term, round)) {
            return;
        }
        let acked = self.acked.entry((term, from)).or_insert(round);
        *acked = (*acked).max(round);
    }

    /// `member` left the cluster: its acknowledgements back nothing from now
    /// on, and the lease they backed, already granted, stands until it ends.
    pub(super) fn forget(&mut self, member: NodeId) {
        self.acked.retain(|&(_, from), _| from != member);
        self.held_at_removal = self.held.max(self.held_at_removal);
    }

    /// The latest end a lease of the leadership of `term` may have: a
    /// `lease` after the newest request of that term that `quorum` voters
    /// (the node's own vote counted if `own`) acknowledged, by this account.
    fn backed_until(
        &self,
        term: Term,
        (quorum, own): (usize, bool),
        lease: Duration,
    ) -> Option<Instant> {
        let requests = self
            .requests
            .range((term, 0)..=(term, u64::MAX))
            .map(|(&(_, round), &at)| (round, at));
        let mut backed = None;
        for (round, at) in requests {
            let acks = self
                .acked
                .iter()
                .filter(|&(&(acked_term, _), &acked)| acked_term == term && acked >= round)
                .count();
            if acks + usize::from(own) >= quorum {
                backed = Some(at + lease);
            }
        }
        backed
    }

    /// The node took an input at `at` with nobody else in its cluster: any
    /// heartbeat round it ran then was sent to nobody.
    pub(super) fn alone(&mut self, at: Instant) {
        self.latest_send = Some(at);
        self.own_quorum_at = Some(at);
    }

    /// Checks the lease after one input.
    pub(super) fn check(&mut self, view: LeaseView) {
        let quorum_size = view.quorum_size.map(|(quorum, own)| {
            let smallest = self.smallest_quorum.map_or(quorum, |q| q.min(quorum));
            self.smallest_quorum = Some(smallest);
            (smallest, own)
        });
        let Some(until) = view.until else {
            self.held = None;
            return;
        };
        let Some(term) = view.leading else {
            panic!("lease_until is {until:?} while the node does not lead");
        };
        assert!(view.quorum, "lease_until is {until:?} without a quorum");
        let Some(sent) = self.latest_send else {
            panic!("lease_until is {until:?}, yet the node never sent a claim or a round");
        };
        assert!(
            until <= sent + view.lease,
            "lease_until is {:?} past the latest claim or round sent, more than the \
             leader lease of {:?}",
            until - sent,
            view.lease
        );
        if let Some((quorum, own)) = quorum_size.filter(|&(quorum, own)| usize::from(own) < quorum)
        {
            let granted_before_removal = self
                .held_at_removal
                .filter(|&(held_term, _)| held_term == term)
                .map(|(_, held)| held);
            let backed = self
                .backed_until(term, (quorum, own), view.lease)
                .max(self.own_quorum_at.map(|at| at + view.lease))
                .max(granted_before_removal);
            assert!(
                backed.is_some_and(|backed| until <= backed),
                "G6: lease_until is {until:?}, later than any request of term {term} a \
                 quorum of {quorum} acknowledged allows ({backed:?}): {:?}",
                self.acked
            );
        }
        if let Some((held_term, held)) = self.held {
            assert!(
                held_term != term || until >= held,
                "lease_until moved back by {:?} within the leadership of term {term}",
                held - until
            );
        }
        self.held = Some((term, until));
    }
}

#[cfg(test)]
mod tests {
    //! Each oracle fails on a hand-built case that breaks it.

    use super::*;

    const LEASE: Duration = Duration::from_millis(900);

    fn leader(term: u64, until: Instant) -> LeaseView {
        LeaseView {
            leading: Some(Term(term)),
            quorum: true,
            until: Some(until),
            lease: LEASE,
            // Alone: its own vote is the quorum, and only the send times bound
            // the lease.
            quorum_size: None,
        }
    }

    fn watch_after_round(at: Instant) -> LeaseWatch {
        let mut watch = LeaseWatch::default();
        watch.sent(
            &Message::Coordinator {
                term: Term(3),
                round: 0,
            },
            at,
        );
        watch.sent(
            &Message::Heartbeat {
                term: Term(3),
                round: 1,
            },
            at,
        );
        watch
    }

    #[test]
    fn a_lease_dated_from_the_latest_round_passes() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        watch.check(leader(3, t0 + LEASE));
        let t1 = t0 + Duration::from_millis(100);
        let round = Message::Heartbeat {
            term: Term(3),
            round: 2,
        };
        watch.sent(&round, t1);
        watch.check(leader(3, t1 + LEASE));
    }

    #[test]
    #[should_panic(expected = "more than the leader lease")]
    fn a_lease_past_the_latest_round_plus_the_lease_fails() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        watch.check(leader(3, t0 + LEASE + Duration::from_millis(1)));
    }

    #[test]
    #[should_panic(expected = "more than the leader lease")]
    fn a_reminder_of_an_old_round_renews_nothing() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        let later = t0 + Duration::from_millis(500);
        let reminder = Message::Heartbeat {
            term: Term(3),
            round: 1,
        };
        watch.sent(&reminder, later);
        watch.check(leader(3, later + LEASE));
    }

    #[test]
    #[should_panic(expected = "while the node does not lead")]
    fn a_lease_while_not_leading_fails() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        watch.check(LeaseView {
            leading: None,
            ..leader(3, t0 + LEASE)
        });
    }

    #[test]
    #[should_panic(expected = "without a quorum")]
    fn a_lease_without_a_quorum_fails() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        watch.check(LeaseView {
            quorum: false,
            ..leader(3, t0 + LEASE)
        });
    }

    #[test]
    #[should_panic(expected = "never sent a claim or a round")]
    fn a_lease_from_nothing_sent_fails() {
        LeaseWatch::default().check(leader(3, Instant::now()));
    }

    #[test]
    #[should_panic(expected = "moved back")]
    fn a_lease_moving_back_within_a_leadership_fails() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        watch.check(leader(3, t0 + LEASE));
        watch.check(leader(3, t0 + LEASE - Duration::from_millis(1)));
    }

    #[test]
    fn a_new_leadership_may_start_a_shorter_lease() {
        let t0 = Instant::now();
        let mut watch = watch_after_round(t0);
        watch.check(leader(3, t0 + LEASE));
        watch.check(LeaseView {
            until: None,
            leading: None,
            ..leader(3, t0)
        });
        let round = Message::Heartbeat {
            term: Term(5),
            round: 1,
        };
        watch.sent(&round, t0);
        watch.check(leader(5, t0 + LEASE / 2));
    }

    /// 3 of 1..=3 (a majority is 2, its own vote counted) asks at t0 and asks
    /// again at t1; 2's vote names the first ask.
    fn asked_twice_voted_once(t0: Instant, t1: Instant) -> LeaseWatch {
        let mut watch = LeaseWatch::default();
        for (round, at) in [(0, t0), (1, t1)] {
            watch.sent(
                &Message::Coordinator {
                    term: Term(4),
                    round,
                },
                at,
            );
        }
        watch.acknowledged(NodeId(2), Term(4), 0);
        watch
    }

    fn claimant(until: Instant) -> LeaseView {
        LeaseView {
            quorum_size: Some((2, true)),
            ..leader(4, until)
        }
    }

    #[test]
    fn a_lease_dated_from_the_ask_a_quorum_voted_for_passes() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(400);
        asked_twice_voted_once(t0, t1).check(claimant(t0 + LEASE));
    }

    #[test]
    #[should_panic(expected = "G6")]
    fn a_vote_for_the_first_ask_counted_toward_the_second_fails() {
        // The counterexample of the shared file `reask.rs`: the lease dated
        // from the second ask on a vote for the first.
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(400);
        asked_twice_voted_once(t0, t1).check(claimant(t1 + LEASE));
    }

    #[test]
    #[should_panic(expected = "G6")]
    fn an_acknowledgement_of_a_request_never_sent_backs_nothing() {
        let t0 = Instant::now();
        let mut watch = LeaseWatch::default();
        watch.acknowledged(NodeId(2), Term(4), 0);
        watch.sent(
            &Message::Coordinator {
                term: Term(4),
                round: 0,
            },
            t0,
        );
        watch.check(claimant(t0 + LEASE));
    }

    /// 3 of 1..=3 claims at t0 and 2 votes for it, so 3 holds a lease from
    /// t0; then 2 leaves the cluster, and 3 leads {1, 3}, whose majority is 2.
    fn leading_when_2_leaves(t0: Instant) -> LeaseWatch {
        let mut watch = LeaseWatch::default();
        watch.sent(
            &Message::Coordinator {
                term: Term(4),
                round: 0,
            },
            t0,
        );
        watch.acknowledged(NodeId(2), Term(4), 0);
        watch.check(claimant(t0 + LEASE));
        watch.forget(NodeId(2));
        watch
    }

    #[test]
    fn a_lease_granted_before_a_member_left_stands_until_it_ends() {
        let t0 = Instant::now();
        leading_when_2_leaves(t0).check(claimant(t0 + LEASE));
    }

    #[test]
    #[should_panic(expected = "G6")]
    fn a_member_that_left_backs_no_renewal() {
        let t0 = Instant::now();
        let mut watch = leading_when_2_leaves(t0);
        let t1 = t0 + Duration::from_millis(100);
        watch.sent(
            &Message::Heartbeat {
                term: Term(4),
                round: 1,
            },
            t1,
        );
        // Only 2 acknowledged, and 2 is gone: nothing backs the round of t1.
        watch.check(claimant(t1 + LEASE));
    }
}
