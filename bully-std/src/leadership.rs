//! [`Leadership`]: this node's leadership as a scope for work, with a flag and a
//! blocking wait.

use std::fmt;
use std::time::{Duration, Instant};

use bully_core::FencingToken;

use crate::sync::{Arc, AtomicBool, Ordering, lock, wait_timeout};
use crate::watch::Cell;

/// One leadership of this node, as a scope for work only the leader may do: the
/// fencing token to hand to storage, and a flag raised when the work must stop.
///
/// The flag is raised as soon as the node stops leading, or, with a quorum, as
/// soon as its guarantee of exclusive leadership is about to lapse: the driver
/// arms its own deadline at [`Node::exclusive_until`](bully_core::Node::exclusive_until) minus the lease margin
/// ([`Builder::lease_margin`](crate::Builder::lease_margin)), moved later each time
/// a quorum renews the lease. So, under a quorum, work that stops within the
/// margin stops before any other member can be elected. Without a quorum there is
/// no such guarantee: the flag only follows what this node believes, and the two
/// sides of a partition can both lead, and both work, at once.
///
/// A raised flag is never lowered. If the lease is renewed after its margin ran
/// out (a late acknowledgement), the driver opens a new `Leadership` with the same
/// fencing token.
///
/// Cheap to clone and to send to other threads. Get one from
/// [`Handle::leadership`](crate::Handle::leadership), or let
/// [`LeaderWatch::run_while_leader`](crate::LeaderWatch::run_while_leader) hand you
/// each.
#[derive(Clone)]
pub struct Leadership {
    token: FencingToken,
    ended: Arc<AtomicBool>,
    cell: Arc<Cell>,
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("token", &self.token)
            .field("current", &self.is_current())
            .finish()
    }
}

impl Leadership {
    pub(crate) fn new(token: FencingToken, ended: Arc<AtomicBool>, cell: Arc<Cell>) -> Leadership {
        Leadership { token, ended, cell }
    }

    /// The fencing token `(term, leader)` of this leadership: pass it with every
    /// write, so that storage refuses a deposed leader's.
    pub fn token(&self) -> FencingToken {
        self.token
    }

    /// Whether the work may go on: `false` once the leadership ended or its
    /// guarantee is about to lapse. One atomic load: cheap enough for every step
    /// of a loop.
    pub fn is_current(&self) -> bool {
        !self.ended.load(Ordering::Acquire)
    }

    /// Blocks until the flag is raised, at most `timeout` (`Duration::MAX`: for
    /// as long as it takes). Returns whether it was raised.
    pub fn wait_ended(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = lock(&self.cell.state);
        loop {
            if !self.is_current() {
                return true;
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return false;
            }
            state = wait_timeout(&self.cell.changed, state, left);
        }
    }
}
