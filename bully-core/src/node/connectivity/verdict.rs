//! The probe's own bookkeeping, owned by [`Connectivity`]: opening a probe,
//! recording its replies, what they conclude, and the back-off after a probe
//! that did not let the member stand (docs/protocol.md, R5, R6, R8, R11). The
//! node acts on the [`Conclusion`] (`node/probe.rs`): it answers or drops the
//! Elections that waited, stands, or waits.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Connectivity, MAX_BACKOFF, Probe, Verdict};
use crate::message::{NodeId, Term};
use crate::time::Instant;

/// What a probe's decisions read of the node.
#[derive(Clone, Copy, Debug)]
pub(in crate::node) struct Standing {
    /// The prober.
    pub(in crate::node) own: NodeId,
    /// The quorum, if the cluster has one.
    pub(in crate::node) quorum: Option<usize>,
    /// 1 if the prober votes, else 0: its own vote counts toward the quorum.
    pub(in crate::node) own_vote: usize,
    /// `Preemption::Always`: a higher member replaces a lower leader.
    pub(in crate::node) preempts: bool,
}

impl Standing {
    /// Whether an election by the prober would replace `leader` anyway, so
    /// that a member following it may back the election.
    pub(in crate::node) fn would_replace(&self, leader: NodeId, takeover: bool) -> bool {
        leader < self.own && (takeover || self.preempts)
    }
}

/// What a concluded probe found, for the node to act on.
#[derive(Debug)]
pub(in crate::node) struct Conclusion {
    /// The replies and the prober make a quorum.
    pub(in crate::node) reaches_quorum: bool,
    /// The prober meant to stand (else it only wanted to know its reach).
    pub(in crate::node) meant_to_stand: bool,
    /// It stands: it meant to, may, and nothing it would not replace leads.
    pub(in crate::node) stands: bool,
    /// It stood to take over from a lower leader.
    pub(in crate::node) takeover: bool,
    /// Lower members' Elections that waited for the verdict, by sender.
    pub(in crate::node) waiting: BTreeMap<NodeId, Term>,
    /// Repliers that said they do not reach a quorum.
    pub(in crate::node) cut_off: Vec<NodeId>,
    /// The latest term a reply carried.
    pub(in crate::node) latest_term: Term,
}

impl Connectivity {
    /// Opens a probe in `term`, meaning to stand if `stand`; a probe under way
    /// takes on the purposes of a later request instead. Returns whether a new
    /// probe was opened (and must be sent).
    ///
    /// R5 decides when (`node/standing.rs`).
    pub(in crate::node) fn open_probe(&mut self, term: Term, stand: bool) -> bool {
        if let Some(probe) = self.probe.as_mut() {
            probe.stand |= stand;
            probe.takeover |= self.taking_over;
            return false;
        }
        self.probe = Some(Probe {
            term,
            stand,
            takeover: self.taking_over,
            latest_term: term,
            cut_off: Vec::new(),
            newer_below: Vec::new(),
            replied: BTreeMap::new(),
            sent_before_resign: false,
        });
        true
    }

    /// How many replies the probe under way has, if one is.
    pub(in crate::node) fn replies(&self) -> Option<usize> {
        self.probe.as_ref().map(|probe| probe.replied.len())
    }

    /// `from` (a voter if `voter`) replied in `term`, naming `leader`, and
    /// saying whether it is `cut_off` from a quorum; `own` is the prober.
    /// Returns `false` for a reply that counts for nothing: no probe, an older
    /// term's, a non-voter's, or a second one.
    pub(in crate::node) fn record_reply(
        &mut self,
        (from, voter): (NodeId, bool),
        term: Term,
        (leader, cut_off): (Option<NodeId>, bool),
        own: NodeId,
    ) -> bool {
        let Some(probe) = self.probe.as_mut() else {
            return false;
        };
        if term < probe.term || !voter || probe.replied.contains_key(&from) {
            return false;
        }
        probe.replied.insert(from, leader);
        if leader == Some(from) && !probe.sent_before_resign && self.resigned_leader == Some(from) {
            // The leader that resigned answers a probe sent after its
            // resignation naming itself: it leads again (with A3 broken, a
            // leader restarted without its state can lead the very term it
            // resigned, and claims nothing this member would vote for anew).
            // Its heartbeats are news, not stale (R21).
            self.resigned_leader = None;
        }
        if leader == Some(from) && from < own && term > probe.term {
            probe.newer_below.push(from);
        }
        if cut_off {
            probe.cut_off.push(from);
        }
        probe.latest_term = probe.latest_term.max(term);
        true
    }

