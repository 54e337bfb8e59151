//! The quorum gate (`Config::with_quorum`): its size, and where the node
//! consults its word (`votes.rs`) with the configuration's delays: the hold,
//! its early end, and coming back. Claims are `claim.rs`, acknowledgements and
//! the lease `lease.rs`.
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

use super::Node;
use crate::message::NodeId;

impl Node {
    /// The number of members, this node included, that must stand behind a leader.
    pub(super) fn quorum(&self) -> Option<usize> {
        self.config.quorum().size(self.members.voters())
    }

    /// Whether a promise to another leader (or, after a start, to nobody) forbids
    /// voting for `candidate` now, and until when.
    ///
    /// The rule is G5 (`Votes::promised_elsewhere`).
    pub(super) fn promised_elsewhere(&self, now: Instant, candidate: NodeId) -> Option<Instant> {
        self.votes.promised_elsewhere(now, candidate, self.id)
    }

    /// Until when a promise to nobody after coming back forbids every vote,
    /// if it runs.
    pub(super) fn promised_to_nobody(&self, now: Instant) -> Option<Instant> {
        self.votes.promised_to_nobody(now)
    }

    /// A leadership of this node's own ended at `now`. With a resign delay it
    /// votes for no other member for that long, or until the caller says the
    /// work stopped ([`Node::work_stopped`]): a vote could let another member's
    /// leadership begin while the work of this one may still be stopping. Whatever ended it (a higher claim, a higher leader, a
    /// lease that ran out, a step-down), the delay is the time the work is
    /// given to stop.
    ///
    /// The hold itself is G9 (`Votes::hold`); this says how long.
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

    /// It came back (its first input, or its start) and may have forgotten a
    /// promise: vote for nobody, itself included, until any promise made
    /// before has certainly run out.
    ///
    /// The rule is G10 (`Votes::forget_promises`); this says how long.
    pub(super) fn forget_promises(&mut self, now: Instant) {
        if self.quorum().is_some() {
            self.votes
                .forget_promises(Self::after(now, self.timings.follower_lease));
        }
    }
}
