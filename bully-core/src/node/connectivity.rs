//! Connectivity (with a quorum): a member stands only if it reaches a quorum, and
//! only if that quorum has lost its leader too.
//!
//! The sources of the algorithm assume every member reaches every other. Under a partial partition
//! (one link or one direction cut, a hub, a chain) that breaks Bully twice over:
//! a higher member that cannot reach a quorum still answers a lower one's
//! Election and parks it, and a member that lost only its own link to the leader
//! starts elections in ever newer terms that pull the whole cluster after it.
//!
//! The remedy is Omni-Paxos's (only quorum-connected servers stand) and raft's
//! pre-vote (a member that would not win raises no term), paid for only when a
//! member is about to stand, never in the steady state:
//!
//! - **Probe before standing.** Where a member would start an election of its own
//!   (its leader timeout, a start, a lower leader it would preempt, a failed
//!   election's retry) it first sends `Probe` to every member, in its current
//!   term, and waits one answer timeout. Every member replies with the leader it
//!   heard within the last leader timeout. The member **reaches a quorum** if
//!   the replies and itself make one (a reply proves both directions work). It
//!   **may stand** if a quorum, itself included, names no leader, or (under
//!   `Preemption::Always`) only leaders below it. Otherwise it stays a follower,
//!   moves no term, and probes again later, backing off up to four leader
//!   timeouts.
//! - **Answer only if it could lead.** A member answers a lower member's
//!   Election (which tells that member to wait) only if it reaches a quorum: as
//!   the leader, while its lease runs; otherwise by a probe at most one leader
//!   timeout old. Without one it probes first and answers when the probe says so;
//!   the lower member waits a round trip longer for answers under a quorum. A
//!   member that does not reach a quorum drops the Election (`NoQuorum`), so the
//!   lower member wins if it can.
//! - **Do not hold a lower leader back.** A member that does not reach a quorum
//!   follows (and votes for) a lower leader instead of preempting it.
//!
//! - **Lead above a member that cannot follow.** A probe changes nothing at
//!   the members it reaches, except at a leader probed by a voter in a later
//!   term than its leadership that does not acknowledge its heartbeats: that
//!   member may have accepted a higher token than this leadership's (the
//!   leader restarted without its state), which it will never follow, so the
//!   leader leads again in a term above the probe's.
//!
//! So the highest member that reaches a quorum leads: a higher one that cannot
//! neither answers nor preempts, a lower one is answered by it, and nobody who
//! cannot win moves a term.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::event::FencingToken;
use crate::message::{NodeId, Term};
use crate::time::Instant;

#[cfg(test)]
mod tests;
mod verdict;

pub(super) use verdict::Standing;

/// The most a member backs off between failed probes, in leader timeouts.
const MAX_BACKOFF: u32 = 4;

/// A probe under way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Probe {
    /// The term it was sent in: replies of another term are late.
    term: Term,
    /// Whether the prober means to stand if it may (else it only wants to know
    /// whether it reaches a quorum, to answer the Elections waiting below).
    stand: bool,
    /// Whether it stands to take over from a lower leader (`AfterStable`'s
    /// period ran out), so that followers of lower leaders back it.
    takeover: bool,
    /// The latest term a reply carried.
    latest_term: Term,
    /// Repliers that said they do not reach a quorum.
    cut_off: Vec<NodeId>,
    /// Lower members that named themselves in a newer term than the probe's:
    /// each leads, or stands (then its Election is on its way).
    newer_below: Vec<NodeId>,
    /// Voters that replied, with the leader each named.
    replied: BTreeMap<NodeId, Option<NodeId>>,
    /// Whether the leader this node followed resigned while the probe was
    /// out: its reply may have been sent before the resignation.
    sent_before_resign: bool,
}

/// What a probe found, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Verdict {
    reaches_quorum: bool,
    at: Instant,
}

