//! [`LeaderWatch`]: the leader as the driver last published it, and waits on it.

use std::fmt;
use std::time::Duration;

use bully_core::{Leader, PermitChange};

use crate::error::DriverError;
use crate::permit::Permit;
use crate::sync::{Arc, Condvar, Mutex, lock, wait_until};

/// What the driver publishes: the leader, this node's open permit, and
/// whether the driver still runs.
#[derive(Clone, Debug)]
struct State {
    leader: Option<Leader>,
    permit: Option<Permit>,
    stopped: bool,
}

/// The shared cell: one mutex, so `(id, term)` is always read as one value, and
/// one condition variable for every change (a leadership opening or ending
/// included; the leadership's own waiters wait on its signal).
#[derive(Debug)]
struct Cell {
    state: Mutex<State>,
    changed: Condvar,
}

impl Cell {
    /// Waits until `ready` returns a value for the published state, at most
    /// `timeout`: errs with [`DriverError::Timeout`] then.
    fn wait<R>(
        &self,
        timeout: Duration,
        ready: impl FnMut(&mut State) -> Option<Result<R, DriverError>>,
    ) -> Result<R, DriverError> {
        wait_until(&self.state, &self.changed, timeout, ready).unwrap_or(Err(DriverError::Timeout))
    }
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
        let state = lock(&self.cell.state).clone();
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
                permit: None,
                stopped: false,
            }),
            changed: Condvar::new(),
        });
        (
            LeaderWatch { cell: cell.clone() },
            Publisher {
                cell,
                published: None,
                open: None,
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

    /// Blocks until this node leads, at most `timeout`, and returns that
    /// [`Permit`]: its fencing token, and the flag that says when work tied to
    /// it must stop (see [`Permit`] for when it is raised, with and without a
    /// quorum).
    ///
    /// Errors with [`DriverError::Timeout`], or [`DriverError::Stopped`] if the
    /// driver stops first.
    pub fn permit(&self, timeout: Duration) -> Result<Permit, DriverError> {
        self.cell.wait(timeout, |state| {
            let current = state.permit.as_ref().filter(|l| l.is_current());
            match current {
                Some(leadership) => Some(Ok(leadership.clone())),
                None => state.stopped.then_some(Err(DriverError::Stopped)),
            }
        })
    }

    /// This node's current permit, without waiting.
    pub(crate) fn current_permit(&self) -> Option<Permit> {
        let state = lock(&self.cell.state);
        state.permit.as_ref().filter(|l| l.is_current()).cloned()
    }

    /// Runs `work` in each leadership of this node, on the calling thread,
    /// client-go's loop: waits until the node leads, calls `work(permit)`,
    /// and once `work` has returned, waits for that leadership to end before it
    /// waits for the next one. Returns when the driver stops.
    ///
    /// A thread cannot be cancelled from outside: `work` must watch
    /// [`Permit::is_current`] (or block in [`Permit::wait_ended`]) and
    /// return promptly once it is `false`. With a quorum the flag is raised before
    /// any other member can be elected, by the lease margin
    /// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)): work that stops
    /// within the margin never overlaps another leadership's. Without a quorum
    /// there is no such guarantee: a partitioned old leader keeps working while
    /// the other side elects.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Node, NodeId, Quorum};
    /// use bully_std::MemNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
    /// let handle = bully_std::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    /// let watch = handle.leader_watch();
    /// let (started, starts) = std::sync::mpsc::channel();
    /// let worker = std::thread::spawn(move || {
    ///     watch.run_while_leader(|permit| {
    ///         started.send(permit.token()).unwrap();
    ///         while permit.is_current() {
    ///             // One step of the job, fenced with permit.token().
    ///             permit.wait_ended(Duration::from_millis(10));
    ///         }
    ///     });
    /// });
    /// let token = starts.recv()?;
    /// assert_eq!(token.leader, NodeId(1));
    /// handle.shutdown()?; // the leadership ends, then the loop
    /// worker.join().unwrap();
    /// # Ok(()) }
    /// ```
    pub fn run_while_leader(&self, mut work: impl FnMut(Permit)) {
        while let Ok(leadership) = self.permit(Duration::MAX) {
            work(leadership.clone());
            leadership.wait_ended(Duration::MAX);
        }
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
        self.cell.wait(timeout, |state| {
            if condition(state.leader) {
                Some(Ok(state.leader))
            } else {
                state.stopped.then_some(Err(DriverError::Stopped))
            }
        })
    }
}

/// The driver's side of the cell.
#[derive(Debug)]
pub(crate) struct Publisher {
    cell: Arc<Cell>,
    /// What was last written, so an unchanged leader costs no lock.
    published: Option<Leader>,
    /// The open permit, so a renewal costs no lock on the cell.
    open: Option<Permit>,
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

    /// Carries out one change of the node's permit to work: opens a
    /// leadership, moves its end, or ends it.
    pub(crate) fn publish_permit(&mut self, change: PermitChange) {
        match change {
            PermitChange::Renewed(permit) => {
                if let Some(open) = &self.open {
                    open.renew(permit.until);
                }
            }
            PermitChange::Started(_) | PermitChange::Ended(_) => {
                let mut state = lock(&self.cell.state);
                // Ended under the cell's lock too, so that a waiter for the next
                // leadership never sees the old one still current.
                if let Some(open) = self.open.take() {
                    open.end();
                }
                if let PermitChange::Started(permit) = change {
                    self.open = Some(Permit::open(permit.token, permit.until));
                }
                state.permit = self.open.clone();
                drop(state);
                self.cell.changed.notify_all();
            }
        }
    }
}

/// The driver stopping, returning or unwinding, marks the watch stopped and wakes
/// every waiter.
impl Drop for Publisher {
    fn drop(&mut self) {
        let mut state = lock(&self.cell.state);
        state.stopped = true;
        if let Some(open) = self.open.take() {
            open.end();
        }
        state.permit = None;
        drop(state);
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
