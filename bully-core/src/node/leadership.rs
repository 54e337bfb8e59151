//! Leadership, the same under every algorithm: accepting a coordinator, fencing
//! stale ones, becoming and ceasing to be leader, heartbeats, and the failure
//! detector's leader timeout.

use crate::time::Instant;

use super::{Node, Phase};
use crate::config::Preemption;
use crate::event::{Event, FencingToken, Leader};
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::timer::Timer;

impl Node {
    /// `Coordinator` or `Heartbeat` from `from` claiming leadership in `term`;
    /// `round` is the heartbeat's round, 0 for a Coordinator.
    ///
    /// docs/protocol.md: G2, the fencing floor.
    pub(super) fn on_leadership(&mut self, now: Instant, from: NodeId, term: Term, round: u64) {
        if self.on_objection(now, from, term) {
            return;
        }
        let token = FencingToken { term, leader: from };
        if self.leader.map(Leader::token) == Some(token) {
            // The steady state: the accepted leader is alive. Nothing allocates here.
            if round != 0 {
                self.detector.heard_round(&self.timings, round);
            }
            self.arm_leader_timeout(now);
            self.connectivity.leader_heard(now);
            if self.quorum().is_some()
                && self.would_preempt(from)
                && self.connectivity.may_probe(now)
            {
                // A higher member that follows a lower leader because it could
                // not reach a quorum: ask again, now and then, whether it can.
                let busy = self.phase != Phase::Idle || self.timers.is_armed(Timer::Coordinator);
                if !busy {
                    self.stand(now);
                }
            }
            return;
        }
        let lost_and_back =
            self.highest == Some(token) && self.may_follow_older_term(now, from, term);
        if lost_and_back {
            // The leader this node stopped hearing, and did not replace (a probe
            // found it still led a quorum): follow it again.
            self.accept(now, token);
            return;
        }
        let below_floor = self.highest.is_some_and(|highest| token <= highest);
        if !below_floor && term < self.term && self.may_follow_older_term(now, from, term) {
            // A leaderless member whose own claim failed in a later term than this
            // leadership's: it follows rather than stand against a quorum's leader.
            self.accept(now, token);
            return;
        }
        if below_floor || term < self.term {
            // S3: never act on a token below the highest accepted. A fenced leader
            // that is still announcing is told who leads now, by the leader only and
            // to it only, so a stale leader costs one message, not a broadcast.
            self.drop_input(DropReason::StaleLeader);
            if self.leadership_term().is_some() {
                self.remind(from);
            } else if self.phase == Phase::Idle && self.leader.is_some_and(|l| l.id == from) {
                // The accepted leader announces a leadership older than the one it
                // holds: it restarted without its state, so the leadership followed
                // here is gone; elect soon, asking it (it is alive), rather than
                // wait out a whole leader timeout.
                self.elect_soon(now, from);
            } else if self.quorum().is_some()
                && self.leader.is_none()
                && self.highest
                    == Some(FencingToken {
                        term,
                        leader: self.id,
                    })
                && from < self.id
            {
                // Two leaderships of one term, its own ended and `from`'s
                // running: possible only after a member restarted without its
                // durable state (A3 broken). It can never follow `from`'s (S3),
                // and with a quorum behind `from` it will not stand either; so
                // it names its own leadership of that term to `from`, which
                // yields, and the next election gives everyone a newer term.
                self.send(from, Message::Coordinator { term, round: 0 });
            }
            return;
        }
        if self.would_preempt(from) && term.next() == term {
            // G3: a takeover stands in a term above the lower leadership's,
            // and at the end of the term space there is none (`Term::next`
            // saturates): it could only lead this term a second time. It
            // follows instead.
            self.stats.elections_refused += 1;
            self.accept(now, token);
            return;
        }
        if self.quorum().is_some() && self.would_preempt(from) {
            self.preempt_when_connected(now, token);
            return;
        }
        if self.would_preempt(from) {
            // Choice 5: a Coordinator from a lower id than a live higher member makes
            // that member start an election, in a term above the one it just saw;
            // unless it is already running one at least that recent, whose win
            // will out-rank this leadership anyway.
            let running = match self.phase {
                Phase::Electing { term }
                | Phase::AwaitingCoordinator { term }
                | Phase::Claiming { term } => Some(term),
                Phase::Idle | Phase::Leading => self.pending_election,
            };
            if running.is_none_or(|running| running < term) {
                self.term = self.term.max(term);
                self.begin_election(now, self.term.next());
            }
            return;
        }
        self.accept(now, token);
    }

