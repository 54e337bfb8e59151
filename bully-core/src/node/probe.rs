//! The probe as the node runs it (with a quorum, and without one after an
//! election of its own failed): before it stands, a member asks every voter
//! which leader it heard; the replies tell it whether it reaches a quorum and
//! whether that quorum has lost its leader too, and so whether it may stand.
//! `Connectivity` keeps the probe and concludes it (`connectivity/verdict.rs`);
//! this file sends, replies, and acts on the conclusion (docs/protocol.md, R5
//! to R12; `connectivity.rs` says why).

use std::collections::BTreeMap;

use super::connectivity::Standing;
use super::{Node, Phase};
use crate::config::Preemption;
use crate::event::Role;
use crate::message::{Message, NodeId, Term};
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// What the probe's decisions read of this node.
    fn standing(&self) -> Standing {
        Standing {
            own: self.id,
            quorum: self.quorum(),
            own_vote: usize::from(self.members.is_voter(self.id)),
            preempts: self.config.preemption() == Preemption::Always,
        }
    }

    /// Probes, meaning to stand if `stand` (else only to learn whether it
    /// reaches a quorum, for the Elections waiting below).
    ///
    /// R5 decides when (`standing.rs`); this sends the probe.
    pub(super) fn start_probe(&mut self, now: Instant, stand: bool) {
        if !self.connectivity.open_probe(self.term, stand) {
            return;
        }
        let term = self.term;
        for index in 0..self.members.len() {
            let to = self.members.ids()[index];
            // Only voters' replies count (observers that do not vote are not
            // asked): a node that is its own quorum asks nobody, and its probe
            // concludes at once, within one message per member for the input.
            if to != self.id && self.members.is_voter(to) {
                self.send(to, Message::Probe { term });
            }
        }
        self.timers
            .set(Timer::Probe, Self::after(now, self.timings.answer_timeout));
        self.conclude_probe_if_complete(now);
    }

    /// `Probe` from `from`: say which leader this node hears, changing nothing;
    /// unless this node leads and the prober can never follow it (below).
    pub(super) fn on_probe(&mut self, now: Instant, from: NodeId, term: Term) {
        let leader = self.heard_leader(now);
        self.send(
            from,
            Message::ProbeReply {
                // The later of the probe's term and its own: a prober behind the
                // cluster stands in a term above the current one at once.
                term: term.max(self.term),
                leader: leader.filter(|&leader| leader != from),
                cut_off: self.known_unconnected(now),
            },
        );
        if self.is_left_behind_by(from, term) {
            // The prober is in a later term than this leadership and does not
            // acknowledge it: the fencing token it accepted may be above this
            // leadership's (this leader restarted without its state and was
            // elected in a lower term than before), and then it can never follow
            // this leadership, nor stand against it (its probes name this
            // leader). Lead again in a term above the prober's; the followers'
            // promises are to this node, so they vote for it at once.
            self.begin_election(now, self.term.max(term).next());
        }
    }

    /// Whether this node leads in a term below `term`, a probe's from `from`, and
    /// `from`, a voter, has not acknowledged its latest heartbeat rounds.
    ///
    /// docs/protocol.md: R12, lead again above a prober that cannot follow.
    fn is_left_behind_by(&self, from: NodeId, term: Term) -> bool {
        let Some(led) = self.leadership_term() else {
            return false;
        };
        // A follower acknowledges every round within a round trip: one that
        // acknowledged none of the last two rounds does not follow this
        // leadership.
        let acked = self.members.acked_round(from).unwrap_or(0);
        term > led
            && self.quorum().is_some()
            && self.members.is_voter(from)
            && acked.saturating_add(2) < self.latest_round()
    }

    /// The leader this node heard within the last leader timeout: itself if it
    /// leads, or if it stands (it runs an election of its own, or claims).
    ///
    /// A member that stands names itself so that a lower prober does not stand
    /// over it (it does not back an election below a leader it would not
    /// replace): otherwise the members below a standing one, whose leader
    /// timeouts fire while it probes, elects and claims, would each stand in a
    /// newer term, and every answer would cost a term (a partition of five
    /// raised the term by three where one election was needed).
    ///
    /// docs/protocol.md: R6, the highest goes first.
    fn heard_leader(&self, now: Instant) -> Option<NodeId> {
        if matches!(
            self.phase,
            Phase::Leading | Phase::Electing { .. } | Phase::Claiming { .. }
        ) {
            return Some(self.id);
        }
        let leader = self.leader?;
        let heard = self.connectivity.leader_heard_at()?;
        (now < Self::after(heard, self.config.leader_timeout())).then_some(leader.id)
    }

    /// `ProbeReply` from `from`: the leader it named, and whether it said it is
    /// cut off from a quorum.
    pub(super) fn on_probe_reply(
        &mut self,
        now: Instant,
        from: NodeId,
        term: Term,
        reply: (Option<NodeId>, bool),
    ) {
        let voter = self.members.is_voter(from);
        if !self
            .connectivity
            .record_reply((from, voter), term, reply, self.id)
        {
            self.drop_input(DropReason::Outdated);
            return;
        }
        self.conclude_probe_if_complete(now);
    }

    fn conclude_probe_if_complete(&mut self, now: Instant) {
        let Some(replies) = self.connectivity.replies() else {
            return;
        };
        let others = self.members.voters() - usize::from(self.members.is_voter(self.id));
        if replies >= others {
            self.timers.stop(Timer::Probe);
            self.conclude_probe(now);
        }
    }

    /// The probe's time is up (or every member replied): decide.
    pub(super) fn conclude_probe(&mut self, now: Instant) {
        let standing = self.standing();
        let leader = self.leader.map(|leader| leader.id);
        let follower = self.role() == Role::Follower;
        let Some(conclusion) = self.connectivity.conclude(now, &standing, leader, follower) else {
            return;
        };
        let reaches_quorum = conclusion.reaches_quorum;
        let stands = conclusion.stands;
        let newest_waiting = conclusion.waiting.values().copied().max();
        if !reaches_quorum {
            for _ in conclusion.waiting {
                self.drop_input(DropReason::NoQuorum);
            }
        } else if stands {
            // It stands below, in the newest waiting Election's term or above
            // it: its own election answers them (and one input stays within
            // one message per member: answers and an election would be two).
            for _ in conclusion.waiting {
                self.drop_input(DropReason::Outdated);
            }
        } else {
            self.answer_waiting(now, conclusion.waiting);
        }
        if self.role() != Role::Follower {
            return;
        }
        // What answering the waiting Elections left it following.
        let following = (self.leader.map(|leader| leader.id), conclusion.takeover);
        if !conclusion.meant_to_stand {
            if !reaches_quorum {
                // It knows now that it is cut off: it says so until it may probe
                // again (see `known_unconnected`), backing off as a failed stand.
                self.connectivity
                    .back_off(now, &standing, following, self.config.leader_timeout());
            }
            if self.leader.is_none() && !self.timers.is_armed(Timer::LeaderTimeout) {
                // Leaderless and idle: something must move it on.
                self.arm_leader_timeout(now);
            }
            return;
        }
        if stands {
            // A claim deferred by this node's own promise, or refused, may try
            // again without a second probe while the first one's word holds.
            let clearance = self
                .timings
                .follower_lease
                .saturating_add(self.timings.answer_timeout.saturating_mul(2));
            self.connectivity.stood(Self::after(now, clearance));
            for &member in &conclusion.cut_off {
                // It will not stand: the election does not wait for it (until it
                // is heard from again, as any suspected member).
                self.members.suspect(member);
            }
            // The next term it knows of; or, if a lower member's Election
            // waited for this probe in a newer term, that Election's term: it
            // joins that election, as classic Bully does when it answers one,
            // rather than stand a term above it (a second new term).
            let term = self
                .term
                .max(conclusion.latest_term)
                .next()
                .max(newest_waiting.unwrap_or_default());
            self.begin_election(now, term);
            return;
        }
        // It may not stand: nothing moves, and it asks again later.
        if !reaches_quorum && self.retries_start_probe(now) {
            self.timers.set(
                Timer::LeaderTimeout,
                Self::after(now, self.timings.answer_timeout),
            );
            return;
        }
        let backoff =
            self.connectivity
                .back_off(now, &standing, following, self.config.leader_timeout());
        if self.leader.is_none() {
            let wait = backoff.max(
                self.timings
                    .leader_timeout_at_rank(self.members.rank_below(None)),
            );
            let next_probe = Self::after(now, wait);
            self.timers.set(Timer::LeaderTimeout, next_probe);
            // Until that probe it keeps saying that it is cut off, in its probe
            // replies, and votes for a lower member's claim rather than probe
            // again against it. Otherwise a lower member connected to a quorum
            // waits an answer timeout for it, and loses its claim's votes to
            // probes that fail as this one did.
            self.connectivity.keep_quiet_until(next_probe);
        }
    }

    /// Answers the Elections that waited for the probe's verdict, newest first:
    /// the newest may make this node run (or claim) an election of its own,
    /// which the older ones then join. Once it claims (or leads), its claim,
    /// sent to every member, tells the others more than an answer would, and
    /// one input stays within one message per member.
    pub(super) fn answer_waiting(&mut self, now: Instant, waiting: BTreeMap<NodeId, Term>) {
        let mut waiting: Vec<(NodeId, Term)> = waiting.into_iter().collect();
        waiting.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
        for (index, (from, term)) in waiting.into_iter().enumerate() {
            let claims = matches!(self.phase, Phase::Claiming { .. } | Phase::Leading);
            if index > 0 && claims {
                self.drop_input(DropReason::Outdated);
                continue;
            }
            self.on_election(now, from, term);
        }
    }
}
