//! What the node's leadership allows: until when it is exclusive (the lease,
//! G6 and G7), the permit to do the leader's work (G9: it ends the lease
//! margin, and at least a resign delay, before the lease) and the node's
//! output that says when a permit starts, is renewed and ends, and the safety
//! core's state that the invariants read.

use super::Node;
use crate::config::Quorum;
use crate::event::Role;
use crate::permit::{Permit, PermitChange};
use crate::time::Instant;

impl Node {
    /// Until when this node's own leadership is guaranteed exclusive: with a quorum
    /// gate, while it leads, the end of its lease (dated from the send time of the
    /// latest claim or heartbeat round a quorum acknowledged, shortened by the clock
    /// drift margin of [`Config::leader_lease`](crate::Config::leader_lease)). No other member can be elected
    /// before this instant, so work that only the leader may do is safe until then;
    /// its [`permit`](Node::permit) ends earlier, by the lease margin.
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
    /// let until = node.lease_until().expect("it leads with a quorum");
    /// assert!(until <= later + config.leader_lease());
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    ///
    /// [`Config::leader_lease`]: crate::Config::leader_lease
    /// [`Event::LeaseExpired`]: crate::Event::LeaseExpired
    pub fn lease_until(&self) -> Option<Instant> {
        self.leadership_term()?;
        self.quorum()?;
        self.requests.lease_until()
    }

    /// This node's permit to do work only the leader may do, at the latest
    /// instant it was given: the fencing token to do it under, and when it
    /// ends unless a quorum renews the lease (`None` without a quorum: it ends
    /// only when the leadership does). `None` when it may not work.
    ///
    /// With a quorum the permit ends the lease margin before the lease
    /// ([`lease_until`](Node::lease_until)): the longer of
    /// [`Config::lease_margin`] and [`Config::resign_delay`], the time work
    /// told to stop is given to stop, so that it has stopped before any other
    /// member can be elected. [`poll_permit`](Node::poll_permit) says when
    /// it starts, is renewed and ends.
    ///
    /// ```
    /// use std::time::Instant;
    /// use bully_core::{Config, DurableState, Node, NodeId, Quorum};
    ///
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// // A new cluster of one (a first boot: it votes for itself at once).
    /// let state = DurableState::first_boot();
    /// let mut node = Node::with_durable_state(NodeId(1), [NodeId(1)], config.clone(), state)?;
    /// let now = Instant::now();
    /// node.start_election(now);
    /// let permit = node.permit().expect("alone, it leads");
    /// assert_eq!(permit.token.leader, NodeId(1));
    /// let until = permit.until.expect("with a quorum the permit has an end");
    /// assert_eq!(until, node.lease_until().unwrap() - config.lease_margin());
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    ///
    /// [`Config::lease_margin`]: crate::Config::lease_margin
    /// [`Config::resign_delay`]: crate::Config::resign_delay
    pub fn permit(&self) -> Option<Permit> {
        self.permit_at(self.latest?)
    }

