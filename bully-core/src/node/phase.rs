//! The node's phases and every change between them: where a node is in the
//! protocol (idle, electing, awaiting the coordinator, claiming, leading),
//! and the only place that moves it from one to another.
//!
//! docs/protocol.md, "What a member keeps", names the phases; the rules that
//! decide *when* a node moves live with the inputs, and call one of these.

use super::{Node, Phase};
use crate::config::Preemption;
use crate::event::{Event, FencingToken, Leader};
use crate::message::Term;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Runs an election of its own in `term` and waits for answers (or, the
    /// ring, for its token to come back).
    pub(super) fn become_electing(&mut self, term: Term) {
        self.phase = Phase::Electing { term };
    }

    /// Answered by a higher member (classic), or handed the election to the
    /// highest that answered (modified): waits for its Coordinator.
    pub(super) fn become_awaiting_coordinator(&mut self, term: Term) {
        self.phase = Phase::AwaitingCoordinator { term };
    }

    /// Won the election of `term`, with a quorum: waits for its votes.
    /// Without one: announced `term` at start, waits for an objection.
    pub(super) fn become_claiming(&mut self, term: Term) {
        self.phase = Phase::Claiming { term };
    }

    /// Gives up a candidacy without leading (the caller arms what moves it
    /// on).
    pub(super) fn become_idle(&mut self) {
        self.phase = Phase::Idle;
    }

    /// The term of this node's own leadership, if it leads.
    pub(super) fn leadership_term(&self) -> Option<Term> {
        match (self.phase, self.leader) {
            (Phase::Leading, Some(leader)) if leader.id == self.id => Some(leader.term),
            _ => None,
        }
    }

    /// Accepts `token` as the leadership to follow.
    pub(super) fn accept(&mut self, now: Instant, token: FencingToken) {
        if self.phase == Phase::Leading {
            self.resign_leadership();
        }
        self.term = self.term.max(token.term);
        self.leader = Some(Leader {
            id: token.leader,
            term: token.term,
        });
        self.highest = Some(token);
        self.detector.new_leadership();
        self.phase = Phase::Idle;
        self.standing_aside = false;
        self.pending_election = None;
        self.timers.stop(Timer::Answer);
        self.timers.stop(Timer::Coordinator);
        self.arm_leader_timeout(now);
        if let Preemption::AfterStable(period) = self.config.preemption() {
            if token.leader < self.id && !self.timers.is_armed(Timer::Stable) {
                // In contact with a lower leader from now on: take over once that
                // has lasted the whole period (a flapping member never gets there).
                self.timers.set(Timer::Stable, Self::after(now, period));
            }
        }
        self.stats.leaders_seen += 1;
        self.connectivity.leader_heard(now);
        self.connectivity.leader_accepted(token.leader, self.id);
        self.events.push_back(Event::LeaderElected {
            leader: token.leader,
            term: token.term,
        });
    }

    /// Becomes the leader of the current term.
    pub(super) fn lead(&mut self, now: Instant) {
        let token = FencingToken {
            term: self.term,
            leader: self.id,
        };
        debug_assert!(
            self.highest.is_none_or(|highest| token > highest),
            "{token} is not above {:?}",
            self.highest
        );
        self.phase = Phase::Leading;
        self.pending_election = None;
        if self.quorum().is_none() {
            // Its heartbeat rounds count from 1; with a quorum they continue
            // the numbers of the claim's asks (`Node::open_request`).
            self.requests.restart_count();
        }
        self.connectivity.leading();
        self.stats.times_leader += 1;
        self.events
            .push_back(Event::BecameLeader { term: self.term });
        for timer in [
            Timer::LeaderTimeout,
            Timer::Answer,
            Timer::Coordinator,
            Timer::Stable,
        ] {
            self.timers.stop(timer);
        }
        self.record_leadership(now, token);
    }

    /// Leaves the leader role (the caller decides what comes next).
    pub(super) fn resign_leadership(&mut self) {
        self.phase = Phase::Idle;
        self.timers.stop(Timer::Heartbeat);
        self.timers.stop(Timer::Stable);
        if self.leader.is_some_and(|leader| leader.id == self.id) {
            self.leader = None;
        }
        // Every caller took `now` through `Node::clock`, which recorded it.
        if let Some(now) = self.latest {
            self.hold_votes(now);
        }
        self.events
            .push_back(Event::SteppedDown { term: self.term });
    }

    /// Stops leading, if it does (`SteppedDown`), or running an election of its own.
    pub(super) fn leave_role(&mut self) {
        match self.phase {
            Phase::Leading => self.resign_leadership(),
            Phase::Electing { .. } | Phase::AwaitingCoordinator { .. } | Phase::Claiming { .. } => {
                self.phase = Phase::Idle;
                self.timers.stop(Timer::Answer);
            }
            Phase::Idle => {}
        }
    }
}
