//! Modified Bully (Soundarabai et al., "Improved Bully Election Algorithm for
//! Distributed Systems"): one election at a time.
//!
//! The initiator sends Election to every live member, which raises their election
//! flag (no member starts an election of its own while its flag is up) and clears
//! their coordinator variable; the higher members answer OK; the initiator keeps
//! the highest that answered and tells it to take over ("ElectedAsCoordinator" in
//! the paper's log, `Takeover` here); that member "cross checks with his higher
//! processes" by the same step (Election to the live members above it, collect,
//! hand over to the highest that answered) and, when none answers, announces
//! Coordinator, which lowers every flag.
//!
//! Choices the paper leaves open, made here:
//!
//! - **Fail-safe.** The paper names one but does not describe it. A raised flag
//!   times out after `Config::flag_timeout`, staggered by rank like the leader
//!   timeout, so if the initiator or the chosen member dies mid-election the
//!   highest member still flagged starts a new election first and its Election
//!   raises everyone's flag again; no flag stays up forever.
//! - **Early handover.** The initiator waits the whole answer timeout for answers
//!   (it cannot know who is alive), except that once the highest live member above
//!   it has answered, nobody higher can, and it hands over at once.
//! - **Nobody above.** An initiator with no live member above it announces at
//!   once, without the Election round, as classic Bully's highest member does.
//!   This is what makes a staggered failover cost the lecture notes' best case, `N - 2`.
//! - **Counting.** Elections go to lower members too (the paper's Figure 6 log
//!   shows `4 -> 1, 2, 3`), so an election started by member `P` of `N` costs
//!   `(N-1) + (N-P) + 1 + (N-1) = 3N - P - 1` messages: `3N - 2` for `P = 1`, the
//!   values of Table 1. Equation (1) of the paper, `2(N-P) + N`, leaves out the
//!   Elections to lower members; its text's `3N - 1` counts a check message to the
//!   crashed former coordinator, which Table 1 leaves out of the set.

use crate::time::Instant;

use super::collection::Ask;
use super::connectivity::Backing;
use super::{Node, Phase};
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::timer::Timer;

impl Node {
    /// Opens a collecting step in the current term.
    ///
    /// docs/protocol.md: R31, modified Bully's shortcuts.
    pub(super) fn modified_open_election(&mut self, now: Instant, ask: Ask) {
        let term = self.term;
        self.modified.open();
        let higher_live = self
            .members
            .higher()
            .iter()
            .any(|&id| self.members.is_live_candidate(id));
        if !higher_live {
            self.become_leader(now);
            return;
        }
        for index in 0..self.members.len() {
            let to = self.members.ids()[index];
            let asked = match ask {
                Ask::Everyone => to != self.id,
                Ask::Higher => to > self.id,
            };
            if asked && self.members.is_live_candidate(to) {
                self.send(to, Message::Election { term });
            }
        }
        self.become_electing(term);
        self.timers
            .set(Timer::Answer, Self::after(now, self.answer_wait()));
    }

    /// The chosen member: checks with the members above it in `term`.
    fn begin_check(&mut self, now: Instant, term: Term) {
        self.enter_election(term);
        self.modified_open_election(now, Ask::Higher);
    }

