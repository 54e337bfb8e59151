//! Classic Bully (Garcia-Molina 1982, as the tutorial "What is Bully
//! Algorithm", the lecture notes "Election Algorithm in Distributed Systems",
//! Wikipedia's "Bully algorithm" and the Bully Algorithm Dance tell it).
//!
//! The choices the sources leave open, made here:
//!
//! 1. Election goes to higher ids only, and not to members the failure detector
//!    suspects; a node with no live higher member announces Coordinator at once.
//!    When the second-highest member notices the leader's crash this is the lecture
//!    notes' best case: `N - 2` messages in one message time.
//! 2. A node that receives Election from a lower id answers, and starts its own
//!    election unless it already runs one in that term (Soundarabai et al., the Bully Algorithm Dance): "at most one
//!    election per term".
//! 3. A candidate that was answered but hears no Coordinator within
//!    `coordinator_timeout` restarts its election in a new term (the tutorial, Wikipedia).
//!    It does not crown itself as step 5 of the Bully Algorithm Dance has the
//!    dancer do: a member that
//!    answered was alive a moment ago, and a lower member crowning itself over it
//!    would only be deposed again (choice 5), costing two rounds of Coordinator
//!    broadcasts and a leadership that never should have been; restarting asks the
//!    higher members again and crowns this node only if none of them answers.
//! 4. A recovering node (`Node::start`) runs an election like any other, so a
//!    higher member bullies its way back.
//! 5. A Coordinator from a lower id than a live higher member makes that member
//!    start an election (in `leadership.rs`).

use crate::time::Instant;

use super::connectivity::Backing;
use super::{Node, Phase};
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::timer::Timer;

impl Node {
    /// Choice 1: ask the live higher members, or win at once if there are none.
    pub(super) fn classic_open_election(&mut self, now: Instant) {
        let term = self.term;
        let mut asked = 0;
        for index in 0..self.members.higher().len() {
            let to = self.members.higher()[index];
            if self.members.is_live_candidate(to) {
                self.send(to, Message::Election { term });
                asked += 1;
            }
        }
        if asked == 0 {
            self.become_leader(now);
            return;
        }
        self.become_electing(term);
        self.timers
            .set(Timer::Answer, Self::after(now, self.answer_wait()));
    }

    /// Election from `from` in `term`.
    pub(super) fn classic_on_election(&mut self, now: Instant, from: NodeId, term: Term) {
        if from > self.id || !self.members.is_candidate(self.id) {
            // Classic elections only go upwards, and never to observers.
            self.drop_input(DropReason::Unexpected);
            return;
        }
        if self.standing_aside {
            // It resigned and the members elect without it: answering would make
            // the sender wait for a Coordinator this node will not send, and
            // joining would race the members that no longer ask it.
            self.drop_input(DropReason::Outdated);
            return;
        }
        if !matches!(self.backing(now, from, term), Backing::Answer) {
            // It does not reach a quorum (or a probe will tell first): it must not
            // make the lower member wait for a leadership it may not win.
            return;
        }
        // One Answer per Election received, whatever follows.
        self.send(from, Message::Answer { term });
        match self.phase {
            Phase::Leading => self.leader_on_election(now, from, term),
            Phase::Electing { term: running }
            | Phase::AwaitingCoordinator { term: running }
            | Phase::Claiming { term: running } => {
                // Choice 2: join only a newer election than the one already running.
                if term > running {
                    self.begin_election(now, term);
                }
            }
            Phase::Idle => {
                if term > self.term {
                    self.begin_election(now, term);
                }
                // Otherwise the Election is from this node's own term or older: the
                // sender is behind a leadership this node knows of, or its Election
                // crossed this node's resignation. Starting an election of this
                // node's own here would race the members that already moved on
                // into one term (two leaders in it); answering is enough, because
                // the leader tells the sender (below), and an idle node without a
                // leader always has its leader timeout armed to elect by itself.
            }
        }
    }

    /// The sitting leader, answering a lower member's Election: tell that member
    /// who leads, without disturbing anyone else.
    pub(super) fn leader_on_election(&mut self, now: Instant, from: NodeId, term: Term) {
        if term > self.term {
            if self.quorum().is_some() {
                // With a quorum a re-announcement is a new claim: stand again.
                self.begin_election(now, term);
                return;
            }
            // A newer election began: the sender lost this leader. Every member may
            // be in that election now, so the leadership is re-announced to all in
            // the new term; no member above this one is live (it would lead), so
            // this is exactly "joining the election and winning it at once".
            self.term = term;
            let token = crate::event::FencingToken {
                term,
                leader: self.id,
            };
            self.announce(now, token);
        } else if term < self.term || self.missed_announcement(now) {
            // The sender has not seen this leadership: re-send the Coordinator to it
            // alone (not to everyone, so Table 1's counts stay exact).
            self.remind(from);
        }
    }

    /// Whether an Election of this leader's own term, arriving now, comes from a
    /// member that cannot have seen the announcement. Elections that crossed the
    /// Coordinator arrive within a round trip of it (Table 1's concurrent
    /// elections); one that arrives later was sent by a member the Coordinator
    /// never reached, such as one that has just started with a term that happens
    /// to equal this leader's.
    fn missed_announcement(&self, now: Instant) -> bool {
        self.announced_at
            .is_some_and(|at| now > Self::after(at, self.timings.round_trip))
    }

    /// Answer from `from` in `term`.
    pub(super) fn classic_on_answer(&mut self, now: Instant, from: NodeId, term: Term) {
        if from < self.id {
            self.drop_input(DropReason::Unexpected);
            return;
        }
        match self.phase {
            Phase::Electing { term: running } if running == term => {
                // The tutorial "What is Bully Algorithm": "sends no further messages for this election and waits
                // for a Victory message".
                self.become_awaiting_coordinator(term);
                self.timers.stop(Timer::Answer);
                self.timers.set(
                    Timer::Coordinator,
                    Self::after(now, self.timings.coordinator_timeout),
                );
            }
            Phase::AwaitingCoordinator { term: running } if running == term => {}
            _ => self.drop_input(DropReason::Outdated),
        }
    }

    /// Nobody above answered in time: they are all suspected, and this node wins.
    pub(super) fn classic_on_answer_timeout(&mut self, now: Instant) {
        for index in 0..self.members.higher().len() {
            let to = self.members.higher()[index];
            self.members.suspect(to);
        }
        self.become_leader(now);
    }
}