    /// `Resign` from `from`: its leadership of `term` (and of any older term) is
    /// over. A promise made to it for such a leadership protects nothing now;
    /// and if it is the accepted leader, this node elects: at once if the
    /// leader named it its `successor` (see `succession.rs`), else after its
    /// rank's stagger.
    ///
    /// Releases by G8 (`Votes::release`), then R20 and R21.
    pub(super) fn follower_on_resign(
        &mut self,
        now: Instant,
        from: NodeId,
        term: Term,
        successor: Option<NodeId>,
    ) {
        // It stopped leading before it said so (after its resign delay, if
        // it has one): its lease, which a promise to it protected, is void.
        let released = self.votes.release(from, term);
        if released && self.timers.is_armed(Timer::Coordinator) {
            // A claim of its own waited for that promise's end: it may claim
            // now.
            self.timers.set(Timer::Coordinator, now);
        }
        let resigned = FencingToken { term, leader: from };
        if self.leader.map(Leader::token) != Some(resigned) {
            if released {
                self.vote_when_free(now);
            } else {
                self.drop_input(DropReason::Outdated);
            }
            return;
        }
        // Not asked in the election (it abstains), but told its result.
        self.members.mark_resigned(from);
        self.connectivity.leader_resigned(from);
        let rank = if successor == Some(self.id) {
            0
        } else {
            self.members.rank_below(Some(from))
        };
        self.elect_at_rank(now, rank);
        if released {
            self.vote_when_free(now);
        }
    }

    /// `Resign` from `from` of `term`, to a node that does not follow: it
    /// releases a promise to `from` for that leadership, if any (G8), and
    /// nothing else.
    pub(super) fn on_resign_elsewhere(&mut self, now: Instant, from: NodeId, term: Term) {
        if self.votes.release(from, term) {
            self.vote_when_free(now);
        } else {
            self.drop_input(DropReason::Outdated);
        }
    }

    /// The leadership of `leader` is over without a timeout having said so: drop it
    /// and elect after the staggered part of the leader timeout only, so the
    /// highest remaining member asks first and the others hear its result before
    /// their own turn.
    ///
    /// docs/protocol.md: R22, elect soon when the leader announces an older leadership.
    pub(super) fn elect_soon(&mut self, now: Instant, leader: NodeId) {
        self.elect_at_rank(now, self.members.rank_below(Some(leader)));
    }

    /// Lets go of the leader it followed and elects after the staggered part of
    /// the leader timeout at `rank` (at once at rank 0).
    ///
    /// docs/protocol.md: R20, elect soon after a resignation.
    fn elect_at_rank(&mut self, now: Instant, rank: usize) {
        if let Some(lost) = self.leader.take() {
            self.events.push_back(Event::LeaderLost {
                leader: lost.id,
                term: lost.term,
            });
        }
        let offset = self.timings.leader_timeout_at_rank(rank) - self.timings.leader_timeout;
        self.timers
            .set(Timer::LeaderTimeout, Self::after(now, offset));
    }

    /// Whether this node, seeing `from` lead, should take the leadership over at
    /// once. Under `AfterStable` it first follows, and `on_stable` decides later.
    pub(super) fn would_preempt(&self, from: NodeId) -> bool {
        from < self.id
            && self.members.is_candidate(self.id)
            && match self.config.preemption() {
                Preemption::Always => true,
                Preemption::Never | Preemption::AfterStable(_) => false,
            }
    }

    /// With a quorum: whether this node, leaderless and idle, may follow a leader
    /// of a term below its own, or follow again the leader it lost (whose term is
    /// below its own once it voted in a later one). Acknowledging that leader's
    /// heartbeats promises not to vote against it, which is sound only while no
    /// promise to another candidate still binds this node: a vote for itself
    /// led nowhere (it is idle), a vote for `from` promised `from` anyway, and a
    /// vote for another member in a later term than the leader's binds it until
    /// its promise runs out (`follower_lease` after the vote; after a restart,
    /// the promise to nobody outlasts any made before). Terms never move back,
    /// and the vote stays: the node just follows an older leadership than its
    /// own term.
    ///
    /// (Without the promise's end, a member restarted with a vote in a later
    /// term than a leadership elected while it was down would never follow it;
    /// without the vote, a member that voted for a claimant could go back to the
    /// leader it lost and renew that leader's lease while its vote makes the
    /// claimant's quorum: two leaders at once.)
    ///
    /// docs/protocol.md: G13, following binds like a vote.
    fn may_follow_older_term(&self, now: Instant, from: NodeId, term: Term) -> bool {
        let promise_runs = self.votes.any_promise_runs(now);
        self.may_follow_again(from)
            && self.votes.vote().is_none_or(|(voted, whom)| {
                whom == self.id || whom == from || voted <= term || !promise_runs
            })
    }

    /// With a quorum: whether this node, leaderless, idle, and not set on a claim
    /// or takeover of its own, may follow `from` without an election.
    ///
    /// docs/protocol.md: R25, follow again; R24, twin-term recovery, is in on_leadership and on_claim.
    fn may_follow_again(&self, from: NodeId) -> bool {
        self.quorum().is_some()
            && self.leader.is_none()
            && self.phase == Phase::Idle
            && self.pending_election.is_none()
            && !self.would_preempt(from)
            && !self.timers.is_armed(Timer::Coordinator)
            // A takeover is of a lower leader: it does not keep this node from
            // following a higher one.
            && !(self.connectivity.is_taking_over() && from < self.id)
            // A leader that resigned leads that term no more: its heartbeat
            // overtaken by its `Resign` must not undo the resignation (it would
            // turn a successor's probe against its own election).
            && !self.connectivity.heard_resign_from(from)
    }