    /// Election from `from` in `term`: raise the flag, answer if higher.
    pub(super) fn modified_on_election(&mut self, now: Instant, from: NodeId, term: Term) {
        if !self.members.is_candidate(self.id) {
            self.drop_input(DropReason::Unexpected);
            return;
        }
        if self.standing_aside {
            self.drop_input(DropReason::Outdated);
            return;
        }
        if self.phase == Phase::Leading && from < self.id {
            // A lower member lost this leader, or missed its announcement.
            self.send(from, Message::Answer { term });
            self.leader_on_election(now, from, term);
            return;
        }
        // (A higher member's Election reaches the sitting leader too, Elections
        // going to everyone here: that member is taking over, and this leader
        // yields below like any member, rather than re-announcing over it.)
        let running = match self.phase {
            Phase::Electing { term }
            | Phase::AwaitingCoordinator { term }
            | Phase::Claiming { term } => Some(term),
            Phase::Idle | Phase::Leading => self.pending_election,
        };
        if term < self.term || running.is_some_and(|running| term < running) {
            // An older election than one this node already takes part in.
            self.drop_input(DropReason::Outdated);
            return;
        }
        if from < self.id {
            if !matches!(self.backing(now, from, term), Backing::Answer) {
                // As in classic Bully: a member that does not reach a quorum
                // neither answers nor raises its flag.
                return;
            }
            self.send(from, Message::Answer { term });
        }
        let following = self.phase == Phase::Idle && self.leader.is_some();
        if running.is_none() && following && term <= self.term {
            // Not a newer election than the leadership this member follows: the
            // sender (say, restarted with the current term) is behind, and the
            // leader reminds it. Raising the flag would drop a live leader.
            return;
        }
        if running == Some(term) {
            // The same election (a second initiator, or the chosen member's
            // cross-check): the flag is already up for it.
            return;
        }
        // A newer election: raise the flag for it, forget the coordinator, and
        // give up any election or leadership of this node's own ("no parallel
        // election").
        self.give_way(now);
        self.join_as_participant(now, term);
    }

    /// Answer from `from` in `term`.
    pub(super) fn modified_on_answer(&mut self, now: Instant, from: NodeId, term: Term) {
        if from < self.id {
            self.drop_input(DropReason::Unexpected);
            return;
        }
        let Phase::Electing { term: running } = self.phase else {
            self.drop_input(DropReason::Outdated);
            return;
        };
        if running != term {
            self.drop_input(DropReason::Outdated);
            return;
        }
        // "Only IDs greater than the stored ID can override the coordinator ID."
        self.modified.answered_by(from);
        let top_live = self
            .members
            .higher()
            .iter()
            .rev()
            .find(|&&id| self.members.is_live_candidate(id))
            .copied();
        if Some(from) == top_live {
            // Nobody above the highest live member can answer: hand over now.
            self.timers.stop(Timer::Answer);
            self.modified_hand_over(now);
        }
    }

    /// The collecting step's answer timeout.
    pub(super) fn modified_on_answer_timeout(&mut self, now: Instant) {
        self.modified_hand_over(now);
    }

    /// The end of a collecting step: tell the highest responder to take over, or,
    /// if no member above answered, win.
    fn modified_hand_over(&mut self, now: Instant) {
        let Phase::Electing { term } = self.phase else {
            return;
        };
        match self.modified.close() {
            Some(chosen) => {
                // Members above the chosen one that stayed silent are suspected.
                for index in 0..self.members.higher().len() {
                    let id = self.members.higher()[index];
                    if id > chosen {
                        self.members.suspect(id);
                    }
                }
                self.send(chosen, Message::Takeover { term });
                self.become_awaiting_coordinator(term);
                self.timers.set(
                    Timer::Coordinator,
                    Self::after(now, self.timings.coordinator_timeout),
                );
            }
            None => {
                for index in 0..self.members.higher().len() {
                    let id = self.members.higher()[index];
                    self.members.suspect(id);
                }
                self.become_leader(now);
            }
        }
    }

    /// Takeover from `from` in `term`: this node is the highest that answered; it
    /// checks with the members above it before announcing.
    pub(super) fn modified_on_takeover(&mut self, now: Instant, from: NodeId, term: Term) {
        if from > self.id || term < self.term || !self.members.is_candidate(self.id) {
            self.drop_input(DropReason::Unexpected);
            return;
        }
        if self.standing_aside || self.highest.is_some_and(|highest| term <= highest.term) {
            // It resigned, or that term already has its leadership: a handover
            // prompted by an answer from before (a restarted initiator can collect
            // an Answer addressed to its previous incarnation).
            self.drop_input(DropReason::Outdated);
            return;
        }
        let running = match self.phase {
            Phase::Electing { term }
            | Phase::AwaitingCoordinator { term }
            | Phase::Claiming { term } => Some(term),
            Phase::Leading => Some(self.term),
            Phase::Idle => None,
        };
        if running.is_some_and(|running| running >= term) {
            // Already checking (or leading) for this election: one check per term.
            return;
        }
        self.begin_check(now, term);
    }
}
