//! Who elects first after a leader resigns.
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

use super::Node;
use crate::message::{Message, NodeId, Term};

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
        self.quorum()?;
        if !self.names_successor() {
            return None;
        }
        // Every caller took `now` through `Node::clock`, which recorded it.
        let due = self.latest.map_or(0, |now| self.round_due_by(now)).max(1);
        self.members.ids().iter().rev().copied().find(|&id| {
            id != self.id
                && self.members.is_candidate(id)
                && self
                    .members
                    .acked_round(id)
                    .is_some_and(|acked| acked >= due)
        })
    }

    /// `Resign` of `term` to every other member, naming the
    /// [`successor`](Node::successor): a leadership, or the start's
    /// announcement of one, is over.
    pub(super) fn broadcast_resign(&mut self, term: Term) {
        let successor = self.successor();
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
}