    /// With a quorum: this node hears `token`, a lower member's leadership,
    /// that it would take over. It stands if a probe says it may; it follows the
    /// lower leader if it cannot reach a quorum, or while it waits to probe again.
    ///
    /// A leadership it has not probed against yet is news (a heal, say), so the
    /// back-off after failed probes does not delay the probe about it.
    ///
    /// docs/protocol.md: R9, do not hold a lower leader back; R10, the voter follows the leadership it voted for.
    fn preempt_when_connected(&mut self, now: Instant, token: FencingToken) {
        if self.known_unconnected(now) {
            // It cannot reach a quorum: it does not hold a lower leader back.
            self.accept(now, token);
            return;
        }
        let busy = self.phase != Phase::Idle
            || self.timers.is_armed(Timer::Coordinator)
            || self.connectivity.probing()
            || self.connectivity.is_taking_over();
        if busy {
            return;
        }
        if self.votes.vote() == Some((token.term, token.leader))
            && self.connectivity.probed_against(token)
        {
            // It voted for this lower leadership's claim, which under
            // `Preemption::Always` it does only while it knows itself cut off
            // from a quorum: it follows it at once, as if it had probed about
            // it, and asks about taking over from the next heartbeat on, while
            // it acknowledges (the steady state above). A probe on this first
            // heartbeat instead would hold back its acknowledgement for an
            // answer timeout, and a lease dated from the claim and as short as
            // two round trips could lapse before any round renewed it.
            self.accept(now, token);
            return;
        }
        if self.connectivity.may_probe(now) || self.connectivity.probed_against(token) {
            self.stand(now);
        } else {
            self.accept(now, token);
        }
    }

    /// `Preemption::AfterStable`: this node has followed a lower leader, in
    /// contact, for the whole stable period; now it takes over.
    ///
    /// docs/protocol.md: R30, AfterStable.
    pub(super) fn on_stable(&mut self, now: Instant) {
        let lower_leader = self.leader.is_some_and(|leader| leader.id < self.id);
        // An abstaining node takes over only once its abstention ends (which
        // starts the stable period again).
        if lower_leader && self.members.is_candidate(self.id) {
            self.stand_over(now);
        }
    }

    /// Wins the election of the current term and announces it.
    pub(super) fn become_leader(&mut self, now: Instant) {
        self.take_leadership(now, true);
    }

    /// Wins the election of the current term. `announce`: broadcast Coordinator
    /// (classic, modified); the ring's second pass is its own announcement. With a
    /// quorum, winning only entitles it to claim the leadership.
    pub(super) fn take_leadership(&mut self, now: Instant, announce: bool) {
        if self.quorum().is_some() {
            self.begin_claim(now);
            return;
        }
        self.lead(now);
        if announce {
            self.broadcast_coordinator(self.term);
        }
        self.timers.set(
            Timer::Heartbeat,
            Self::after(now, self.config.heartbeat_interval()),
        );
    }

    /// Records this node's own leadership of `token` and tells every member the
    /// detector does not suspect (the best case of the lecture notes "Election Algorithm in Distributed Systems": `N - 2` messages when the
    /// crashed leader is suspected). Suspected members still get heartbeats, which
    /// is how one that comes back learns who leads.
    pub(super) fn announce(&mut self, now: Instant, token: FencingToken) {
        self.record_leadership(now, token);
        self.broadcast_coordinator(token.term);
        self.timers.set(
            Timer::Heartbeat,
            Self::after(now, self.config.heartbeat_interval()),
        );
    }

    pub(super) fn broadcast_coordinator(&mut self, term: Term) {
        for index in 0..self.members.len() {
            let to = self.members.ids()[index];
            if to != self.id && !self.members.is_suspected(to) {
                self.send(to, Message::Coordinator { term, round: 0 });
            }
        }
    }

    /// Tells one member that fell behind who leads: the Coordinator again, or with
    /// a quorum (where a Coordinator is a claim to vote on) a heartbeat.
    ///
    /// docs/protocol.md: R23, reminders.
    pub(super) fn remind(&mut self, to: NodeId) {
        let Some(term) = self.leadership_term() else {
            return;
        };
        let message = if self.quorum().is_some() {
            Message::Heartbeat {
                term,
                round: self.latest_round(),
            }
        } else {
            Message::Coordinator { term, round: 0 }
        };
        self.send(to, message);
    }

    /// Makes `token`, this node's own, the leadership it follows.
    pub(super) fn record_leadership(&mut self, now: Instant, token: FencingToken) {
        self.leader = Some(Leader {
            id: self.id,
            term: token.term,
        });
        self.highest = Some(token);
        self.announced_at = Some(now);
        self.stats.leaders_seen += 1;
        self.events.push_back(Event::LeaderElected {
            leader: self.id,
            term: token.term,
        });
    }
}
