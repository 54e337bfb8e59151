//! What the node's leadership allows: until when it is exclusive (the lease,
//! G6 and G7), the permit to do the leader's work (G9: it ends a resign delay
//! before the lease at least), and the safety core's state that the
//! invariants read.

use std::time::Duration;

use super::Node;
use crate::config::Quorum;
use crate::driver::WorkPermit;
use crate::event::Role;
use crate::time::Instant;

impl Node {
    /// Until when this node's own leadership is guaranteed exclusive: with a quorum
    /// gate, while it leads, the end of its lease (dated from the send time of the
    /// latest claim or heartbeat round a quorum acknowledged, shortened by the clock
    /// drift margin of [`Config::leader_lease`](crate::Config::leader_lease)). No other member can be elected
    /// before this instant, so work that only the leader may do is safe until then;
    /// stop it earlier, by at least the time the work needs to notice.
    ///
    /// `None` when this node does not lead, and always without a quorum: the Bully
    /// algorithm of the sources promises nothing about exclusivity, and two members can lead at
    /// once on the two sides of a partition.
    ///
    /// Each acknowledged round moves it later; if it passes without renewal the
    /// node emits [`Event::LeaseExpired`](crate::Event::LeaseExpired) and steps down.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Message, Node, NodeId, Quorum};
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let mut node = Node::new(NodeId(3), [NodeId(1), NodeId(2), NodeId(3)], config.clone())?;
    /// let now = Instant::now();
    /// node.start(now);
    /// // After a start it votes for nobody (itself included) for a follower
    /// // lease, and stands only then.
    /// assert!(node.poll_transmit().is_none());
    /// let later = now + config.follower_lease() + Duration::from_millis(1);
    /// node.handle_timeout(later);
    /// // It probes before it stands: 1 and 2 reply that they follow nobody.
    /// let probe = node.poll_transmit().unwrap().message;
    /// let reply = Message::ProbeReply { term: probe.term(), leader: None, cut_off: false };
    /// node.handle_message(later, NodeId(1), reply.clone());
    /// node.handle_message(later, NodeId(2), reply);
    /// while let Some(transmit) = node.poll_transmit() {
    ///     // Member 2 votes for the claim: with 3's own vote, a majority.
    ///     if transmit.to == NodeId(2) {
    ///         if let Message::Coordinator { term, round } = transmit.message {
    ///             // The vote names the ask it answers.
    ///             node.handle_message(later, NodeId(2), Message::Ack { term, round });
    ///         }
    ///     }
    /// }
    /// let until = node.exclusive_until().expect("it leads with a quorum");
    /// assert!(until <= later + config.leader_lease());
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn exclusive_until(&self) -> Option<Instant> {
        self.leadership_term()?;
        self.quorum()?;
        self.requests.lease_until()
    }

    /// Whether this node may do work only the leader may do at `now`, stopping
    /// `margin` before its lease runs out: a [`WorkPermit`], the fencing token to
    /// do it under and the instant the permission ends unless a quorum renews the lease (`None`
    /// without a quorum: it ends only when the leadership does). `None` when it
    /// may not. The drivers' `Leadership` is this, re-read after every input.
    ///
    /// The margin is at least the resign delay
    /// ([`Config::with_resign_delay`](crate::Config::with_resign_delay)), the
    /// time work told to stop is given to stop (the hold): a
    /// shorter one would let work run past the lease, into a successor's.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, DurableState, Node, NodeId, Quorum};
    ///
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// // A new cluster of one (a first boot: it votes for itself at once).
    /// let state = DurableState::first_boot();
    /// let mut node = Node::with_durable_state(NodeId(1), [NodeId(1)], config.clone(), state)?;
    /// let now = Instant::now();
    /// node.start_election(now);
    /// let margin = config.default_lease_margin();
    /// let permit = node.may_work_until(now, margin).expect("alone, it leads");
    /// assert_eq!(permit.token.leader, NodeId(1));
    /// let until = permit.until.expect("with a quorum the permission has an end");
    /// assert_eq!(until, node.exclusive_until().unwrap() - margin);
    /// assert!(node.may_work_until(until, margin).is_none(), "not at its end");
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn may_work_until(&self, now: Instant, margin: Duration) -> Option<WorkPermit> {
        let leader = self.leader.filter(|leader| leader.id == self.id)?;
        if self.role() != Role::Leader {
            return None;
        }
        let token = leader.token();
        if self.config.quorum() == Quorum::None {
            return Some(WorkPermit { token, until: None });
        }
        let margin = margin.max(self.config.resign_delay());
        let until = self.exclusive_until()?.checked_sub(margin)?;
        (now < until).then_some(WorkPermit {
            token,
            until: Some(until),
        })
    }

    /// What this node's safety core holds now: its term, vote, promise,
    /// lease and the rest that the invariants of
    /// [`invariants`](crate::invariants) read (docs/protocol.md, "The safety
    /// core").
    pub fn safety(&self) -> crate::invariants::SafetyState {
        crate::invariants::SafetyState {
            id: self.id,
            term: self.term,
            highest: self.highest,
            vote: self.votes.vote(),
            promise: self
                .votes
                .promise()
                .map(|((to, term), until)| crate::invariants::Promise { to, term, until }),
            votes_for_nobody_until: self.votes.votes_for_nobody_until(),
            hold_until: self.votes.hold_until(),
            leading: self.leadership_term(),
            lease_until: self.exclusive_until(),
            first_boot: self.votes.promised_nothing(),
            quorum: self.quorum(),
            voter: self.members.is_voter(self.id),
            follower_lease: self.timings.follower_lease,
        }
    }
}