    /// What changed in the permit (see [`permit`](Node::permit)) since the
    /// last call, until `None`: drain it first after every input, before
    /// [`poll_transmit`](Node::poll_transmit), so that work that must stop is
    /// told before anything else happens.
    ///
    /// A permit that ends says [`PermitChange::Ended`] before anything starts;
    /// one whose lease a quorum renewed says [`PermitChange::Renewed`]. While a
    /// permit it has said started is open, [`poll_timeout`](Node::poll_timeout)
    /// is no later than its end, and [`handle_timeout`](Node::handle_timeout)
    /// then ends it. A permit that ended never starts again: a lease renewed
    /// after the permit's end came opens a new permit under the same token.
    ///
    /// ```
    /// use std::time::Instant;
    /// use bully_core::{Config, DurableState, Node, NodeId, PermitChange, Quorum};
    ///
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let state = DurableState::first_boot();
    /// let mut node = Node::with_durable_state(NodeId(1), [NodeId(1)], config, state)?;
    /// let now = Instant::now();
    /// node.start_election(now);
    /// let Some(PermitChange::Started(permit)) = node.poll_permit() else {
    ///     panic!("alone, it leads at once");
    /// };
    /// assert_eq!(node.poll_permit(), None, "nothing more changed");
    /// // Its end is a deadline of the node's own, and there the permit ends,
    /// // whatever the timers due then do: alone, its heartbeat round renews
    /// // the lease at once, too late for this permit, so a new one starts
    /// // under the same token.
    /// let until = permit.until.expect("with a quorum the permit has an end");
    /// assert!(node.poll_timeout() <= Some(until));
    /// node.handle_timeout(until);
    /// assert_eq!(node.poll_permit(), Some(PermitChange::Ended(permit)));
    /// let Some(PermitChange::Started(next)) = node.poll_permit() else {
    ///     panic!("the renewed lease opens a new permit");
    /// };
    /// assert_eq!(next.token, permit.token);
    /// node.step_down(until);
    /// assert_eq!(node.poll_permit(), Some(PermitChange::Ended(next)));
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn poll_permit(&mut self) -> Option<PermitChange> {
        let live = self.permit();
        self.published.next(live)
    }

    /// The end of the permit [`poll_permit`](Node::poll_permit) last said
    /// started or was renewed, as the lease now stands, while it is open: part
    /// of [`poll_timeout`](Node::poll_timeout).
    #[inline]
    pub(super) fn permit_deadline(&self) -> Option<Instant> {
        // Most nodes told no permit: they skip working one out, so that a
        // follower's every input pays one comparison for it.
        if !self.published.is_open() {
            return None;
        }
        self.open_permit_deadline()
    }

    #[inline(never)]
    fn open_permit_deadline(&self) -> Option<Instant> {
        self.published.deadline(self.permit())
    }

    /// Notes, at the start of an input at `now`, whether the permit last
    /// published is still live then, before the input changes anything: one
    /// that lapsed in between stays ended, even if the input renews the lease.
    #[inline]
    pub(super) fn settle_permit(&mut self, now: Instant) {
        if self.published.is_open() {
            self.settle_open_permit(now);
        }
    }

    #[inline(never)]
    fn settle_open_permit(&mut self, now: Instant) {
        let live = self.permit_at(now);
        self.published.observe(live);
    }

    /// The permit at `now`: see [`permit`](Node::permit).
    fn permit_at(&self, now: Instant) -> Option<Permit> {
        let leader = self.leader.filter(|leader| leader.id == self.id)?;
        if self.role() != Role::Leader {
            return None;
        }
        let token = leader.token();
        if self.config.quorum() == Quorum::None {
            return Some(Permit { token, until: None });
        }
        let until = self
            .lease_until()?
            .checked_sub(self.timings.permit_margin)?;
        (now < until).then_some(Permit {
            token,
            until: Some(until),
        })
    }

    /// What this node's safety core holds now: its term, vote, promise,
    /// lease and the rest that the safety core's invariants (checked by
    /// `bully-sim`'s `invariants`) read (docs/protocol.md, "The safety
    /// core").
    pub fn safety(&self) -> crate::safety::SafetyState {
        crate::safety::SafetyState {
            id: self.id,
            term: self.term,
            highest: self.highest,
            vote: self.votes.vote(),
            promise: self
                .votes
                .promise()
                .map(|((to, term), until)| crate::safety::Promise { to, term, until }),
            votes_for_nobody_until: self.votes.votes_for_nobody_until(),
            hold_until: self.votes.hold_until(),
            leading: self.leadership_term(),
            lease_until: self.lease_until(),
            first_boot: self.votes.promised_nothing(),
            quorum: self.quorum(),
            voter: self.members.is_voter(self.id),
            follower_lease: self.timings.follower_lease,
        }
    }
}
