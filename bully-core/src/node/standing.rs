//! Standing, with what the node knows of its connectivity: it probes before
//! it stands (R5), answers a lower member's `Election` only if it could lead
//! (R7), and waits for answers long enough for a higher member's probe.

use std::time::Duration;

use super::connectivity::Backing;
use crate::message::{NodeId, Term};
use crate::node::Node;
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Starts an election of this node's own in a new term: at once without a
    /// quorum, after a probe with one.
    ///
    /// docs/protocol.md: R5, probe before standing.
    pub(super) fn stand(&mut self, now: Instant) {
        if self.connectivity.is_cleared(now)
            || (self.quorum().is_none() && !self.connectivity.probes_before_standing())
        {
            // The model of the sources: elect at once (a failover costs `N - 2`).
            self.begin_election(now, self.term.next());
            return;
        }
        if !self.members.is_candidate(self.id) {
            // An observer never stands: `begin_election` lets go of the leader.
            self.begin_election(now, self.term.next());
            return;
        }
        if let Some(until) = self.promised_to_nobody(now) {
            // It may not even vote for itself yet (a start's promise to
            // nobody): an election now would pull the members into a term it
            // cannot claim, and their timeouts into newer ones. It stands once
            // it may. (A promise to the leader it follows is another matter:
            // standing lets go of that leader, and the promise runs out while
            // the claim waits.)
            self.leave_role();
            self.timers.set(Timer::Coordinator, until);
            return;
        }
        self.leave_role();
        // It stops waiting on another member's election (a ring token, a
        // modified flag) and stands on its own, if the probe lets it.
        self.pending_election = None;
        // Nor does it leave the election to the others any longer (R34): the
        // probe may find a lower member's election under way and yield to it
        // (R11), which only works if this node then answers that Election.
        self.standing_aside = false;
        self.start_probe(now, true);
    }

    /// Like [`stand`](Node::stand), to take over from the lower leader it follows
    /// (`Preemption::AfterStable`).
    pub(super) fn stand_over(&mut self, now: Instant) {
        if self.quorum().is_none() {
            self.begin_election(now, self.term.next());
            return;
        }
        // The period it followed the lower leader, in contact, is its evidence:
        // it elects at once, and its retries after a refused claim still count
        // as a takeover (followers of the lower leader back them).
        self.connectivity.set_out_to_take_over();
        self.begin_election(now, self.term.next());
    }

    /// Whether this node, asked by a lower member's Election, may answer it now.
    ///
    /// docs/protocol.md: R7, answer only if it could lead.
    pub(super) fn backing(&mut self, now: Instant, from: NodeId, term: Term) -> Backing {
        if self.quorum().is_none() || self.leadership_term().is_some() {
            return Backing::Answer;
        }
        let leader_timeout = self.config.leader_timeout();
        match self.connectivity.backs(now, leader_timeout, (from, term)) {
            Some(true) => Backing::Answer,
            Some(false) => {
                self.drop_input(DropReason::NoQuorum);
                Backing::Refuse
            }
            None => {
                self.start_probe(now, false);
                Backing::Wait
            }
        }
    }

    /// How long an election waits for answers: with a quorum a higher member may
    /// first probe, for an answer timeout on its own clock, which may run ρ slow
    /// while this one runs ρ fast: the wait covers that probe's longest real
    /// duration on top of the round trip.
    pub(super) fn answer_wait(&self) -> Duration {
        let answer = self.timings.answer_timeout;
        if self.quorum().is_some() {
            let probe = self.timings.longest(answer);
            answer.saturating_add(self.timings.covering(probe))
        } else {
            answer
        }
    }
    /// Whether a fresh probe found that this node does not reach a quorum
    /// (see `Connectivity::known_unconnected`).
    pub(super) fn known_unconnected(&self, now: Instant) -> bool {
        self.connectivity
            .known_unconnected(now, self.config.leader_timeout())
    }

    /// Whether a probe to stand that found no quorum is asked again soon
    /// (R4, `Connectivity::started`).
    pub(super) fn retries_start_probe(&self, now: Instant) -> bool {
        self.connectivity
            .retries_start_probe(now, self.leader.is_some())
    }
}
