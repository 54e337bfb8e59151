//! A claim, with a quorum: the winner of an election asks for votes, a member
//! decides whether to vote (G3, G5, R16 to R18), and the claimant leads once a
//! quorum voted for an ask whose lease still has a round trip to run (G14,
//! R15). The vote's own bookkeeping is `votes.rs`.

use super::{Node, Phase};
use crate::event::FencingToken;
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// A won election, with a quorum: ask the members to acknowledge.
    ///
    /// docs/protocol.md: R16, ask a lower leader to yield.
    pub(super) fn begin_claim(&mut self, now: Instant) {
        let term = self.term;
        let voted_elsewhere = self
            .votes
            .vote()
            .filter(|_| self.votes.voted_elsewhere(term, self.id));
        if let Some((voted, _)) = voted_elsewhere {
            // It already voted for another member in this term (an election of an
            // older term's members can hand it this one): a vote for itself now
            // would be a second vote in one term. Stand in the first term above
            // that vote instead (at the end of the term space, `begin_election`
            // refuses and leaves it waiting as a follower).
            self.term = self.term.max(voted);
            self.begin_election(now, self.term.next());
            return;
        }
        if let Some(until) = self.promised_elsewhere(now, self.id) {
            // It may not even vote for itself yet: try again once it may.
            self.become_idle();
            self.timers.set(Timer::Coordinator, until);
            if let Some(((leader, _), _)) = self.votes.promise() {
                let member = self.members.index_of(leader).is_some();
                let free_otherwise =
                    !self.votes.held(now) && self.promised_to_nobody(now).is_none();
                if member && leader < self.id && free_otherwise {
                    // Its promise is to a lower leader it takes over
                    // from: it asks that leader to yield (its claim, to it
                    // alone), whose resignation releases the promise, and it
                    // claims then, rather than at the promise's end, a follower
                    // lease on. The ask is numbered as every other: a
                    // vote the leader sends for it backs no later ask.
                    let round = self.open_request(now, term);
                    self.send(leader, Message::Coordinator { term, round });
                }
            }
            return;
        }
        // Its own vote needs no promise: if it wins it leads, and a leader resigns
        // before it votes for anyone else; if it does not, it granted no lease.
        self.votes.cast(term, self.id);
        self.become_claiming(term);
        self.ask_for_votes(now, term);
        self.confirm_if_quorum(now);
    }

    /// Sends the claim of `term` (again), as a new request, and waits for its
    /// votes.
    pub(super) fn ask_for_votes(&mut self, now: Instant, term: Term) {
        let round = self.open_request(now, term);
        let own = usize::from(self.members.is_voter(self.id));
        if self.quorum().is_some_and(|quorum| own < quorum) {
            // When its own vote is the quorum there is nobody to ask: the
            // confirming heartbeat round tells every member, and one input
            // stays within one message per member.
            for index in 0..self.members.len() {
                let to = self.members.ids()[index];
                if to != self.id {
                    self.send(to, Message::Coordinator { term, round });
                }
            }
        } else {
            self.count_own_quorum(round);
        }
        let wait = self.claim_wait();
        self.timers.set(Timer::Answer, Self::after(now, wait));
    }

    /// How long a claim waits for its votes. Votes deferred by promises to the
    /// leader before take longer: until it resigns (a round trip more, and its
    /// resign delay), or until the promises from its last heartbeat round run
    /// out (a heartbeat interval after its lease).
    ///
    /// docs/protocol.md: R14, waits sized to the slowest party.
    pub(super) fn claim_wait(&self) -> std::time::Duration {
        self.answer_wait()
            .saturating_add(self.config.heartbeat_interval())
            .saturating_add(self.config.resign_delay())
    }

    /// Too few acknowledged the claim in time: this node names no leader and tries
    /// again after its leader timeout.
    pub(super) fn on_claim_timeout(&mut self, now: Instant) {
        self.become_idle();
        self.arm_leader_timeout(now);
        // It won an election and could not gather a quorum: perhaps it does
        // not reach one. A probe tells it, and its replies then tell the
        // members (a ring that passes it its token would elect it again).
        self.start_probe(now, false);
    }

    /// Claiming: leads once a quorum acknowledged one of its asks and the
    /// lease that gives still has a round trip to run.
    ///
    /// docs/protocol.md: G14, a claim leads its own term only; R15, the late claim asks again.
    pub(super) fn confirm_if_quorum(&mut self, now: Instant) {
        let Phase::Claiming { term } = self.phase else {
            return;
        };
        if term != self.term {
            // Its term moved past the claim (a lower member's newer claim it
            // would take over from, say): the votes are for a term it no
            // longer stands in, and leading would take the newer term's token
            // without a vote in it (I6). The claim runs out on its timer.
            return;
        }
        let Some(lease_until) = self.requests.lease_until() else {
            return;
        };
        if lease_until <= Self::after(now, self.timings.round_trip) {
            // The votes came late (they waited for a promise to the
            // old leader to run out): the lease dated from the ask they
            // answered would end before the first heartbeat round's
            // acknowledgements could renew it, and the leadership would
            // lapse at once. Ask again, unless a newer ask is already out: the
            // voters are free now, so the new votes come within a round trip,
            // with a whole lease ahead, dated from the new ask they name.
            if self.round_has_quorum(self.latest_round()) {
                self.ask_for_votes(now, term);
            }
            return;
        }
        self.timers.stop(Timer::Answer);
        self.lead(now);
        // The first heartbeat confirms the leadership to the members at once.
        self.send_heartbeats(now);
        self.arm_lease_timer();
    }

    /// Coordinator from `from` with a quorum: request `round` of a claim to
    /// vote on.
    ///
    /// Decides by G3 and G5 (`votes.rs`).
    pub(super) fn on_claim(&mut self, now: Instant, from: NodeId, term: Term, round: u64) {
        let token = FencingToken { term, leader: from };
        if self.highest.is_some_and(|highest| token < highest) || term < self.term {
            self.drop_input(DropReason::StaleLeader);
            return;
        }
        if self.would_preempt(from) && !self.known_unconnected(now) {
            // Stand instead of voting for a lower member, if a probe says it may;
            // one that does not reach a quorum votes for it instead.
            self.term = self.term.max(term);
            if self.role() == crate::event::Role::Follower && self.connectivity.may_probe(now) {
                self.stand(now);
            }
            return;
        }
        if self.votes.voted_elsewhere(term, from) {
            let same_term_long_led = self.phase == Phase::Leading
                && self.leadership_term() == Some(term)
                && self
                    .announced_at
                    .is_some_and(|at| now > Self::after(at, self.timings.round_trip));
            if same_term_long_led && from > self.id {
                // A higher member names this leadership's term as its own, long
                // after this one began: it accepted a leadership of that term
                // too, which only a member restarted without its durable state
                // (A3 broken) makes possible, and it tells so when it refuses
                // this one's heartbeats as older than what it accepted (S3). It
                // can never follow this term: the leadership yields, and the
                // election that follows gives everyone one newer term.
                self.yield_to(now, from);
            }
            self.drop_input(DropReason::Refused);
            return;
        }
        if self.phase == Phase::Leading && self.members.is_voter(self.id) {
            self.yield_to(now, from);
        }
        if let Some(until) = self.promised_elsewhere(now, from) {
            // Its promise to a sitting leader forbids the vote for now. It is
            // cast when that leader resigns (as it does for a higher claimant
            // under `Preemption::Always`) or when the promise runs out (a leader
            // whose lease ended out of this member's sight), if the claim is
            // still the newest then; the claimant waits long enough for it.
            self.votes.defer(from, term, round);
            self.timers.set(Timer::DeferredVote, until);
            self.drop_input(DropReason::Refused);
            return;
        }
        if !self.members.is_voter(self.id) {
            return;
        }
        self.votes.clear_deferred();
        self.timers.stop(Timer::DeferredVote);
        if self.leader.is_some_and(|leader| leader.id != from) || self.phase != Phase::Idle {
            self.leave_role();
            self.drop_leader();
        }
        self.votes.cast(term, from);
        self.connectivity.claim_voted(from);
        // A vote backs the lease the claimant dates from the ask it answers,
        // so it promises as an acknowledged heartbeat does.
        self.promise_to(now, from, term);
        self.term = self.term.max(term);
        self.pending_election = None;
        self.timers.stop(Timer::Coordinator);
        self.send(from, Message::Ack { term, round });
        // It follows the claimant only once its heartbeat shows the quorum.
        self.arm_leader_timeout(now);
    }

    /// The promise to `leader` was released (it resigned): cast a vote that
    /// waited for that.
    ///
    /// docs/protocol.md: R18, deferred votes.
    pub(super) fn cast_deferred_vote(&mut self, now: Instant) {
        self.timers.stop(Timer::DeferredVote);
        let Some((claimant, term, round)) = self.votes.take_deferred() else {
            return;
        };
        if self.term <= term {
            // Decided as if the claim arrived now (the claimant may have moved on;
            // then the vote is an outdated acknowledgement it drops). It names
            // the ask it answers, sent before the promise it makes now began:
            // the claimant dates nothing later than that ask.
            self.on_claim(now, claimant, term, round);
        }
    }

    /// What held a vote back was released in this input (a resignation, or
    /// the work's stop): the vote it deferred is cast at the next
    /// `handle_timeout`, due at once, and decided then against the promises
    /// that run then. Not in this input: one input applies one rule, and
    /// stays within one message per member.
    pub(super) fn vote_when_free(&mut self, now: Instant) {
        if self.votes.has_deferred() {
            self.timers.set(Timer::DeferredVote, now);
        }
    }

    /// With a quorum: whether an election that came to nothing may be run again
    /// in the term it ran in, rather than a new one. Terms number leaderships,
    /// not attempts: a member answered by a higher one that cannot claim yet
    /// (it waits out the promise to nobody it makes at start) would otherwise
    /// raise the term at every retry, and a one-at-a-time boot of three members
    /// reached term 7 before anyone led.
    ///
    /// Safe because a term is won only by a claim that a quorum votes for, and a
    /// member votes once per term: a retry can never give a term two leaders.
    /// So it needs a term this node has not used otherwise: no leader of it
    /// accepted, no vote in it for another member; and a probe that recently let
    /// it stand (the retry does not probe again).
    ///
    /// docs/protocol.md: R13, retry in the same term.
    pub(super) fn may_retry_in_term(&self, now: Instant) -> bool {
        let term = self.term;
        self.quorum().is_some()
            && term > Term(0)
            && self.members.is_candidate(self.id)
            && self.connectivity.is_cleared(now)
            && self.highest.is_none_or(|highest| highest.term < term)
            && self
                .votes
                .vote()
                .is_none_or(|(voted, whom)| voted < term || whom == self.id)
    }
}
