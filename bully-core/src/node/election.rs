//! Running an election, whatever the algorithm: entering it (the term, the
//! events, the timers), joining another member's, and starting over when
//! nothing came of it.

use crate::event::{Event, Role};
use crate::message::Term;
use crate::node::Node;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Starts (or joins) the election of `term`: the one entry to running an
    /// election, so the events and the term move the same way whatever the cause.
    pub(super) fn begin_election(&mut self, now: Instant, term: Term) {
        let accepted = self.highest.map(|highest| highest.term);
        let voted_for_another = self.votes.term_voted_for_another(self.id);
        if accepted
            .max(voted_for_another)
            .is_some_and(|used| term <= used)
        {
            // Only at the end of the term space (`Term::next` saturates): an
            // election there could only win a token this node already accepted, or
            // vote twice in a term, and two leaderships must never share a token.
            self.stats.elections_refused += 1;
            if self.role() == Role::Candidate {
                // Nothing is left to stand in: wait as a follower, not as a
                // candidate that no timer would ever move on.
                self.become_idle();
                self.timers.stop(Timer::Answer);
                self.arm_leader_timeout(now);
            }
            return;
        }
        if !self.members.is_candidate(self.id) {
            // An observer never stands: it lets go of a lost leader and listens.
            self.leave_role();
            self.drop_leader();
            self.arm_leader_timeout(now);
            return;
        }
        self.enter_election(term);
        self.open_election(now);
    }

    /// What starting to run an election does whatever the algorithm: leave the
    /// leader role, let go of the leader, move the term, stop the other waits.
    pub(super) fn enter_election(&mut self, term: Term) {
        self.standing_aside = false;
        self.leave_role();
        self.drop_leader();
        self.term = self.term.max(term);
        self.pending_election = None;
        self.ring.drop_hop();
        for timer in [
            Timer::LeaderTimeout,
            Timer::Answer,
            Timer::Coordinator,
            Timer::RingHop,
            Timer::Stable,
        ] {
            self.timers.stop(timer);
        }
        self.stats.elections_started += 1;
        self.events
            .push_back(Event::ElectionStarted { term: self.term });
    }

    /// Takes part in another member's election of `term` (modified: the raised
    /// flag; ring: a token passed on) and waits, staggered by rank, for its result.
    pub(super) fn join_as_participant(&mut self, now: Instant, term: Term) {
        self.drop_leader();
        self.term = self.term.max(term);
        self.pending_election = Some(term);
        self.timers.stop(Timer::LeaderTimeout);
        self.timers.stop(Timer::Stable);
        let rank = self.members.rank_below(None);
        let mut wait = self.participant_wait(rank);
        if self.quorum().is_some() {
            // The winner's claim may wait for deferred votes: giving up on it
            // sooner would start a newer election over it.
            wait = wait.saturating_add(self.claim_wait());
        }
        self.timers.set(Timer::Coordinator, Self::after(now, wait));
    }

    /// Forgets the accepted leader (`LeaderLost` if it was another member).
    pub(super) fn drop_leader(&mut self) {
        if let Some(leader) = self.leader.take() {
            if leader.id != self.id {
                self.events.push_back(Event::LeaderLost {
                    leader: leader.id,
                    term: leader.term,
                });
            }
        }
    }

    /// Nothing came of an election in time (classic: the Coordinator after an
    /// Answer, see `classic.rs` for why this node does not crown itself; modified:
    /// the flag's fail-safe; ring: the token or the second pass): start over, in
    /// a new term, or with a quorum in the same term while nobody has used it
    /// (see `may_retry_in_term`).
    pub(super) fn on_coordinator_timeout(&mut self, now: Instant) {
        if self.quorum().is_none() {
            self.connectivity.election_failed();
        };
        if self.may_retry_in_term(now) {
            self.begin_election(now, self.term);
        } else {
            self.stand(now);
        }
    }
}
