//! The ring algorithm (the lecture notes "Election Algorithm in Distributed
//! Systems"): members sit in a logical ring in id order; the
//! initiator sends a token to its successor, each live member adds its id and
//! passes it on, and when the token is back the initiator sends a second pass
//! round the live members telling each the coordinator (the highest id collected)
//! and the active list.
//!
//! Choices the seed leaves open, made here:
//!
//! - **Skipping the dead.** Every hop is acknowledged with `Answer`; a sender that
//!   hears no acknowledgement within `answer_timeout` suspects that successor and
//!   passes the token to the next one ("the next available successor").
//! - **The second pass circulates** along the active list (a message, not a
//!   broadcast), each hop acknowledged the same way, and stops before the
//!   initiator: `N - 1` messages for `N` live members.
//! - **Concurrent initiators.** A member forwards only the strongest token it has
//!   seen, by `(term, initiator)`; weaker ones stop there. Their initiators hear
//!   the winner's second pass and stand down.
//! - **Lost tokens.** The initiator, and every member that forwarded a token,
//!   waits for the second pass for `Config::ring_timeout`, staggered by rank, then
//!   starts a new election.
//! - **Who announces.** The coordinator becomes leader when the second pass
//!   reaches it; it does not broadcast a Coordinator of its own (the pass is the
//!   announcement), but it does send heartbeats to every member. With a quorum it
//!   must claim the leadership from every member anyway, so the pass ends at it.

use crate::time::Instant;

use super::{Node, Phase};
use crate::event::FencingToken;
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::timer::Timer;

mod active_list;

impl Node {
    /// The initiator's first hop.
    pub(super) fn ring_open_election(&mut self, now: Instant) {
        let term = self.term;
        self.ring.note_pass(term, self.id);
        self.become_electing(term);
        let token = Message::RingElection {
            term,
            initiator: self.id,
            active: vec![self.id],
        };
        self.ring_pass(now, token);
        self.arm_ring_timeout(now);
    }

    /// RingElection from `from`.
    ///
    /// docs/protocol.md: R32, the ring's shortcuts.
    pub(super) fn ring_on_election(
        &mut self,
        now: Instant,
        from: NodeId,
        term: Term,
        initiator: NodeId,
        mut active: Vec<NodeId>,
    ) {
        self.send(from, Message::Answer { term });
        let Some(listed) =
            active_list::check_active_list(self.members.ids(), self.id, &active, initiator)
        else {
            self.drop_input(DropReason::Unexpected);
            return;
        };
        if initiator == self.id {
            if self.phase == (Phase::Electing { term }) {
                self.ring_conclude(now, term, active);
            } else {
                self.drop_input(DropReason::Outdated);
            }
            return;
        }
        if term < self.term {
            self.drop_input(DropReason::Outdated);
            return;
        }
        if self.standing_aside || !self.members.is_candidate(self.id) || self.known_unconnected(now)
        {
            // A resigned member, an observer, or (with a quorum) a member that a
            // probe found cut off from a quorum stays out of the active list but
            // keeps the ring whole by passing the token on.
            self.ring_pass(
                now,
                Message::RingElection {
                    term,
                    initiator,
                    active,
                },
            );
            return;
        }
        if self.ring.is_weaker(term, initiator) {
            // A weaker concurrent election: it stops here.
            self.drop_input(DropReason::Outdated);
            return;
        }
        if listed {
            // The token has been round this node already (a forged or looping one).
            self.drop_input(DropReason::Unexpected);
            return;
        }
        self.ring.note_pass(term, initiator);
        // This node's leadership, or its own weaker election, gives way to the
        // newer pass; it takes part as any member does.
        self.give_way(now);
        if self.pending_election != Some(term) {
            self.join_as_participant(now, term);
        }
        active.push(self.id);
        self.ring_pass(
            now,
            Message::RingElection {
                term,
                initiator,
                active,
            },
        );
    }

    /// The token came back: the highest id collected leads.
    fn ring_conclude(&mut self, now: Instant, term: Term, active: Vec<NodeId>) {
        let Some(&leader) = active.iter().max() else {
            return;
        };
        self.timers.stop(Timer::Coordinator);
        let pass = Message::RingCoordinator {
            term,
            leader,
            initiator: self.id,
            active,
        };
        self.ring_adopt(now, term, leader);
        if leader == self.id && self.quorum().is_some() {
            // Its claim and confirming heartbeat tell every member (see
            // `ring_on_coordinator`): no second pass.
            return;
        }
        self.ring_pass(now, pass);
    }

