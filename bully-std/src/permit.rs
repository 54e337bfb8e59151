//! [`Permit`]: this node's permit to do the leader's work, as a live scope
//! with a flag and a blocking wait, and the signal the driver raises when it
//! ends.

use std::fmt;
use std::time::{Duration, Instant};

use bully_core::FencingToken;

use crate::sync::{Arc, AtomicBool, Condvar, Mutex, Ordering, lock, wait_until};

/// This node's permit to do work only the leader may do, as a live scope: the
/// fencing token to hand to storage, and a flag raised when the work must stop.
///
/// It is the node's [`bully_core::Permit`], kept current by the driver: the flag is
/// raised when the node says the permit ended
/// ([`PermitChange::Ended`](bully_core::PermitChange::Ended)): as soon as the
/// node stops leading, or, with a quorum, as soon as its guarantee of exclusive
/// leadership is about to lapse, at
/// [`Node::lease_until`](bully_core::Node::lease_until) minus the lease margin
/// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)), moved
/// later each time a quorum renews the lease. So, under a quorum, work that stops within the
/// margin stops before any other member can be elected. Without a quorum there is
/// no such guarantee: the flag only follows what this node believes, and the two
/// sides of a partition can both lead, and both work, at once.
///
/// A raised flag is never lowered. If the lease is renewed after its margin ran
/// out (a late acknowledgement), the node starts a new permit, and the driver
/// opens a new `Permit`, with the same fencing token.
///
/// Cheap to clone and to send to other threads. Get one from
/// [`Handle::permit`](crate::Handle::permit), or let
/// [`Handle::run_while_leader`](crate::Handle::run_while_leader) hand you each.
#[derive(Clone)]
pub struct Permit {
    token: FencingToken,
    signal: Arc<Signal>,
}

/// What the driver raises when a permit ends, and where it moves its end.
///
/// The flag is an atomic, so that [`Permit::is_current`] costs one load; it
/// is raised under `until`'s lock, so a waiter that found it lowered and is about
/// to wait cannot miss the notification.
#[derive(Debug)]
pub(crate) struct Signal {
    ended: AtomicBool,
    /// The permit's end, as of the latest renewal.
    until: Mutex<Option<Instant>>,
    changed: Condvar,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("token", &self.token)
            .field("current", &self.is_current())
            .finish()
    }
}

impl Permit {
    /// A leadership of `token` that ends at `until` unless renewed.
    pub(crate) fn open(token: FencingToken, until: Option<Instant>) -> Permit {
        let signal = Signal {
            ended: AtomicBool::new(false),
            until: Mutex::new(until),
            changed: Condvar::new(),
        };
        Permit {
            token,
            signal: Arc::new(signal),
        }
    }

    /// Raises the flag and wakes every waiter: the driver's side.
    pub(crate) fn end(&self) {
        let until = lock(&self.signal.until);
        self.signal.ended.store(true, Ordering::Release);
        drop(until);
        self.signal.changed.notify_all();
    }

    /// Moves the end of the leadership: a quorum renewed its lease.
    pub(crate) fn renew(&self, until: Option<Instant>) {
        *lock(&self.signal.until) = until;
    }

    /// The fencing token `(term, leader)` of this permit: pass it with every
    /// write, so that storage refuses a deposed leader's.
    pub fn token(&self) -> FencingToken {
        self.token
    }

    /// Whether the work may go on: `false` once the permit ended or its
    /// guarantee is about to lapse. One atomic load: cheap enough for every step
    /// of a loop.
    pub fn is_current(&self) -> bool {
        !self.signal.ended.load(Ordering::Acquire)
    }

    /// The instant at which the flag is raised unless a quorum renews the lease
    /// first: the permit's end ([`Permit::until`](bully_core::Permit::until)),
    /// as of the latest renewal. `None` without a quorum (the
    /// flag then follows the node's belief only), and once the permit ended.
    ///
    /// For a watchdog outside the driver (another process, say) that must stop
    /// the work on time even if this process stops being scheduled.
    pub fn deadline(&self) -> Option<Instant> {
        let until = *lock(&self.signal.until);
        if self.is_current() { until } else { None }
    }

    /// Blocks until the flag is raised, at most `timeout` (`Duration::MAX`: for
    /// as long as it takes). Returns whether it was raised.
    pub fn wait_ended(&self, timeout: Duration) -> bool {
        let raised = |_: &mut Option<Instant>| (!self.is_current()).then_some(());
        wait_until(&self.signal.until, &self.signal.changed, timeout, raised).is_some()
    }
}