/// This node's knowledge of its own connectivity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Connectivity {
    probe: Option<Probe>,
    verdict: Option<Verdict>,
    /// The voters that replied to the probe behind the verdict, ascending:
    /// hearing from another is news that may change it.
    verdict_heard: Vec<NodeId>,
    /// When this node last heard the leader it follows.
    leader_heard_at: Option<Instant>,
    /// Probes in a row that did not let it stand.
    failures: u32,
    /// No new probe to stand before this instant (the back-off).
    quiet_until: Option<Instant>,
    /// Elections from lower members waiting for the probe's verdict, by sender.
    waiting: BTreeMap<NodeId, Term>,
    /// The leader that told this node it resigned (or that its lease ran out),
    /// until it accepts another: members that have not heard yet still name it.
    resigned_leader: Option<NodeId>,
    /// The lower leadership it last probed about taking over.
    probed_against: Option<FencingToken>,
    /// A probe let it stand: until then it may stand again without probing.
    cleared_until: Option<Instant>,
    /// Without a quorum: an election of its own ended with no leader (it was
    /// answered, and no Coordinator came), which in a fully connected network
    /// takes a crash mid-election and under a partial partition happens every
    /// time; until it follows a leader again it probes before it stands.
    election_failed: bool,
    /// It set out to take over from a lower leader (`AfterStable`), and keeps
    /// to it until it leads: the retries after a refused claim take over too.
    taking_over: bool,
    /// With a quorum, a leader timeout from its start: until then a probe to
    /// stand that found no quorum is asked again an answer timeout later
    /// instead of backing off (`Node::note_started`).
    start_retries_until: Option<Instant>,
}

impl Connectivity {
    /// `member` left the cluster: its probe reply no longer counts and its
    /// Election waiting for the verdict is dropped (`true` if one waited).
    pub(super) fn forget(&mut self, member: NodeId) -> bool {
        if let Some(probe) = self.probe.as_mut() {
            probe.replied.remove(&member);
            probe.cut_off.retain(|&id| id != member);
        }
        if self.resigned_leader == Some(member) {
            self.resigned_leader = None;
        }
        self.waiting.remove(&member).is_some()
    }

    /// Whether it set out to take over from a lower leader and does not lead
    /// yet (R30).
    pub(super) fn is_taking_over(&self) -> bool {
        self.taking_over
    }

    /// It sets out to take over from the lower leader it follows
    /// (`Preemption::AfterStable`): its retries after a refused claim take
    /// over too, until it leads.
    pub(super) fn set_out_to_take_over(&mut self) {
        self.taking_over = true;
    }

    /// It starts (`Node::start`): with a quorum, until `retries_until` (a
    /// leader timeout on) a probe to stand that found no quorum is asked
    /// again an answer timeout later. Processes started together by hand or
    /// by a deploy tool come up some milliseconds apart, and a probe sent
    /// before the others listen is lost: the highest would conclude that it
    /// reaches no quorum and back off for a leader timeout, and a lower
    /// member, whose staggered start waits only two answer timeouts, would
    /// lead first, only to be taken over.
    ///
    /// docs/protocol.md: R4, the start's quick re-probe.
    pub(super) fn started(&mut self, retries_until: Option<Instant>) {
        self.start_retries_until = retries_until;
    }

    /// The leader it followed resigned.
    pub(super) fn leader_resigned(&mut self, leader: NodeId) {
        self.resigned_leader = Some(leader);
        if let Some(probe) = self.probe.as_mut() {
            probe.sent_before_resign = true;
        }
    }

    /// It votes for a claim of `claimant`'s made after `claimant` told it it
    /// resigned: a new leadership, whose heartbeats are not stale. (With A3
    /// broken, a leader restarted without its state can lead the very token
    /// it resigned; the members that heard the resignation would otherwise
    /// never follow it.)
    ///
    /// Part of R21 (`succession.rs`).
    pub(super) fn claim_voted(&mut self, claimant: NodeId) {
        if self.resigned_leader == Some(claimant) {
            self.resigned_leader = None;
        }
    }

    /// Whether `leader` told this node it resigned, and no leader was accepted
    /// since: a heartbeat of that leadership arriving now was sent before the
    /// resignation (links may reorder), and is stale.
    pub(super) fn heard_resign_from(&self, leader: NodeId) -> bool {
        self.resigned_leader == Some(leader)
    }

    /// Node `own` accepted `leader`: whatever it had concluded about standing
    /// is over, and a takeover of a lower leader too if the leader is above it.
    pub(super) fn leader_accepted(&mut self, leader: NodeId, own: NodeId) {
        if leader > own {
            self.taking_over = false;
        }
        self.resigned_leader = None;
        self.election_failed = false;
        self.cleared_until = None;
        self.failures = 0;
        self.quiet_until = None;
    }

    /// Without a quorum: its election ended with no leader; the next stand
    /// probes first.
    pub(super) fn election_failed(&mut self) {
        self.election_failed = true;
    }

    /// Without a quorum: whether an election of its own came to nothing since
    /// it last followed a leader, so that it probes before it stands.
    pub(super) fn probes_before_standing(&self) -> bool {
        self.election_failed
    }