    /// RingCoordinator from `from`.
    pub(super) fn ring_on_coordinator(
        &mut self,
        now: Instant,
        from: NodeId,
        (term, leader, initiator): (Term, NodeId, NodeId),
        active: Vec<NodeId>,
    ) {
        self.send(from, Message::Answer { term });
        let Some(listed) =
            active_list::check_active_list(self.members.ids(), self.id, &active, initiator)
        else {
            self.drop_input(DropReason::Unexpected);
            return;
        };
        if active.iter().max() != Some(&leader) {
            self.drop_input(DropReason::Unexpected);
            return;
        }
        if initiator == self.id {
            self.drop_input(DropReason::Outdated);
            return;
        }
        let token = FencingToken { term, leader };
        if self.highest.is_some_and(|highest| token < highest) || term < self.term {
            self.drop_input(DropReason::StaleLeader);
            return;
        }
        if !listed && self.would_preempt(leader) {
            // It was not in the ring when the token passed, and outranks the result.
            self.term = self.term.max(term);
            self.begin_election(now, self.term.next());
            return;
        }
        self.ring_adopt(now, term, leader);
        if leader == self.id && self.quorum().is_some() {
            // With a quorum the winner's claim goes to every member and its
            // confirming heartbeat follows, which tells them more than the rest of
            // the pass would: the pass ends here (and one input stays within one
            // message per member).
            return;
        }
        self.ring_pass(
            now,
            Message::RingCoordinator {
                term,
                leader,
                initiator,
                active,
            },
        );
    }

    /// Takes the pass's result: lead, or follow.
    fn ring_adopt(&mut self, now: Instant, term: Term, leader: NodeId) {
        let token = FencingToken { term, leader };
        if self.highest.is_some_and(|highest| token <= highest) {
            return;
        }
        if leader == self.id {
            self.pending_election = None;
            self.term = self.term.max(term);
            self.become_idle();
            self.take_leadership(now, false);
        } else if self.quorum().is_none() {
            self.pending_election = None;
            self.accept(now, token);
        } else if matches!(self.phase, Phase::Electing { .. }) {
            // With a quorum the members follow once the leader's claim and first
            // heartbeat arrive; meanwhile the pass only tells them who it will be.
            // The initiator now waits like every other member, ready to start over
            // if that leader never claims.
            self.become_idle();
            self.join_as_participant(now, term);
        }
    }

    /// Passes `message` to the next live member in ring order (for the second
    /// pass, the next in the active list), stopping before the initiator.
    fn ring_pass(&mut self, now: Instant, message: Message) {
        let Some(to) = self.ring_successor(&message) else {
            // Nobody else is live: the token is back at once.
            if let Message::RingElection { term, active, .. } = message {
                if self.phase == (Phase::Electing { term }) {
                    self.ring_conclude(now, term, active);
                }
            }
            return;
        };
        self.send(to, message.clone());
        self.ring.hand_to(to, message);
        self.timers.set(
            Timer::RingHop,
            Self::after(now, self.timings.answer_timeout),
        );
    }

    fn ring_successor(&self, message: &Message) -> Option<NodeId> {
        let ids = self.members.ids();
        let own = ids.binary_search(&self.id).ok()?;
        let n = ids.len();
        match message {
            Message::RingElection { initiator, .. } => (1..n)
                .map(|step| ids[(own + step) % n])
                .find(|&id| id == *initiator || self.members.is_live_candidate(id)),
            Message::RingCoordinator {
                initiator, active, ..
            } => (1..n)
                .map(|step| ids[(own + step) % n])
                .take_while(|&id| id != *initiator)
                .find(|&id| {
                    active_list::on_active_list(active, *initiator, id)
                        && !self.members.is_suspected(id)
                }),
            _ => None,
        }
    }

    /// Answer from `from`: the acknowledgement of a hop.
    pub(super) fn ring_on_answer(&mut self, from: NodeId, term: Term) {
        if self.ring.acknowledge(from, term) {
            self.timers.stop(Timer::RingHop);
        } else {
            self.drop_input(DropReason::Outdated);
        }
    }

    /// The successor did not acknowledge: it is suspected, and the token goes to
    /// the next one.
    pub(super) fn ring_on_hop_timeout(&mut self, now: Instant) {
        if let Some((to, message)) = self.ring.take_hop() {
            self.members.suspect(to);
            self.ring_pass(now, message);
        }
    }

    /// Waits for the second pass (the initiator: for its token to come back).
    fn arm_ring_timeout(&mut self, now: Instant) {
        let rank = self.members.rank_below(None);
        let wait = self.timings.ring_timeout(self.members.len(), rank);
        self.timers.set(Timer::Coordinator, Self::after(now, wait));
    }
}
