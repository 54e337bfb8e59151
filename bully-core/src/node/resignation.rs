//! A leader leaving its leadership for another member: yielding to a claim,
//! giving way to a newer election (R17), and the `Resign` it owes, sent after
//! its hold (G8, G9).

use super::{Node, Phase};
use crate::message::NodeId;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
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
            self.send_resign_to_all(led, None);
        }
    }
}
