//! Membership changes at runtime: adding and removing members, and forgetting
//! everything the node kept about a member that left.
//!
//! A removed member is sent nothing more and its messages are dropped as a
//! non-member's, so any state that would later make this node send to it, wait
//! for it, or count it must go with it: an Election of its that waits for a
//! probe's verdict, its probe reply, a vote deferred for its claim, the
//! modified-Bully collection's best responder, and a ring token it started or
//! holds.
//!
//! What stays, on purpose: the vote this node cast (a vote binds the term, not
//! the member, and one vote per term is what keeps two claims from both
//! winning), a promise not to vote against a removed leader (the leader may still
//! hold a lease in the eyes of members that have not applied the change yet, so
//! the promise runs out on its own), and the highest fencing token accepted (the
//! floor below which nothing is accepted does not depend on who is a member).

use super::{Node, Phase};
use crate::error::CommandError;
use crate::message::NodeId;
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Adds a member at runtime. Every member must apply the same change (and the
    /// new member must start with the full list): a quorum computed from
    /// different views of the membership can be met twice, so make changes while
    /// the cluster is stable, one member at a time, as with any majority-based
    /// protocol without joint consensus.
    pub fn add_member(&mut self, now: Instant, id: NodeId) -> Result<(), CommandError> {
        let _ = self.clock(now);
        if self.members.insert(id) {
            Ok(())
        } else {
            Err(CommandError::AlreadyMember(id))
        }
    }

    /// Removes a member at runtime: it is sent nothing more, and its messages are
    /// dropped as a non-member's. If it was the leader, this node elects as after a
    /// resignation. The caveat of [`add_member`](Node::add_member) applies.
    ///
    /// Refused, changing nothing, if the membership left could not meet the
    /// quorum or would have nobody to stand.
    pub fn remove_member(&mut self, now: Instant, id: NodeId) -> Result<(), CommandError> {
        let now = self.clock(now);
        if id == self.id {
            return Err(CommandError::SelfReference(id));
        }
        if self.members.index_of(id).is_none() {
            return Err(CommandError::UnknownMember(id));
        }
        let remaining: Vec<NodeId> = self
            .members
            .ids()
            .iter()
            .copied()
            .filter(|&m| m != id)
            .collect();
        self.config
            .validate_for(&remaining)
            .map_err(CommandError::Membership)?;
        // Its votes and acknowledgements no longer count toward a claim or a
        // lease.
        self.uncount_acks_of(id);
        self.members.remove(id);
        self.forget_member(id);
        if self.ring.handed_to(id) {
            // The token was last handed to it: pass it on to the next one now.
            self.ring_on_hop_timeout(now);
        }
        if self.phase == Phase::Idle && self.leader.is_some_and(|leader| leader.id == id) {
            self.elect_soon(now, id);
        }
        Ok(())
    }

    /// Drops what this node kept that would make it send to `member`, wait for
    /// it, or count it, once it is no longer a member.
    fn forget_member(&mut self, member: NodeId) {
        self.modified.forget(member);
        if self.votes.drop_deferred_of(member) {
            self.timers.stop(Timer::DeferredVote);
        }
        if self.connectivity.forget(member) {
            // Its Election waited for a probe's verdict: it will not be answered.
            self.drop_input(DropReason::NotMember);
        }
        self.ring.forget(member);
    }
}