    /// It leads: any takeover it set out on is done.
    pub(super) fn leading(&mut self) {
        self.taking_over = false;
    }

    /// Records that it probes about the lower leadership `token`; whether that
    /// is news (it had not probed about it since its last leader).
    pub(super) fn probed_against(&mut self, token: FencingToken) -> bool {
        let news = self.probed_against != Some(token);
        self.probed_against = Some(token);
        news
    }

    /// Whether a probe let it stand recently enough that it may stand again
    /// without probing.
    pub(super) fn is_cleared(&self, now: Instant) -> bool {
        self.cleared_until.is_some_and(|until| now < until)
    }

    /// Whether a probe is under way.
    pub(super) fn probing(&self) -> bool {
        self.probe.is_some()
    }

    /// Whether it may start a probe to stand now (not while one runs, nor
    /// while it backs off after failed ones).
    #[inline]
    pub(super) fn may_probe(&self, now: Instant) -> bool {
        self.probe.is_none() && self.quiet_until.is_none_or(|until| now >= until)
    }

    /// The leader it follows was heard from.
    #[inline]
    pub(super) fn leader_heard(&mut self, now: Instant) {
        self.leader_heard_at = Some(now);
    }

    /// The lease ran out: it does not reach a quorum now; `acknowledging`,
    /// the members that still acknowledged it, are those it heard.
    pub(super) fn quorum_lost(
        &mut self,
        now: Instant,
        acknowledging: impl Iterator<Item = NodeId>,
    ) {
        self.verdict = Some(Verdict {
            reaches_quorum: false,
            at: now,
        });
        self.verdict_heard.clear();
        self.verdict_heard.extend(acknowledging);
    }

    /// A message from `from` (`is_voter` says whether it votes: asked only
    /// when it matters, since a lookup in the membership on every message
    /// would cost the steady state). If it holds that it does not
    /// reach a quorum and `from` is a voter it did not hear when it concluded
    /// that, the conclusion may be out of date (a member joined or came back,
    /// a link healed): it forgets it, and its back-off, and probes when it
    /// next needs to know. A member cut off from all but a few keeps hearing
    /// only those, and keeps its verdict.
    ///
    /// Part of R8 (`back_off`).
    #[inline]
    pub(super) fn heard_from(&mut self, from: NodeId, is_voter: impl FnOnce(NodeId) -> bool) {
        let Some(verdict) = self.verdict else {
            return;
        };
        if verdict.reaches_quorum
            || !is_voter(from)
            || self.verdict_heard.binary_search(&from).is_ok()
        {
            return;
        }
        self.verdict = None;
        self.verdict_heard.clear();
        self.quiet_until = None;
        self.failures = 0;
    }

    /// Whether a fresh probe found that it does not reach a quorum: the
    /// verdict holds `leader_timeout`, or while it backs off before probing
    /// again (it will not learn otherwise before then), so a member cut off
    /// from a quorum keeps saying so, and a ring keeps it off its active list.
    pub(super) fn known_unconnected(&self, now: Instant, leader_timeout: Duration) -> bool {
        self.verdict.is_some_and(|verdict| {
            let fresh = now < verdict.at.checked_add(leader_timeout).unwrap_or(verdict.at);
            let backing_off = self
                .quiet_until
                .is_some_and(|until| verdict.at < until && now < until);
            !verdict.reaches_quorum && (fresh || backing_off)
        })
    }

    /// Whether a probe to stand that found no quorum is asked again an answer
    /// timeout later, not after a back-off (`started`): only in the start's
    /// first leader timeout, and only while it follows nobody (`following`).
    pub(super) fn retries_start_probe(&self, now: Instant, following: bool) -> bool {
        !following && self.start_retries_until.is_some_and(|until| now < until)
    }

    /// It abstains (`Node::abstain_until`): a probe under way only learns, and
    /// no earlier probe's clearance or takeover carries over to after the
    /// abstention.
    pub(super) fn forgo_standing(&mut self) {
        if let Some(probe) = &mut self.probe {
            probe.stand = false;
            probe.takeover = false;
        }
        self.cleared_until = None;
        self.taking_over = false;
    }
}

/// What a member without a fresh verdict does with an Election it might answer.
pub(super) enum Backing {
    /// It reaches a quorum: answer as the algorithm says.
    Answer,
    /// It does not: drop the Election.
    Refuse,
    /// Unknown: the Election waits for a probe.
    Wait,
}
