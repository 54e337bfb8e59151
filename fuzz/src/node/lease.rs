//! The `node` target's watch on `Node::exclusive_until`: the lease a node claims
//! never reaches past what its own claims and heartbeat rounds allow, exists only
//! while it leads with a quorum, and only moves forward within one leadership.
//!
//! The rule comes from `bully-core/src/node/quorum.rs`: a leader's lease ends
//! `Config::leader_lease` after the send time of its claim (the `Coordinator` it
//! sent to ask for votes) or of a heartbeat round, whichever a quorum
//! acknowledged last. The target cannot see which one a quorum acknowledged, so
//! it dates the lease from the latest one the node sent: a sound bound, and the
//! exact one whenever the latest round is acknowledged in time.

use std::time::{Duration, Instant};

use bully_core::{Message, Term};

/// What a node sent that its lease may be dated from, and the lease it held.
#[derive(Debug, Default)]
pub(super) struct LeaseWatch {
    /// The latest instant at which the node sent a claim or a heartbeat round it
    /// had not sent before, or was alone in its cluster (a round then goes to
    /// nobody, and renews the lease all the same).
    latest_send: Option<Instant>,
    /// The newest heartbeat round seen, `(term, round)`: a reminder to a member
    /// that fell behind repeats the current round and renews nothing.
    round: Option<(Term, u64)>,
    /// The lease seen after the previous input, with its leadership's term.
    held: Option<(Term, Instant)>,
}

/// What the node says of its lease after one input.
#[derive(Clone, Copy, Debug)]
pub(super) struct LeaseView {
    /// The term of its own leadership, if it leads.
    pub(super) leading: Option<Term>,
    /// Whether its configuration has a quorum.
    pub(super) quorum: bool,
    /// `Node::exclusive_until`.
    pub(super) until: Option<Instant>,
    /// `Config::leader_lease`.
    pub(super) lease: Duration,
}

impl LeaseWatch {
    /// The node sent `message` at `at`.
    pub(super) fn sent(&mut self, message: &Message, at: Instant) {
        match *message {
            Message::Coordinator { .. } => self.latest_send = Some(at),
            Message::Heartbeat { term, round }
                if self.round.is_none_or(|newest| (term, round) > newest) =>
            {
                self.round = Some((term, round));
                self.latest_send = Some(at);
            }
            _ => {}
        }
    }

    /// The node took an input at `at` with nobody else in its cluster: any
    /// heartbeat round it ran then was sent to nobody.
    pub(super) fn alone(&mut self, at: Instant) {
        self.latest_send = Some(at);
    }

    /// Checks the lease after one input.
    pub(super) fn check(&mut self, view: LeaseView) {
        let Some(until) = view.until else {
            self.held = None;
            return;
        };
        let Some(term) = view.leading else {
            panic!("exclusive_until is {until:?} while the node does not lead");
        };
        assert!(view.quorum, "exclusive_until is {until:?} without a quorum");
        let Some(sent) = self.latest_send else {
            panic!("exclusive_until is {until:?}, yet the node never sent a claim or a round");
        };
        assert!(
            until <= sent + view.lease,
            "exclusive_until is {:?} past the latest claim or round sent, more than the \
             leader lease of {:?}",
            until - sent,
            view.lease
        );
        if let Some((held_term, held)) = self.held {
            assert!(
                held_term != term || until >= held,
                "exclusive_until moved back by {:?} within the leadership of term {term}",
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
}
