//! [`LeaderWatch`]: the leader as the driver last published it, and waits on it.

use std::fmt;
use std::time::{Duration, Instant};

use bully_core::Leader;

use crate::error::DriverError;
use crate::sync::{Arc, Condvar, Mutex, lock, wait_timeout};

/// What the driver publishes: the leader, and whether the driver still runs.
#[derive(Clone, Copy, Debug)]
struct State {
    leader: Option<Leader>,
    stopped: bool,
}

/// The shared cell: one mutex, so `(id, term)` is always read as one value.
#[derive(Debug)]
struct Cell {
    state: Mutex<State>,
    changed: Condvar,
}

/// A read-only view of the leader a node has accepted, as its driver publishes it.
///
/// Cheap to clone and to send to other threads ([`Handle::leader_watch`]
/// hands them out). The driver publishes the leader *before* it hands out the
/// events of the same input, so a thread that has received
/// [`Event::LeaderElected`](bully_core::Event::LeaderElected) from
/// [`Handle::events`] never reads an older leader here.
///
/// After the driver stops, the watch keeps the last leader it had, and waits
/// return [`DriverError::Stopped`] instead of blocking.
///
/// [`Handle::leader_watch`]: crate::Handle::leader_watch
/// [`Handle::events`]: crate::Handle::events
#[derive(Clone)]
pub struct LeaderWatch {
    cell: Arc<Cell>,
}

impl fmt::Debug for LeaderWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = *lock(&self.cell.state);
        f.debug_struct("LeaderWatch")
            .field("leader", &state.leader)
            .field("stopped", &state.stopped)
            .finish()
    }
}

impl LeaderWatch {
    /// A watch with no leader, and the driver's side of it.
    pub(crate) fn new() -> (LeaderWatch, Publisher) {
        let cell = Arc::new(Cell {
            state: Mutex::new(State {
                leader: None,
                stopped: false,
            }),
            changed: Condvar::new(),
        });
        (
            LeaderWatch { cell: cell.clone() },
            Publisher {
                cell,
                published: None,
            },
        )
    }

    /// The leader the node has accepted, if any (on the leader, itself).
    pub fn get(&self) -> Option<Leader> {
        lock(&self.cell.state).leader
    }

    /// Whether the driver has stopped: the value no longer changes.
    pub fn is_stopped(&self) -> bool {
        lock(&self.cell.state).stopped
    }

    /// Blocks until the node has a leader, and returns it.
    ///
    /// Errors with [`DriverError::Timeout`] if none is accepted within `timeout`, and with
    /// [`DriverError::Stopped`] if the driver stops without one.
    pub fn wait_for_leader(&self, timeout: Duration) -> Result<Leader, DriverError> {
        self.wait_for(timeout, |leader| leader.is_some())
            .map(|leader| leader.expect("the condition holds"))
    }

    /// Blocks until `condition` holds for the published leader, and returns that
    /// leader. The condition is checked at once, then on every change.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use bully_core::NodeId;
    /// # fn demo(watch: bully_std::LeaderWatch) -> Result<(), bully_std::DriverError> {
    /// // Wait until node 2 has taken over.
    /// watch.wait_for(Duration::from_secs(5), |leader| {
    ///     leader.is_some_and(|leader| leader.id == NodeId(2))
    /// })?;
    /// # Ok(()) }
    /// ```
    ///
    /// Errors with [`DriverError::Timeout`] if it does not hold within `timeout`, and with
    /// [`DriverError::Stopped`] if the driver stops before it does.
    pub fn wait_for(
        &self,
        timeout: Duration,
        mut condition: impl FnMut(Option<Leader>) -> bool,
    ) -> Result<Option<Leader>, DriverError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = lock(&self.cell.state);
        loop {
            if condition(state.leader) {
                return Ok(state.leader);
            }
            if state.stopped {
                return Err(DriverError::Stopped);
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return Err(DriverError::Timeout);
            }
            state = wait_timeout(&self.cell.changed, state, left);
        }
    }
}

/// The driver's side of the cell.
#[derive(Debug)]
pub(crate) struct Publisher {
    cell: Arc<Cell>,
    /// What was last written, so an unchanged leader costs no lock.
    published: Option<Leader>,
}

impl Publisher {
    /// Publishes `leader` if it differs from what was last published.
    pub(crate) fn publish(&mut self, leader: Option<Leader>) {
        if leader == self.published {
            return;
        }
        self.published = leader;
        lock(&self.cell.state).leader = leader;
        self.cell.changed.notify_all();
    }
}

/// The driver stopping, returning or unwinding, marks the watch stopped and wakes
/// every waiter.
impl Drop for Publisher {
    fn drop(&mut self) {
        lock(&self.cell.state).stopped = true;
        self.cell.changed.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use bully_core::{NodeId, Term};

    const LEADER: Leader = Leader {
        id: NodeId(3),
        term: Term(1),
    };

    #[test]
    fn a_wait_times_out_without_a_leader_and_wakes_on_one() {
        let (watch, mut publisher) = LeaderWatch::new();
        assert_eq!(
            watch.wait_for_leader(Duration::from_millis(10)),
            Err(DriverError::Timeout)
        );
        let waiter = {
            let watch = watch.clone();
            std::thread::spawn(move || watch.wait_for_leader(Duration::from_secs(60)))
        };
        publisher.publish(Some(LEADER));
        assert_eq!(waiter.join().unwrap(), Ok(LEADER));
        assert_eq!(watch.get(), Some(LEADER));
        assert!(!watch.is_stopped());
    }

    #[test]
    fn dropping_the_publisher_stops_the_watch_and_keeps_the_last_value() {
        let (watch, mut publisher) = LeaderWatch::new();
        publisher.publish(Some(LEADER));
        let waiter = {
            let watch = watch.clone();
            std::thread::spawn(move || watch.wait_for(Duration::from_secs(60), |l| l.is_none()))
        };
        drop(publisher);
        assert_eq!(waiter.join().unwrap(), Err(DriverError::Stopped));
        assert_eq!(watch.get(), Some(LEADER));
        assert!(watch.is_stopped());
        // A condition that already holds still succeeds after the stop.
        assert_eq!(
            watch.wait_for(Duration::ZERO, |l| l.is_some()),
            Ok(Some(LEADER))
        );
    }
}
