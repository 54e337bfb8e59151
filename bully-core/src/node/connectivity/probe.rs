//! The probe (with a quorum): before it stands, a member asks every member which
//! leader it heard; the replies tell it whether it reaches a quorum and whether
//! that quorum has lost its leader too, and so whether it may stand (see
//! `connectivity.rs` for the rules and why).

use std::collections::BTreeMap;
use std::time::Duration;

use super::{MAX_BACKOFF, Probe, Verdict};
use crate::config::Preemption;
use crate::message::{Message, NodeId, Term};
use crate::node::{Node, Phase};
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    pub(in crate::node) fn start_probe(&mut self, now: Instant, stand: bool) {
        if let Some(probe) = self.connectivity.probe.as_mut() {
            probe.stand |= stand;
            probe.takeover |= self.connectivity.taking_over;
            return;
        }
        self.connectivity.probe = Some(Probe {
            term: self.term,
            stand,
            takeover: self.connectivity.taking_over,
            latest_term: self.term,
            cut_off: Vec::new(),
            newer_below: Vec::new(),
            replied: BTreeMap::new(),
            sent_before_resign: false,
        });
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
    pub(in crate::node) fn on_probe(&mut self, now: Instant, from: NodeId, term: Term) {
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
    pub(super) fn is_left_behind_by(&self, from: NodeId, term: Term) -> bool {
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
    pub(super) fn heard_leader(&self, now: Instant) -> Option<NodeId> {
        if matches!(
            self.phase,
            Phase::Leading | Phase::Electing { .. } | Phase::Claiming { .. }
        ) {
            return Some(self.id);
        }
        let leader = self.leader?;
        let heard = self.connectivity.leader_heard_at?;
        (now < Self::after(heard, self.config.leader_timeout())).then_some(leader.id)
    }

    /// `ProbeReply` from `from`: the leader it named, and whether it said it is
    /// cut off from a quorum.
    pub(in crate::node) fn on_probe_reply(
        &mut self,
        now: Instant,
        from: NodeId,
        term: Term,
        (leader, cut_off): (Option<NodeId>, bool),
    ) {
        let voter = self.members.is_voter(from);
        let Some(probe) = self.connectivity.probe.as_mut() else {
            self.drop_input(DropReason::Outdated);
            return;
        };
        if term < probe.term || !voter || probe.replied.contains_key(&from) {
            self.drop_input(DropReason::Outdated);
            return;
        }
        probe.replied.insert(from, leader);
        if leader == Some(from)
            && !probe.sent_before_resign
            && self.connectivity.resigned_leader == Some(from)
        {
            // The leader that resigned answers a probe sent after its
            // resignation naming itself: it leads again (with A3 broken, a
            // leader restarted without its state can lead the very term it
            // resigned, and claims nothing this member would vote for anew).
            // Its heartbeats are news, not stale (docs/protocol.md: R21).
            self.connectivity.resigned_leader = None;
        }
        if leader == Some(from) && from < self.id && term > probe.term {
            probe.newer_below.push(from);
        }
        if cut_off {
            probe.cut_off.push(from);
        }
        probe.latest_term = probe.latest_term.max(term);
        self.conclude_probe_if_complete(now);
    }

    /// How many of the probe's replies back an election by this node: those
    /// that name no leader; a leader it would replace anyway; a leader that told
    /// this node it resigned (the replier has not heard yet); and, without a
    /// quorum, a leader that replied itself (this node reaches it, so an
    /// election ends with that leader announcing itself to this node again).
    pub(super) fn backing_replies(&self, probe: &Probe) -> usize {
        let without_quorum = self.quorum().is_none();
        probe
            .replied
            .values()
            .filter(|named| {
                named.is_none_or(|leader| {
                    self.would_replace(leader, probe.takeover)
                        || self.connectivity.resigned_leader == Some(leader)
                        || (without_quorum && probe.replied.contains_key(&leader))
                })
            })
            .count()
    }

    /// Whether an election by this node would replace `leader` anyway, so that a
    /// member following it may back the election.
    pub(super) fn would_replace(&self, leader: NodeId, takeover: bool) -> bool {
        leader < self.id && (takeover || self.config.preemption() == Preemption::Always)
    }

    pub(super) fn conclude_probe_if_complete(&mut self, now: Instant) {
        let Some(probe) = &self.connectivity.probe else {
            return;
        };
        let others = self.members.voters() - usize::from(self.members.is_voter(self.id));
        if probe.replied.len() >= others {
            self.timers.stop(Timer::Probe);
            self.conclude_probe(now);
        }
    }

    /// The probe's time is up (or every member replied): decide.
    pub(in crate::node) fn conclude_probe(&mut self, now: Instant) {
        let Some(probe) = self.connectivity.probe.take() else {
            return;
        };
        let own = usize::from(self.members.is_voter(self.id));
        let backing = self.backing_replies(&probe);
        // Without a quorum every member counts as reaching one, and it may stand
        // only if every reply backs it.
        let quorum = self.quorum().unwrap_or(probe.replied.len() + own);
        let reaches_quorum = probe.replied.len() + own >= quorum;
        self.connectivity.verdict = Some(Verdict {
            reaches_quorum,
            at: now,
        });
        self.connectivity.verdict_heard.clear();
        self.connectivity
            .verdict_heard
            .extend(probe.replied.keys().copied());
        let waiting = std::mem::take(&mut self.connectivity.waiting);
        // A replier that leads or stands itself, and that this node would not
        // replace, goes first: it is alive and within reach, and a second
        // election over it would only cost a term.
        let yields = self.quorum().is_some()
            && (probe.replied.iter().any(|(&replier, &named)| {
                named == Some(replier) && !self.would_replace(replier, probe.takeover)
            }) || self.election_under_way_below(&probe));
        let may_stand = reaches_quorum && backing + own >= quorum && !yields;
        let replaceable = self
            .leader
            .is_none_or(|leader| self.would_replace(leader.id, probe.takeover));
        let stands =
            probe.stand && may_stand && replaceable && self.role() == crate::event::Role::Follower;
        let newest_waiting = waiting.values().copied().max();
        if !reaches_quorum {
            for _ in waiting {
                self.drop_input(DropReason::NoQuorum);
            }
        } else if stands {
            // It stands below, in the newest waiting Election's term or above
            // it: its own election answers them (and one input stays within
            // one message per member: answers and an election would be two).
            for _ in waiting {
                self.drop_input(DropReason::Outdated);
            }
        } else {
            self.answer_waiting(now, waiting);
        }
        if self.role() != crate::event::Role::Follower {
            return;
        }
        if !probe.stand {
            if !reaches_quorum {
                // It knows now that it is cut off: it says so until it may probe
                // again (see `known_unconnected`), backing off as a failed stand.
                self.back_off(now, &probe);
            }
            if self.leader.is_none() && !self.timers.is_armed(Timer::LeaderTimeout) {
                // Leaderless and idle: something must move it on.
                self.arm_leader_timeout(now);
            }
            return;
        }
        if stands {
            self.connectivity.failures = 0;
            self.connectivity.quiet_until = None;
            // A claim deferred by this node's own promise, or refused, may try
            // again without a second probe while the first one's word holds.
            let clearance = self
                .timings
                .follower_lease
                .saturating_add(self.timings.answer_timeout.saturating_mul(2));
            self.connectivity.cleared_until = Some(Self::after(now, clearance));
            for &member in &probe.cut_off {
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
                .max(probe.latest_term)
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
        let backoff = self.back_off(now, &probe);
        if self.leader.is_none() {
            let wait = backoff.max(
                self.timings
                    .leader_timeout_at_rank(self.members.rank_below(None)),
            );
            let next_probe = Self::after(now, wait);
            self.timers.set(Timer::LeaderTimeout, next_probe);
            // Until that probe it learns nothing new of its links but from a
            // member it did not hear (`note_heard_from` forgets the verdict
            // then): it keeps saying that it is cut off, in its probe replies,
            // and votes for a lower member's claim rather than probe again
            // against it. Otherwise a lower member connected to a quorum waits
            // an answer timeout for it, and loses its claim's votes to probes
            // that fail as this one did.
            self.connectivity.quiet_until = Some(next_probe);
        }
    }

    /// Whether a lower member stands in a newer term than the probe's: it named
    /// itself, and no other replier named it (a leader's followers would).
    /// Its Election is on its way to this node, which then joins that
    /// election in its term, as classic Bully has it; standing over it would
    /// cost a second term. (A resigning leader's successor and a higher
    /// member whose own leader timeout fired meet this way under the chained
    /// partition with a low hub.)
    ///
    /// docs/protocol.md: R11, the join rule.
    fn election_under_way_below(&self, probe: &Probe) -> bool {
        probe.newer_below.iter().any(|&below| {
            !probe
                .replied
                .iter()
                .any(|(&replier, &named)| replier != below && named == Some(below))
        })
    }

    /// A probe did not let this node stand: it waits before the next, longer
    /// after each failure. Returns the wait.
    ///
    /// docs/protocol.md: R8, the verdict's hold and the back-off.
    pub(super) fn back_off(&mut self, now: Instant, probe: &Probe) -> Duration {
        self.connectivity.failures = (self.connectivity.failures + 1).min(MAX_BACKOFF);
        // A member that follows a lower leader it would replace (it was cut off
        // from a quorum) is the one to take over when the network heals, and
        // nothing but a probe tells it that it has: it asks again every leader
        // timeout. The others back off, up to four leader timeouts, with a
        // quorum.
        // Without a quorum (a probe only after an election of its own failed)
        // the wait stays one leader timeout too: `Config::settle_bound` counts
        // one there, and a probe costs a member's messages only then.
        let backs_off = self.quorum().is_some()
            && !self
                .leader
                .is_some_and(|leader| self.would_replace(leader.id, probe.takeover));
        let doublings = if backs_off {
            (self.connectivity.failures - 1).min(2)
        } else {
            0
        };
        let backoff = self.config.leader_timeout().saturating_mul(1 << doublings);
        self.connectivity.quiet_until = Some(Self::after(now, backoff));
        backoff
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
