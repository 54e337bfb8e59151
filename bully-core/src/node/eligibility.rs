//! Abstention: a member that may not lead for a while (its work keeps failing
//! here, say) stands aside until a given instant, so that another member leads,
//! and stands again afterwards.
//!
//! While it abstains the node is, for itself, an observer that votes: it never
//! stands, answers no Election (the lower members win without waiting for it),
//! and does not preempt a lower leader; it still follows the leader,
//! acknowledges its heartbeats and votes for claims, so a quorum does not lose
//! its vote. The other members are not told beyond the `Resign` of a leader that
//! abstains: they keep asking it in elections, and wait one answer timeout for
//! the answer it does not send.

use super::{Node, Phase};
use crate::config::Preemption;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Abstains from leading until `until`: a leader steps down first (as
    /// [`step_down`](Node::step_down) does: `Resign` to every member, then
    /// `SteppedDown`), a candidate gives up its election, and until `until` the
    /// node neither stands nor answers Elections nor takes over from a lower
    /// leader; it follows and votes as before.
    ///
    /// When `until` comes the node may stand again: leaderless, it stands at
    /// once; following a lower leader, it takes over as a returning higher
    /// member does under [`Preemption::Always`] (under `AfterStable` its stable
    /// period starts then; under `Never` it keeps following). A later call
    /// replaces the instant, earlier or later; an `until` not after `now` ends
    /// the abstention now. Abstention is not part of
    /// [`DurableState`](crate::DurableState): a restarted node may stand.
    ///
    /// Returns whether the node stepped down.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Node, NodeId, Role};
    ///
    /// let mut node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let now = Instant::now();
    /// node.start(now);
    /// assert_eq!(node.role(), Role::Leader);
    /// let until = now + Duration::from_secs(10);
    /// assert!(node.abstain_until(now, until), "it stepped down");
    /// assert_eq!(node.abstaining_until(), Some(until));
    /// // Alone and leaderless, it does not stand before `until`...
    /// while let Some(at) = node.poll_timeout().filter(|&at| at < until) {
    ///     node.handle_timeout(at);
    ///     assert_ne!(node.role(), Role::Leader);
    /// }
    /// // ... and stands when it comes.
    /// node.handle_timeout(until);
    /// assert_eq!(node.abstaining_until(), None);
    /// assert_eq!(node.role(), Role::Leader);
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    ///
    /// docs/protocol.md: R29, abstention.
    pub fn abstain_until(&mut self, now: Instant, until: Instant) -> bool {
        let now = self.clock(now);
        if until <= now {
            if self.timers.is_armed(Timer::Abstain) {
                self.timers.stop(Timer::Abstain);
                self.on_abstention_end(now);
            }
            return false;
        }
        let stepped_down = self.step_down(now);
        if matches!(
            self.phase,
            Phase::Electing { .. } | Phase::AwaitingCoordinator { .. } | Phase::Claiming { .. }
        ) {
            self.leave_role();
            self.arm_leader_timeout(now);
        }
        self.connectivity.forgo_standing();
        // `AfterStable`: the period restarts when the abstention ends.
        self.timers.stop(Timer::Stable);
        self.members.set_own_abstention(true);
        self.timers.set(Timer::Abstain, until);
        stepped_down
    }

    /// The instant this node's abstention ends, while it abstains
    /// ([`abstain_until`](Node::abstain_until)).
    pub fn abstaining_until(&self) -> Option<Instant> {
        self.timers.deadline(Timer::Abstain)
    }

    /// The abstention is over: the node may stand, and does if nobody leads or
    /// if it would have taken over from the lower leader it follows.
    pub(super) fn on_abstention_end(&mut self, now: Instant) {
        self.members.set_own_abstention(false);
        let waiting = self.phase != Phase::Idle
            || self.pending_election.is_some()
            || self.timers.is_armed(Timer::Coordinator);
        if waiting || !self.members.is_candidate(self.id) {
            return;
        }
        match self.leader {
            None => self.stand(now),
            Some(leader) if leader.id < self.id => match self.config.preemption() {
                Preemption::Always => self.stand(now),
                Preemption::AfterStable(period) => {
                    self.timers.set(Timer::Stable, Self::after(now, period));
                }
                Preemption::Never => {}
            },
            Some(_) => {}
        }
    }
}