    /// The probe's time is up (or every voter replied): its verdict, kept
    /// for a leader timeout, and whether the prober stands. `leader` is the
    /// leader it follows; `follower`: it is idle (it stands only then).
    ///
    /// R6 (`Node::heard_leader`) and R11 (`election_under_way_below`) decide
    /// whether it yields.
    pub(in crate::node) fn conclude(
        &mut self,
        now: Instant,
        standing: &Standing,
        leader: Option<NodeId>,
        follower: bool,
    ) -> Option<Conclusion> {
        let probe = self.probe.take()?;
        let own = standing.own_vote;
        let backing = self.backing_replies(&probe, standing);
        // Without a quorum every member counts as reaching one, and it may stand
        // only if every reply backs it.
        let quorum = standing.quorum.unwrap_or(probe.replied.len() + own);
        let reaches_quorum = probe.replied.len() + own >= quorum;
        self.verdict = Some(Verdict {
            reaches_quorum,
            at: now,
        });
        self.verdict_heard.clear();
        self.verdict_heard.extend(probe.replied.keys().copied());
        // A replier that leads or stands itself, and that this node would not
        // replace, goes first: it is alive and within reach, and a second
        // election over it would only cost a term.
        let yields = standing.quorum.is_some()
            && (probe.replied.iter().any(|(&replier, &named)| {
                named == Some(replier) && !standing.would_replace(replier, probe.takeover)
            }) || election_under_way_below(&probe));
        let may_stand = reaches_quorum && backing + own >= quorum && !yields;
        let replaceable =
            leader.is_none_or(|leader| standing.would_replace(leader, probe.takeover));
        Some(Conclusion {
            reaches_quorum,
            meant_to_stand: probe.stand,
            stands: probe.stand && may_stand && replaceable && follower,
            takeover: probe.takeover,
            waiting: std::mem::take(&mut self.waiting),
            cut_off: probe.cut_off,
            latest_term: probe.latest_term,
        })
    }

    /// How many of the probe's replies back an election by this node: those
    /// that name no leader; a leader it would replace anyway; a leader that told
    /// this node it resigned (the replier has not heard yet); and, without a
    /// quorum, a leader that replied itself (this node reaches it, so an
    /// election ends with that leader announcing itself to this node again).
    fn backing_replies(&self, probe: &Probe, standing: &Standing) -> usize {
        let without_quorum = standing.quorum.is_none();
        probe
            .replied
            .values()
            .filter(|named| {
                named.is_none_or(|leader| {
                    standing.would_replace(leader, probe.takeover)
                        || self.resigned_leader == Some(leader)
                        || (without_quorum && probe.replied.contains_key(&leader))
                })
            })
            .count()
    }

    /// A probe did not let this node stand: it waits before the next, longer
    /// after each failure, and returns the wait. `leader`: the leader it
    /// follows now; `takeover`: the probe was to take over.
    ///
    /// docs/protocol.md: R8, the verdict's hold and the back-off.
    pub(in crate::node) fn back_off(
        &mut self,
        now: Instant,
        standing: &Standing,
        (leader, takeover): (Option<NodeId>, bool),
        leader_timeout: Duration,
    ) -> Duration {
        self.failures = (self.failures + 1).min(MAX_BACKOFF);
        // A member that follows a lower leader it would replace (it was cut off
        // from a quorum) is the one to take over when the network heals, and
        // nothing but a probe tells it that it has: it asks again every leader
        // timeout. The others back off, up to four leader timeouts, with a
        // quorum.
        // Without a quorum (a probe only after an election of its own failed)
        // the wait stays one leader timeout too: `Config::settle_bound` counts
        // one there, and a probe costs a member's messages only then.
        let backs_off = standing.quorum.is_some()
            && !leader.is_some_and(|leader| standing.would_replace(leader, takeover));
        let doublings = if backs_off {
            (self.failures - 1).min(2)
        } else {
            0
        };
        let backoff = leader_timeout.saturating_mul(1 << doublings);
        self.quiet_until = Some(now.checked_add(backoff).unwrap_or(now));
        backoff
    }

    /// A probe let it stand: its failures are forgotten, and it may stand again
    /// without probing until `cleared_until`.
    pub(in crate::node) fn stood(&mut self, cleared_until: Instant) {
        self.failures = 0;
        self.quiet_until = None;
        self.cleared_until = Some(cleared_until);
    }

    /// Until `next_probe` it learns nothing new of its links but from a member
    /// it did not hear (`heard_from` forgets the verdict then): it keeps saying
    /// that it is cut off, and does not probe to stand.
    pub(in crate::node) fn keep_quiet_until(&mut self, next_probe: Instant) {
        self.quiet_until = Some(next_probe);
    }

    /// When it last heard the leader it follows.
    pub(in crate::node) fn leader_heard_at(&self) -> Option<Instant> {
        self.leader_heard_at
    }

    /// A lower member's Election of `term`, asked with no fresh verdict:
    /// `Some(reaches_quorum)` from a verdict newer than `leader_timeout`, or
    /// `None` after recording the Election to answer when a probe concludes.
    ///
    /// R7 decides what the answer does (`Node::backing`).
    pub(in crate::node) fn backs(
        &mut self,
        now: Instant,
        leader_timeout: Duration,
        (from, term): (NodeId, Term),
    ) -> Option<bool> {
        match self.verdict {
            Some(verdict) if now < verdict.at.checked_add(leader_timeout).unwrap_or(verdict.at) => {
                Some(verdict.reaches_quorum)
            }
            _ => {
                self.waiting.insert(from, term);
                None
            }
        }
    }
}

/// Whether a lower member stands in a newer term than the probe's: it named
/// itself, and no other replier named it (a leader's followers would). Its
/// Election is on its way to this node, which then joins that election in its
/// term, as classic Bully has it; standing over it would cost a second term.
/// (A resigning leader's successor and a higher member whose own leader
/// timeout fired meet this way under the chained partition with a low hub.)
///
/// docs/protocol.md: R11, the join rule.
fn election_under_way_below(probe: &Probe) -> bool {
    probe.newer_below.iter().any(|&below| {
        !probe
            .replied
            .iter()
            .any(|(&replier, &named)| replier != below && named == Some(below))
    })
}
