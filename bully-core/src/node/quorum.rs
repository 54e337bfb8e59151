//! The quorum gate (`Config::with_quorum`): claims and votes, acknowledgements,
//! and the leader's lease.
//!
//! Why no two members ever lead at overlapping times, in any terms: a leader's
//! lease ends `leader_lease` after the send time of its claim, or of its last
//! heartbeat round, that `q` members acknowledged (a vote is an acknowledgement
//! and promises the same). A new leader needs `q` votes; two sets of `q` voters
//! share a member (for `q` a majority), and that member either is the old leader
//! (which stepped down before voting) or acknowledged its last round and then
//! voted. It does not vote while its promise from that round runs
//! (`follower_lease` from receipt, at least as long in real time as the leader's
//! lease from the earlier send), nor vote for an older term than it has seen, so
//! the vote, and the new leadership, come after the old lease ran out. One vote per
//! member per term keeps two claims of one term from both gathering `q` votes.
//!
//! Every request for acknowledgement, a claim's ask or a heartbeat round, is
//! numbered, and an acknowledgement names the request it answers: it backs a
//! lease dated from that request's send time (or an earlier one's), never a
//! later one's, so no lease begins before a promise it counts.
//!
//! A restarted member may have forgotten its promises, so unless it was
//! declared a first boot it votes for nobody, itself included, for
//! `follower_lease` from its first input and from `Node::start`.

use crate::time::Instant;

use super::{Node, Phase};
use crate::event::{Event, FencingToken, Leader};
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::timer::Timer;

impl Node {
    /// The number of members, this node included, that must stand behind a leader.
    pub(super) fn quorum(&self) -> Option<usize> {
        self.config.quorum().size(self.members.voters())
    }

    /// Whether a promise to another leader (or, after a start, to nobody) forbids
    /// voting for `candidate` now, and until when.
    ///
    /// docs/protocol.md: G5, no vote against a promise.
    pub(super) fn promised_elsewhere(&self, now: Instant, candidate: NodeId) -> Option<Instant> {
        self.votes.promised_elsewhere(now, candidate, self.id)
    }

    /// Until when a promise to nobody after coming back forbids every vote,
    /// if it runs.
    pub(super) fn promised_to_nobody(&self, now: Instant) -> Option<Instant> {
        self.votes.promised_to_nobody(now)
    }

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

    /// Numbers a new request for acknowledgement of this node's claim or
    /// leadership of `term`, sent at `now`, and returns its number (see
    /// `requests.rs`). A new term forgets who acknowledged what.
    pub(super) fn open_request(&mut self, now: Instant, term: Term) -> u64 {
        let (number, new_term) = self.requests.open(now, term);
        if new_term {
            self.members.reset_acks();
        }
        number
    }

    /// The number of the latest request for acknowledgement of this node's
    /// claim or leadership (0 before any).
    pub(super) fn latest_round(&self) -> u64 {
        self.requests.latest()
    }

    /// Sends the claim of `term` (again), as a new request, and waits for its
    /// votes.
    fn ask_for_votes(&mut self, now: Instant, term: Term) {
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
        if matches!(self.phase, Phase::Claiming { .. }) {
            self.become_idle();
            self.arm_leader_timeout(now);
            // It won an election and could not gather a quorum: perhaps it does
            // not reach one. A probe tells it, and its replies then tell the
            // members (a ring that passes it its token would elect it again).
            self.start_probe(now, false);
        }
    }

