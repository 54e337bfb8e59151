//! [`Permit`]: this node's permit to do the leader's work, as a live scope,
//! and the driver's side that opens, renews and ends it.

use std::time::Instant;

use bully_core::{FencingToken, PermitChange};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// This node's permit to do work only the leader may do, as a live scope: the
/// fencing token to hand to storage, and a signal that fires when the work must
/// stop.
///
/// It is the node's [`bully_core::Permit`], kept current by the driver: the
/// signal fires when the
/// node says the permit ended ([`PermitChange::Ended`]): as soon as the node
/// stops leading, or, with a quorum, as soon as its guarantee of exclusive
/// leadership is about to lapse, at
/// [`Node::lease_until`](bully_core::Node::lease_until) minus the lease margin
/// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)),
/// moved later each time a quorum renews the lease. So, under a quorum, the
/// work stops before any other member can be elected. Without a quorum there
/// is no such guarantee: the signal only follows what this node believes, and
/// the two sides of a partition can both lead, and both work, at once.
///
/// A permit whose signal fired never becomes current again. If the lease is
/// renewed after its margin ran out (a late acknowledgement), the node starts a
/// new permit, and the driver opens a new `Permit`, with the same fencing
/// token.
///
/// Get one from [`Handle::permit`](crate::Handle::permit), or let
/// [`Handle::run_while_leader`](crate::Handle::run_while_leader) run work in each.
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId};
/// use bully_tokio::MemNetwork;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
/// let handle = bully_tokio::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
/// let permit = handle.permit(Duration::MAX).await?;
/// // Code that takes a CancellationToken stops with the permit.
/// let cancel = permit.cancellation_token();
/// let job = tokio::spawn(async move {
///     let mut writes = 0;
///     while !cancel.is_cancelled() {
///         writes += 1; // a write fenced with the permit's token
///         tokio::time::sleep(Duration::from_millis(100)).await;
///     }
///     writes
/// });
/// tokio::time::sleep(Duration::from_millis(550)).await;
/// handle.step_down().await?;
/// assert_eq!(job.await?, 6);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Permit {
    token: FencingToken,
    ended: CancellationToken,
    until: watch::Receiver<Option<Instant>>,
}

impl Permit {
    /// The fencing token `(term, leader)` of this permit: pass it with every
    /// write, so that storage refuses a deposed leader's.
    pub fn token(&self) -> FencingToken {
        self.token
    }

    /// Whether the work may go on: `false` once the permit ended or its
    /// guarantee is about to lapse.
    pub fn is_current(&self) -> bool {
        !self.ended.is_cancelled()
    }

    /// Completes when the work must stop (at once if it must already). Cancel
    /// safe.
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// The instant at which the signal fires unless a quorum renews the lease
    /// first: the permit's end ([`bully_core::Permit::until`]), as of the latest
    /// renewal. `None` without a quorum (the signal then follows the node's
    /// belief only), and once the permit ended.
    ///
    /// For a watchdog outside the driver (another process, say) that must stop the
    /// work on time even if this process stops being scheduled: hand it this
    /// deadline after every renewal ([`deadlines`](Permit::deadlines)).
    pub fn deadline(&self) -> Option<Instant> {
        if self.is_current() {
            *self.until.borrow()
        } else {
            None
        }
    }

    /// [`deadline`](Permit::deadline) as a `watch`: `changed().await`
    /// completes at each renewal, and with an error once the permit ended.
    pub fn deadlines(&self) -> watch::Receiver<Option<Instant>> {
        self.until.clone()
    }

    /// The signal as a `CancellationToken` (tokio-util's, re-exported here), for
    /// code that takes one. It is a child token: cancelling it stops only what
    /// holds it, not the permit.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.ended.child_token()
    }
}

/// The driver's side: opens, renews and ends the published [`Permit`] as
/// the node says its permit changes ([`PermitChange`]).
#[derive(Debug)]
pub(crate) struct Permits {
    publish: watch::Sender<Option<Permit>>,
    /// The current permit's deadline; replaced with each new permit, so
    /// an ended one's receivers see the channel close.
    until: Option<watch::Sender<Option<Instant>>>,
}

impl Permits {
    pub(crate) fn new() -> (Permits, watch::Receiver<Option<Permit>>) {
        let (publish, receiver) = watch::channel(None);
        (
            Permits {
                publish,
                until: None,
            },
            receiver,
        )
    }

    /// Carries out one change of the node's permit.
    pub(crate) fn apply(&mut self, change: PermitChange) {
        match change {
            PermitChange::Started(bully_core::Permit { token, until }) => {
                self.end();
                let (deadline, receiver) = watch::channel(until);
                self.until = Some(deadline);
                self.publish.send_replace(Some(Permit {
                    token,
                    ended: CancellationToken::new(),
                    until: receiver,
                }));
            }
            PermitChange::Renewed(bully_core::Permit { until, .. }) => {
                if let Some(deadline) = &self.until {
                    deadline.send_replace(until);
                }
            }
            PermitChange::Ended(_) => self.end(),
        }
    }

    /// Ends the current permit, if any.
    pub(crate) fn end(&mut self) {
        if let Some(leadership) = self.publish.send_replace(None) {
            leadership.ended.cancel();
        }
        self.until = None;
    }
}

impl Drop for Permits {
    /// A driver that stops, however it stops, ends the work.
    fn drop(&mut self) {
        self.end();
    }
}
