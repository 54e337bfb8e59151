//! Dispatch by phase, as raft-rs's `step` hands a message to `step_leader`,
//! `step_candidate` or `step_follower`: once a message passed the guards every
//! input shares (`step.rs`), the node's phase decides where it goes, and so
//! does a timer's expiry. Each phase's table below lists what that phase does
//! with the inputs phases treat differently; the messages every phase treats
//! alike go to one rule each, which may still look at more than the phase (the
//! algorithm in `algorithm.rs`, the quorum, the leader followed).

use super::{Node, Phase};
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// A message that passed the shared guards. An `Ack` or a `Resign`, which
    /// each phase treats its own way, goes to its phase's table
    /// (`step_by_phase`); every other kind every phase hands to the same rule,
    /// which reads what it needs of the phase. One match on the kind first
    /// keeps the steady state, a follower's heartbeat, within 2 % of a single
    /// dispatch (the `instructions/` crate's `heartbeat`).
    #[inline(always)]
    pub(super) fn step(&mut self, now: Instant, from: NodeId, message: Message) {
        match message {
            Message::Ack { .. } | Message::Resign { .. } => self.step_by_phase(now, from, &message),
            Message::Coordinator { term, round } => {
                if self.quorum().is_some() {
                    self.on_claim(now, from, term, round);
                } else {
                    self.object_to_announcement(from, term);
                    self.on_leadership(now, from, term, 0);
                }
            }
            Message::Heartbeat { term, round } => {
                self.on_leadership(now, from, term, round);
                if self.quorum().is_some() {
                    self.acknowledge_heartbeat(now, from, term, round);
                }
            }
            Message::Election { term } => self.on_election(now, from, term),
            Message::Answer { term } => self.on_answer(now, from, term),
            Message::Takeover { term } => self.on_takeover(now, from, term),
            Message::RingElection {
                term,
                initiator,
                active,
            } => self.on_ring_election(now, from, (term, initiator), active),
            Message::RingCoordinator {
                term,
                leader,
                initiator,
                active,
            } => self.on_ring_coordinator(now, from, (term, leader, initiator), active),
            Message::Probe { term } => self.on_probe(now, from, term),
            Message::ProbeReply {
                term,
                leader,
                cut_off,
            } => self.on_probe_reply(now, from, term, (leader, cut_off)),
        }
    }

    /// An `Ack` or a `Resign`, to the table of the node's phase.
    fn step_by_phase(&mut self, now: Instant, from: NodeId, message: &Message) {
        let taken = match self.phase {
            Phase::Leading => self.step_leader(now, from, message),
            Phase::Claiming { term } => self.step_claimant(now, from, term, message),
            Phase::Electing { .. } | Phase::AwaitingCoordinator { .. } => {
                self.step_candidate(now, from, message)
            }
            Phase::Idle => self.step_follower(now, from, message),
        };
        debug_assert!(taken, "every phase's table takes an Ack and a Resign");
    }

    /// Leading: acknowledgements of its heartbeat rounds count toward its
    /// lease (G6); a `Resign` can only release a promise of its own (G8).
    #[inline]
    fn step_leader(&mut self, now: Instant, from: NodeId, message: &Message) -> bool {
        match *message {
            Message::Ack { term, round } => {
                let ours = self.leadership_term() == Some(term);
                self.on_ack_of(now, from, (term, round), ours);
            }
            Message::Resign { term, .. } => self.on_resign_elsewhere(now, from, term),
            _ => return false,
        }
        true
    }

    /// Claiming `claimed`: votes for its asks count (G6); without a quorum it
    /// waits out the start's announcement (G15), where an `Ack` is no answer.
    #[inline]
    fn step_claimant(
        &mut self,
        now: Instant,
        from: NodeId,
        claimed: Term,
        message: &Message,
    ) -> bool {
        match *message {
            Message::Ack { term, round } => {
                self.on_ack_of(now, from, (term, round), claimed == term)
            }
            Message::Resign { term, .. } => self.on_resign_elsewhere(now, from, term),
            _ => return false,
        }
        true
    }

    /// Electing, or awaiting the winner's `Coordinator`: it asked for no
    /// acknowledgement, and follows nobody whose `Resign` would matter.
    #[inline]
    fn step_candidate(&mut self, now: Instant, from: NodeId, message: &Message) -> bool {
        match *message {
            Message::Ack { term, round } => self.on_ack_of(now, from, (term, round), false),
            Message::Resign { term, .. } => self.on_resign_elsewhere(now, from, term),
            _ => return false,
        }
        true
    }

    /// Idle, following a leader or waiting to hear of one: its leader's
    /// `Resign` makes it elect soon (R20, R21).
    #[inline]
    fn step_follower(&mut self, now: Instant, from: NodeId, message: &Message) -> bool {
        match *message {
            Message::Ack { term, round } => self.on_ack_of(now, from, (term, round), false),
            Message::Resign { term, successor } => {
                self.follower_on_resign(now, from, term, successor)
            }
            _ => return false,
        }
        true
    }

    /// An `Ack` of `(term, round)`; `ours`: the phase asked for it (its claim
    /// or its leadership of `term`). Without a quorum nobody acknowledges.
    #[inline]
    fn on_ack_of(&mut self, now: Instant, from: NodeId, (term, round): (Term, u64), ours: bool) {
        if self.quorum().is_none() {
            self.drop_input(DropReason::Unexpected);
        } else if ours {
            self.on_ack(now, from, term, round);
        } else {
            // Another term's, or one this node never asked for.
            self.drop_input(DropReason::Outdated);
        }
    }

    /// A timer that expired, to its phase's handler.
    pub(super) fn on_timer(&mut self, now: Instant, timer: Timer) {
        match (self.phase, timer) {
            // Whatever the phase.
            (_, Timer::RingHop) => self.ring_on_hop_timeout(now),
            (_, Timer::Probe) => self.conclude_probe(now),
            (_, Timer::DeferredVote) => self.cast_deferred_vote(now),
            (_, Timer::Resign) => self.send_pending_resign(),
            (_, Timer::Abstain) => self.on_abstention_end(now),
            // Leading: its rounds, and its lease (G7 first: `Timer::ALL`).
            (Phase::Leading, Timer::Heartbeat) => self.send_heartbeats(now),
            (Phase::Leading, Timer::Lease) => self.on_lease_timeout(now),
            // Claiming: its votes' wait, or the start's announcement's.
            (Phase::Claiming { term }, Timer::Answer) => {
                if self.quorum().is_some() {
                    self.on_claim_timeout(now);
                } else {
                    self.on_start_unopposed(now, term);
                }
            }
            // Electing: the wait for answers, as its algorithm says.
            (Phase::Electing { .. }, Timer::Answer) => self.on_answer_timeout(now),
            // Any candidacy, or a follower waiting to stand or for a winner.
            (
                Phase::Claiming { .. }
                | Phase::Electing { .. }
                | Phase::AwaitingCoordinator { .. }
                | Phase::Idle,
                Timer::Coordinator,
            ) => self.on_coordinator_timeout(now),
            // Idle: the failure detector, and `AfterStable`'s takeover.
            (Phase::Idle, Timer::LeaderTimeout) => self.on_leader_timeout(now),
            (Phase::Idle, Timer::Stable) => self.on_stable(now),
            // A timer of another phase that outlived it: nothing to do.
            (
                _,
                Timer::Heartbeat
                | Timer::Lease
                | Timer::Answer
                | Timer::Coordinator
                | Timer::LeaderTimeout
                | Timer::Stable,
            ) => {}
        }
    }
}
