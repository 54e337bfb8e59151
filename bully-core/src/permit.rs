//! The permit to do work only the leader may do, as the node grants it:
//! [`Permit`], and [`PermitChange`], the node's output that says when one
//! starts, is renewed and ends.

use crate::event::FencingToken;
use crate::time::Instant;

/// Permission to do work only the leader may do: the fencing token to do it
/// under, and when the permission ends unless a quorum renews the lease first.
///
/// A node grants one while it leads ([`Node::permit`](crate::Node::permit)),
/// and says when it starts, is renewed and ends
/// ([`Node::poll_permit`](crate::Node::poll_permit)). With a quorum it ends
/// the lease margin ([`Config::with_lease_margin`](crate::Config::with_lease_margin),
/// at least the resign delay) before the lease
/// ([`Node::lease_until`](crate::Node::lease_until)), so that work told to stop
/// then has stopped before any other member can be elected.
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, DurableState, Node, NodeId, PermitChange, Quorum};
///
/// let config = Config::default().with_quorum(Quorum::Majority);
/// // A new cluster of one: it votes for itself, and leads, at once.
/// let state = DurableState::first_boot();
/// let mut node = Node::with_durable_state(NodeId(1), [NodeId(1)], config, state)?;
/// node.start_election(Instant::now());
/// let Some(PermitChange::Started(permit)) = node.poll_permit() else {
///     panic!("alone, it leads");
/// };
/// assert_eq!(permit.token.leader, NodeId(1));
/// assert!(permit.until.is_some(), "with a quorum, it ends unless renewed");
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permit {
    /// The leadership's fencing token `(term, leader)`: pass it with every
    /// write, so that storage refuses a deposed leader's.
    pub token: FencingToken,
    /// With a quorum, the lease's end less the margin: the work must have
    /// stopped by then unless a renewal moves it later. `None` without a
    /// quorum, where the permit ends only when the leadership does.
    pub until: Option<Instant>,
}

/// What changed in a node's permit since the driver last asked
/// ([`Node::poll_permit`](crate::Node::poll_permit)): drain it first after
/// every input, before any transmit, so that work that must stop is told
/// before anything else happens.
///
/// A permit that ended never starts again: if the lease is renewed after the
/// permit's end had come (a late acknowledgement), the node says `Ended`, then
/// `Started` with a new permit under the same fencing token, so that work
/// that was told to stop is never told, by the same permit, that it may go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PermitChange {
    /// A permit starts: the work may start under its token, until its end.
    Started(Permit),
    /// The open permit goes on to a new end: a quorum renewed the lease. Its
    /// token is the open permit's.
    Renewed(Permit),
    /// The open permit ended: the leadership ended, or the permit's end came
    /// before a renewal. Stop the work.
    Ended(Permit),
}