    /// Claiming: leads once a quorum acknowledged one of its asks and the
    /// lease that gives still has a round trip to run.
    ///
    /// docs/protocol.md: G14, a claim leads its own term only; R15, the late claim asks again.
    fn confirm_if_quorum(&mut self, now: Instant) {
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
    /// docs/protocol.md: G3, one vote per term.
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

    /// The leader yields to `claimant`'s claim: its leadership ends now. It tells
    /// its followers so (`Resign`), which frees their promises to it, so they
    /// vote too. With a resign delay it says so only once the work of its
    /// leadership has had that long to stop, and until then it does not vote
    /// for the claimant either (see `hold_votes`): in a cluster of two or three its own vote
    /// would otherwise complete the claimant's quorum at once, while its work
    /// is still stopping.
    ///
    /// docs/protocol.md: R17, yield to a claim, give way to an election.
    fn yield_to(&mut self, now: Instant, claimant: NodeId) {
        let led = self.term;
        self.votes.owe_resign(led, claimant);
        let delay = self.config.resign_delay();
        if delay.is_zero() {
            self.send_pending_resign();
        } else {
            self.timers.set(Timer::Resign, Self::after(now, delay));
        }
        self.leave_role();
        self.drop_leader();
    }

    /// This leader gives way to another member's newer election (modified
    /// Bully's raised flag, a ring token passing): with a quorum it tells its
    /// followers that it no longer leads, so that their promises to it free
    /// them to vote for the election's winner, a resign delay after its
    /// leadership ended (the time its work is given to stop), as a leader that
    /// yields to a claim does. Without it their votes would wait for the
    /// promises to run out, and the members that gave up waiting for the
    /// winner's claim would stand in newer terms.
    pub(super) fn give_way(&mut self, now: Instant) {
        let leading = self.phase == Phase::Leading;
        if leading && self.quorum().is_some() && !self.votes.owes_resign() {
            self.votes.owe_resign(self.term, self.id);
            // Through the timer even without a delay: this input already
            // passes the election on to the members.
            let delay = self.config.resign_delay();
            self.timers.set(Timer::Resign, Self::after(now, delay));
        }
        self.leave_role();
    }

    /// A leadership of this node's own ended at `now`. With a resign delay it
    /// votes for no other member for that long, or until the caller says the
    /// work stopped ([`Node::work_stopped`]): a vote could let another member's
    /// leadership begin while the work of this one may still be stopping. Whatever ended it (a higher claim, a higher leader, a
    /// lease that ran out, a step-down), the delay is the time the work is
    /// given to stop.
    ///
    /// docs/protocol.md: G9, the hold.
    pub(super) fn hold_votes(&mut self, now: Instant) {
        let delay = self.config.resign_delay();
        if self.quorum().is_none() || delay.is_zero() {
            return;
        }
        self.votes.hold(Self::after(now, delay));
    }

    /// Ends a leadership's resign delay early: its work has stopped.
    pub(super) fn release_after_work(&mut self, now: Instant) {
        if !self.votes.end_hold() {
            return;
        }
        self.send_pending_resign();
        self.vote_when_free(now);
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

    /// After a heartbeat from `from` was handled: acknowledge it and promise.
    pub(super) fn acknowledge_heartbeat(
        &mut self,
        now: Instant,
        from: NodeId,
        term: Term,
        round: u64,
    ) {
        let following = self.leader == Some(Leader { id: from, term });
        if !following || !self.members.is_voter(self.id) {
            return;
        }
        self.promise_to(now, from, term);
        self.send(from, Message::Ack { term, round });
    }

    /// Promises `leader` of `term` not to vote against it for a follower lease
    /// from `now`, the moment it received the request it acknowledges.
    ///
    /// docs/protocol.md: G4, an acknowledgement is a promise.
    fn promise_to(&mut self, now: Instant, leader: NodeId, term: Term) {
        let until = Self::after(now, self.timings.follower_lease);
        self.votes.promise_to(now, leader, term, until);
    }

    /// Ack from `from` of request `round` of `term`: a vote for this node's
    /// claim, or an acknowledgement of its leadership's heartbeat round.
    pub(super) fn on_ack(&mut self, now: Instant, from: NodeId, term: Term, round: u64) {
        let ours = match self.phase {
            Phase::Claiming { term: claimed } => claimed == term,
            Phase::Leading => self.leadership_term() == Some(term),
            _ => false,
        };
        if !ours || !self.requests.was_sent(term, round) {
            // Another term's, or a request never sent (forged).
            self.drop_input(DropReason::Outdated);
            return;
        }
        self.count_round_ack(from, round);
        self.confirm_if_quorum(now);
    }

    /// Credits `from`'s acknowledgement to every remembered request up to
    /// `round` it had not acknowledged, and extends the lease by any request
    /// that now has its quorum.
    fn count_round_ack(&mut self, from: NodeId, round: u64) {
        let (Some(first), Some(needed)) = (self.members.ack_round(from, round), self.acks_needed())
        else {
            return;
        };
        let extended = self
            .requests
            .count_ack(first, round, needed, self.timings.leader_lease);
        if extended && self.phase == Phase::Leading {
            self.arm_lease_timer();
        }
    }

    /// How many acknowledgements from others a request needs for a quorum
    /// (its own vote counts too, if it votes); `None` without a quorum.
    fn acks_needed(&self) -> Option<usize> {
        let own = usize::from(self.members.is_voter(self.id));
        Some(self.quorum()?.saturating_sub(own))
    }

    /// A member that left no longer backs a lease: its acknowledgements are
    /// taken back from every request they were credited to.
    pub(super) fn uncount_acks_of(&mut self, member: NodeId) {
        if let Some(acked) = self.members.acked_round(member) {
            self.requests.uncount(acked);
        }
    }

    /// Whether request `number` of this claim or leadership has been
    /// acknowledged by a quorum (so has every round without a quorum gate,
    /// where nothing is acknowledged).
    pub(super) fn round_has_quorum(&self, number: u64) -> bool {
        self.acks_needed()
            .is_none_or(|needed| self.requests.has(number, needed))
    }

    /// The newest remembered heartbeat round sent at least a round trip before
    /// `now` (0 if none): a member that still hears this leader has
    /// acknowledged it by now.
    pub(super) fn round_due_by(&self, now: Instant) -> u64 {
        self.requests.due_by(now, self.timings.round_trip)
    }

    /// Numbers the heartbeat round sent at `now`, the next request of the
    /// leadership of `term`, and returns its number.
    pub(super) fn record_round(&mut self, now: Instant, term: Term) -> u64 {
        if self.quorum().is_none() {
            return self.requests.count_unacknowledged();
        }
        let number = self.open_request(now, term);
        if self.count_own_quorum(number) {
            self.arm_lease_timer();
        }
        number
    }

    /// When its own vote is the quorum (a cluster of one): nobody else's
    /// acknowledgement is needed, and request `number` renews the lease as it
    /// is sent. Returns whether it did.
    fn count_own_quorum(&mut self, number: u64) -> bool {
        let own = usize::from(self.members.is_voter(self.id));
        if self.quorum().is_none_or(|quorum| own < quorum) {
            return false;
        }
        self.requests.renew_alone(number, self.timings.leader_lease);
        true
    }

    fn arm_lease_timer(&mut self) {
        if let Some(until) = self.requests.lease_until() {
            self.timers.set(Timer::Lease, until);
        }
    }

    /// The lease ran out before a quorum acknowledged a newer round: this node can
    /// no longer be sure nobody else leads, so it stops.
    ///
    /// docs/protocol.md: G7, a lapsed lease ends the leadership; R19, its resignation.
    pub(super) fn on_lease_timeout(&mut self, now: Instant) {
        let expired = self
            .requests
            .lease_until()
            .is_some_and(|until| until <= now);
        if self.phase == Phase::Leading && expired {
            self.events
                .push_back(Event::LeaseExpired { term: self.term });
            // Tell whoever still hears it that it no longer leads, so that they
            // elect after the staggered part of their timeout, not the whole of
            // it (a leader cut off from all but a hub: the hub elects at once).
            self.broadcast_resign(self.term);
            self.resign_leadership();
            self.requests.end_lease();
            self.connectivity
                .quorum_lost(now, self.members.acknowledging());
            self.arm_leader_timeout(now);
        }
    }

    /// Tells every member that this node resigned the leadership it yielded (at
    /// once, or a resign delay after yielding); the claimant it yielded to too,
    /// whose own promise to this leader it releases.
    pub(super) fn send_pending_resign(&mut self) {
        self.timers.stop(Timer::Resign);
        let Some((led, claimant)) = self.votes.take_owed_resign() else {
            return;
        };
        if claimant == self.id {
            self.broadcast_resign(led);
        } else {
            // It yielded to a claim under way: the claimant elects already, and
            // the members keep their order for the case that its claim fails.
            self.send_resign_to_all(led, None);
        }
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

    /// It came back (its first input, or its start) and may have forgotten a
    /// promise: vote for nobody, itself included, until any promise made
    /// before has certainly run out.
    ///
    /// docs/protocol.md: G10, coming back.
    pub(super) fn forget_promises(&mut self, now: Instant) {
        if self.quorum().is_some() {
            self.votes
                .forget_promises(Self::after(now, self.timings.follower_lease));
        }
    }
}
