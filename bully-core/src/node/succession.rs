//! A leader leaving its leadership (yielding to a claim, giving way to a
//! newer election: R17), the `Resign` it owes after its hold (G8, G9), and who
//! elects first after it resigns (R21).
//!
//! **Who elects first.**
//!
//! A `Resign` makes the followers elect after the staggered part of their leader
//! timeout only, the highest first, so that it asks first and the others hear
//! its result before their own turn. That order assumes the highest member can
//! lead. Under a partial partition it often cannot: when a leader's lease runs
//! out because every member but a hub stopped acknowledging it (Omni-Paxos's
//! "quorum-loss" partition), the members above the hub are cut off from the
//! leader and, most likely, from each other; each finds that out only by a
//! probe at its own staggered time, and the hub, lowest of all, waits for the
//! last of them before it stands. With a majority at Omni-Paxos's heartbeat
//! traffic that was 500 ms to a stable leader where BLE needs 310 ms.
//!
//! The resigning leader knows more than any follower: whose acknowledgements
//! were still reaching it. It names the highest of those in its `Resign`
//! (`successor`), and that member elects at once. The others keep their
//! stagger, so nothing changes where everyone still reaches the leader (the
//! highest member is then the one named, and it elected first anyway), and a
//! resignation still costs one probe and one election, not one per member.
//! The successor's election asks the members above it, whose probes (started
//! by its Election, or by their own timeouts) tell them they cannot lead; it
//! is a hint about timing only: the probe, the votes and the leases decide
//! who leads, exactly as before. A leader that yields to another member's
//! claim names nobody: the claimant elects already.
//!
//! The ring names nobody. Its token passes from member to member and skips a
//! cut link only after an answer timeout, unless the member beyond it already
//! knows it is cut off (a fresh probe said so) and keeps itself off the
//! token's list. The stagger gives the members above the hub the time to
//! learn that; a token the hub sends at once meets each of them still
//! undecided, and the elections they start on their own timeouts cross it
//! (quorum-loss with the hub lowest, at the default timings: 2.5 s to a stable
//! leader and terms up by 3, where the stagger takes 0.75 s at the median and
//! terms up by 2 at most).

use super::{Node, Phase};
use crate::message::{Message, NodeId, Term};
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// The member this node's `Resign` names to elect first (with a quorum):
    /// the highest candidate other than itself that acknowledged every
    /// heartbeat round sent a round trip or more before now (a member that
    /// still hears the leader has; one cut off stopped at the cut); with no
    /// round that old yet, the highest candidate that acknowledged any. `None`
    /// without a quorum, under the ring, or when no member acknowledged a
    /// round of its last leadership.
    ///
    /// docs/protocol.md: R21, the successor named in a resignation.
    pub(super) fn successor(&self) -> Option<NodeId> {
        if self.handing_over_to.is_some() {
            // R33: a hand-over names its member, with or without a quorum.
            return self.handing_over_to;
        }
        self.quorum()?;
        if !self.names_successor() {
            return None;
        }
        // Every caller took `now` through `Node::clock`, which recorded it.
        let due = self.latest.map_or(0, |now| self.round_due_by(now)).max(1);
        self.members.highest_candidate_acknowledging(self.id, due)
    }

    /// `Resign` of `term` to every other member, naming the
    /// [`successor`](Node::successor): a leadership, or the start's
    /// announcement of one, is over.
    pub(super) fn broadcast_resign(&mut self, term: Term) {
        let successor = self.successor();
        self.handing_over_to = None;
        self.send_resign_to_all(term, successor);
    }

    /// `Resign` of `term`, naming `successor`, to every other member.
    pub(super) fn send_resign_to_all(&mut self, term: Term, successor: Option<NodeId>) {
        for index in 0..self.members.len() {
            let to = self.members.ids()[index];
            if to != self.id {
                self.send(to, Message::Resign { term, successor });
            }
        }
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
    pub(super) fn yield_to(&mut self, now: Instant, claimant: NodeId) {
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
            // A hand-over it had asked for is overtaken by that claim.
            self.handing_over_to = None;
            self.send_resign_to_all(led, None);
        }
    }

    /// The live member above `to` (not this node) that would win the
    /// election a hand-over to `to` starts, if any.
    ///
    /// docs/protocol.md: R33, a planned hand-over.
    pub(super) fn outranking(&self, to: NodeId) -> Option<NodeId> {
        self.highest_live_other().filter(|&id| id > to)
    }

    /// The highest live candidate other than this node, the one a hand-over
    /// to nobody in particular leaves the work to (see
    /// [`is_live_other`](Node::is_live_other)).
    pub(super) fn highest_live_other(&self) -> Option<NodeId> {
        self.members
            .ids()
            .iter()
            .rev()
            .copied()
            .find(|&id| id != self.id && self.members.is_candidate(id) && self.is_live_other(id))
    }

    /// Whether `id`, another member, is live as far as this leader knows:
    /// with a quorum, it acknowledged this leadership's rounds sent a round
    /// trip or more ago, or any of its requests while none is that old (it
    /// hears the leader, so it hears the election); without one, it is not
    /// suspected nor resigned.
    pub(super) fn is_live_other(&self, id: NodeId) -> bool {
        if self.quorum().is_some() {
            // Request 0 when no round is a round trip old yet: any
            // acknowledgement of this leadership (its votes) counts.
            let due = self.latest.map_or(0, |now| self.round_due_by(now));
            self.members
                .acked_round(id)
                .is_some_and(|acked| acked >= due)
        } else {
            self.members.is_live_candidate(id)
        }
    }
}
