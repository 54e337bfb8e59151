//! The permission to do work only the leader may do: [`WorkPermit`], what
//! [`Node::may_work_until`] grants, and [`Permission`], which follows it from
//! one input to the next and says when a driver must open or end a leadership.

use std::time::Duration;

use crate::event::FencingToken;
use crate::node::Node;
use crate::time::Instant;

/// Permission to do work only the leader may do, from
/// [`Node::may_work_until`]: the fencing token to do it under, and when the
/// permission ends unless a quorum renews the lease first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkPermit {
    /// The leadership's fencing token `(term, leader)`: pass it with every
    /// write, so that storage refuses a deposed leader's.
    pub token: FencingToken,
    /// With a quorum, the lease's end minus the margin: the work must have
    /// stopped by then unless a renewal moves it later. `None` without a
    /// quorum, where the permission ends only when the leadership does.
    pub until: Option<Instant>,
}

/// What a driver must do with its published leadership after an input, from
/// [`Permission::update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermitChange {
    /// Nothing: the same leadership goes on to the same end, or there is none.
    Same,
    /// End the open leadership, if there is one, and open one under the permit,
    /// if there is one: the token changed, or the permission began or lapsed.
    Replace(Option<WorkPermit>),
    /// The open leadership goes on, to this new end: a quorum renewed its lease.
    Renew(Option<Instant>),
}

/// The driver's view of the permission: the permit it last published, and the
/// margin it asks the node for.
///
/// A permit that lapsed is never reopened: if the lease is renewed after its
/// margin ran out (a late acknowledgement), the next update opens a new
/// leadership under the same fencing token, so work that was told to stop is
/// never told, through the same leadership, that it may go on.
#[derive(Clone, Debug)]
pub struct Permission {
    margin: Duration,
    open: Option<WorkPermit>,
}

impl Permission {
    /// Asks for permits that end `margin` before the lease does.
    pub fn new(margin: Duration) -> Permission {
        Permission { margin, open: None }
    }

    /// The margin `chosen` by the application, or else the node's
    /// [`Config::default_lease_margin`](crate::Config::default_lease_margin)
    /// (a quarter of its lease).
    pub fn for_node(node: &Node, chosen: Option<Duration>) -> Permission {
        Permission::new(chosen.unwrap_or_else(|| node.config().default_lease_margin()))
    }

    /// How long before the end of its lease a leadership ends.
    pub fn margin(&self) -> Duration {
        self.margin
    }

    /// The permit last published, if one is open.
    pub fn current(&self) -> Option<WorkPermit> {
        self.open
    }

    /// When the open permit lapses unless the lease is renewed: the driver
    /// must look again then, even if the node has no timer due (the
    /// leadership's guard).
    pub fn guard(&self) -> Option<Instant> {
        self.open.and_then(|permit| permit.until)
    }

    /// Reads the node's permission at `now` and says what changed since the
    /// last update.
    pub fn update(&mut self, node: &Node, now: Instant) -> PermitChange {
        let permit = node.may_work_until(now, self.margin);
        let change = match (self.open, permit) {
            (open, new) if open.map(|p| p.token) != new.map(|p| p.token) => {
                PermitChange::Replace(new)
            }
            (Some(open), Some(new)) if open.until != new.until => PermitChange::Renew(new.until),
            _ => PermitChange::Same,
        };
        self.open = permit;
        change
    }
}
