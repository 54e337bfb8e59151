//! [`Handle`]: the application's side of a running driver, its threads joined
//! when it shuts down.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::Auth;
use bully_core::{CommandError, Leader, NodeId};
use bully_driver::{Change, DriverStats};

use crate::driver::{DriverInbox, Input};
use crate::error::{ChangeError, DriverError};
use crate::events::{Events, Hub};
use crate::permit::Permit;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering, lock, mpsc, thread};
use crate::watch::LeaderWatch;

/// The threads a [`Handle`] started, joined when it stops.
pub(crate) struct Threads {
    pub(crate) driver: thread::JoinHandle<(DriverStats, DriverInbox)>,
    pub(crate) receiver: thread::JoinHandle<()>,
}

/// The application's side of a running node: read the leader, subscribe to
/// events, step down, shut down.
///
/// Every call is safe from any thread (`Handle` is `Send + Sync`) and none waits
/// on the network: the blocking ones wait for the driver thread, which answers
/// within one input's work, or for the leader to change.
///
/// [`shutdown`](Handle::shutdown) stops the node gracefully: a leader steps down
/// and tells the others first, so they elect without waiting out the leader
/// timeout; then every thread the handle started is joined. Dropping the handle
/// does the same, and ignores failures.
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId};
///
/// let members = [NodeId(1), NodeId(2)];
/// let network = bully_std::MemNetwork::new();
/// let one = bully_std::spawn(Node::new(NodeId(1), members, Config::default())?, network.endpoint(NodeId(1)));
/// let two = bully_std::spawn(Node::new(NodeId(2), members, Config::default())?, network.endpoint(NodeId(2)));
/// // Who leads, as this node knows it.
/// assert_eq!(one.wait_for_leader(Duration::from_secs(5))?.id, NodeId(2));
/// // The leader's permit to work, with its fencing token.
/// let permit = two.permit(Duration::from_secs(5))?;
/// assert_eq!(permit.token().leader, NodeId(2));
/// // 2 leaves gracefully (a leader resigns first); 1 is elected in a newer term.
/// two.shutdown()?;
/// let next = one.permit(Duration::from_secs(5))?;
/// assert!(next.token() > permit.token());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Handle {
    pub(crate) id: NodeId,
    pub(crate) inputs: mpsc::Sender<Input>,
    pub(crate) leader: LeaderWatch,
    pub(crate) hub: Arc<Hub>,
    /// The subscription made before the node started, for the first `events()`.
    pub(crate) first_events: Mutex<Option<Events>>,
    pub(crate) stop: Arc<AtomicBool>,
    /// `None` once stopped.
    pub(crate) threads: Option<Threads>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("id", &self.id)
            .field("leader", &self.leader.get())
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The leader the node has accepted, if any (on the leader, itself). Never
    /// older than an event already received from [`events`](Handle::events).
    /// After the driver stops, the last one it had.
    pub fn leader(&self) -> Option<Leader> {
        self.leader.get()
    }

    /// The leader as a cloneable [`LeaderWatch`] for other threads, with the
    /// blocking waits on it.
    pub fn leader_watch(&self) -> LeaderWatch {
        self.leader.clone()
    }

    /// Blocks until the node has a leader, at most `timeout`.
    ///
    /// Errors with [`DriverError::Timeout`], or [`DriverError::Stopped`] if the
    /// driver stopped without one.
    pub fn wait_for_leader(&self, timeout: Duration) -> Result<Leader, DriverError> {
        self.leader.wait_for_leader(timeout)
    }

    /// Blocks until this node leads, at most `timeout`, and returns that
    /// [`Permit`] ([`LeaderWatch::permit`]).
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
    ///
    /// let permit = handle.permit(Duration::from_secs(5))?;
    /// assert_eq!(permit.token().leader, NodeId(1));
    /// assert!(permit.is_current());
    /// handle.step_down()?;
    /// // Raised before step_down returned.
    /// assert!(!permit.is_current());
    /// assert!(permit.wait_ended(Duration::ZERO));
    /// # Ok(()) }
    /// ```
    pub fn permit(&self, timeout: Duration) -> Result<Permit, DriverError> {
        self.leader.permit(timeout)
    }

    /// This node's current [`Permit`], without waiting: `None` unless it
    /// leads and, with a quorum, its lease has more than the margin left.
    pub fn current_permit(&self) -> Option<Permit> {
        self.leader.current_permit()
    }

    /// Runs `work` in each leadership of this node, on a thread of its own, and
    /// returns that thread: [`LeaderWatch::run_while_leader`] (client-go's loop;
    /// `work` must return once the leadership's flag is raised). The thread ends
    /// when the driver stops: shut the handle down, then join it.
    ///
    /// # Panics
    ///
    /// If the operating system cannot start a thread, as [`std::thread::spawn`]
    /// does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_std::MemNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_std::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    /// let (started, starts) = std::sync::mpsc::channel();
    /// let worker = handle.run_while_leader(move |permit| {
    ///     started.send(permit.token()).unwrap();
    ///     while permit.is_current() {
    ///         // One step of the job, fenced with permit.token().
    ///         permit.wait_ended(Duration::from_millis(10));
    ///     }
    /// });
    /// assert_eq!(starts.recv()?.leader, NodeId(1));
    /// handle.shutdown()?; // the leadership ends, then the loop
    /// worker.join().unwrap();
    /// # Ok(()) }
    /// ```
    pub fn run_while_leader<F>(&self, work: F) -> thread::JoinHandle<()>
    where
        F: FnMut(Permit) + Send + 'static,
    {
        let watch = self.leader.clone();
        thread::Builder::new()
            .name(format!("bully-{}-work", self.id))
            .spawn(move || watch.run_while_leader(work))
            .expect("bully-std: failed to start a thread")
    }

    /// Adds `member` to the cluster at runtime, reachable at `address`: the
    /// transport learns it first ([`Transport::add_peer`](crate::Transport::add_peer)), then the node
    /// ([`Node::add_member`](bully_core::Node::add_member), whose caveats apply: every member must make the
    /// same change, one at a time, while the cluster is stable).
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_std::MemNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_std::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    /// handle.add_member(NodeId(2), "127.0.0.1:7002".parse()?)?;
    /// handle.remove_member(NodeId(2))?;
    /// # Ok(()) }
    /// ```
    pub fn add_member(&self, member: NodeId, address: SocketAddr) -> Result<(), ChangeError> {
        self.change(Change::AddMember { member, address })
    }

    /// Removes `member` from the cluster at runtime: the node first (it sends the
    /// member nothing more, [`Node::remove_member`](bully_core::Node::remove_member)), then the transport, which
    /// refuses the member's frames from then on ([`Transport::remove_peer`](crate::Transport::remove_peer)).
    /// Nothing changes if the node refuses.
    pub fn remove_member(&self, member: NodeId) -> Result<(), ChangeError> {
        self.change(Change::RemoveMember(member))
    }

    /// Sends to `member`, a member other than this node, at `address` from now
    /// on ([`Transport::set_peer_address`](crate::Transport::set_peer_address)):
    /// it moved (a host name that now resolves elsewhere, a rescheduled pod), or
    /// its address was unknown until now. The node is not told: the membership,
    /// and everything the node knows about the member, stay as they are.
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_std::MemNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default())?;
    /// let handle = bully_std::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    /// handle.set_member_address(NodeId(2), "127.0.0.1:7102".parse()?)?;
    /// // Not a member: refused.
    /// assert!(handle.set_member_address(NodeId(3), "127.0.0.1:7103".parse()?).is_err());
    /// # Ok(()) }
    /// ```
    pub fn set_member_address(
        &self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), ChangeError> {
        self.change(Change::SetMemberAddress { member, address })
    }

    /// Replaces the transport's keys without a restart, one step of a rotation
    /// (see [`Auth`] for the three steps): the replay windows and sequence
    /// numbers are kept.
    ///
    /// ```no_run
    /// use bully_core::wire::{Auth, Key};
    /// # fn rotate(handle: &bully_std::Handle, old: Key, new: Key) -> Result<(), bully_std::ChangeError> {
    /// // Step 1 on every member, then step 2 on every member, then step 3.
    /// handle.set_auth(Auth::Hmac { current: old, previous: Some(new.clone()) })?;
    /// # Ok(()) }
    /// ```
    pub fn set_auth(&self, auth: Auth) -> Result<(), ChangeError> {
        self.change(Change::SetAuth(Box::new(auth)))
    }

    /// A subscription to the node's events. The first call's subscription starts
    /// before the node does, so it sees every event; later calls see the events
    /// published from then on. See [`Events`] for what happens when a reader is
    /// slow: the driver never waits for it.
    pub fn events(&self) -> Events {
        lock(&self.first_events)
            .take()
            .unwrap_or_else(|| self.hub.subscribe())
    }

    /// Gives up the leadership ([`Node::step_down`](bully_core::Node::step_down)): `Ok(true)` if the node was
    /// leader, and then the others have been told and the change is published when
    /// this returns; `Ok(false)` if it was not leader.
    pub fn step_down(&self) -> Result<bool, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::StepDown { reply }, answer)
    }

    /// Tells the node that the work of its last leadership has stopped
    /// ([`Node::work_stopped`](bully_core::Node::work_stopped)). With a resign delay
    /// ([`Config::with_resign_delay`](bully_core::Config::with_resign_delay)) a
    /// step-down is told to the members, and a deferred vote cast, only once the
    /// delay ends or this is called: call it when the work has stopped, before
    /// [`shutdown`](Handle::shutdown) too, so that the others take over at once.
    pub fn work_stopped(&self) -> Result<(), DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::WorkStopped { reply }, answer)
    }

    /// Makes the node abstain from leading for `duration` from now
    /// ([`Node::abstain_until`](bully_core::Node::abstain_until)): a leader steps down, and until then the node
    /// neither stands nor takes over; afterwards it stands again as the
    /// preemption policy says. A zero `duration` ends an abstention.
    /// `Ok(true)` if the node stepped down, and then the change is published
    /// when this returns.
    pub fn abstain_for(&self, duration: Duration) -> Result<bool, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::AbstainFor { duration, reply }, answer)
    }

    /// A planned hand-over ([`Node::hand_over`](bully_core::Node::hand_over)):
    /// a leader steps down, its `Resign` names `to` (or, with `None`, the
    /// next highest member), which elects at once rather than after a leader
    /// timeout, and it abstains for `abstain` so that it does not take the
    /// leadership back. The permit ends first, as for any step-down.
    /// `Ok(Ok(false))` when this node does not lead; `Ok(Err(..))` when the
    /// node refuses the member named (itself, a stranger, an observer, one
    /// a live member above it would beat, or one that is not live:
    /// `CommandError::NotLive`), or, with `None`, when no other member that
    /// may lead is live (`CommandError::NoSuccessor`).
    pub fn hand_over(
        &self,
        to: Option<NodeId>,
        abstain: Duration,
    ) -> Result<Result<bool, CommandError>, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::HandOver { to, abstain, reply }, answer)
    }

    /// Tells the node that an external failure detector believes `member` has
    /// failed ([`Node::suspect`](bully_core::Node::suspect)).
    pub fn suspect(&self, member: NodeId) -> Result<Result<(), CommandError>, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::Suspect { member, reply }, answer)
    }

    /// The driver's and the node's counters, and the node's role, term and leader.
    pub fn stats(&self) -> Result<DriverStats, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::Stats { reply }, answer)
    }

    /// How long ago this node last received a message from each member it has
    /// heard from since it started (members never heard from are absent): what a
    /// status page shows as "the members it hears".
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_std::MemNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let members = [NodeId(1), NodeId(2)];
    /// let one = bully_std::spawn(Node::new(NodeId(1), members, Config::default())?, network.endpoint(NodeId(1)));
    /// let two = bully_std::spawn(Node::new(NodeId(2), members, Config::default())?, network.endpoint(NodeId(2)));
    /// one.wait_for_leader(Duration::from_secs(30))?;
    /// let heard = one.last_heard()?;
    /// assert!(heard.contains_key(&NodeId(2)) && !heard.contains_key(&NodeId(1)));
    /// # drop(two); Ok(()) }
    /// ```
    pub fn last_heard(&self) -> Result<BTreeMap<NodeId, Duration>, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::LastHeard { reply }, answer)
    }

    /// Whether the driver has stopped (shut down, aborted, or panicked).
    pub fn is_finished(&self) -> bool {
        self.leader.is_stopped()
    }

    /// Stops the node gracefully and joins every thread the handle started.
    ///
    /// The driver steps down if it leads and sends what that says (`Resign` to
    /// every member), then stops: input that arrives after the shutdown request is
    /// not processed. Events published before can still be read from existing
    /// subscriptions. Returns within about [`Builder::poll_interval`](crate::Builder::poll_interval) (plus the
    /// transport's send time), with the final counters: persist `term` (or use
    /// [`spawn_persisting`](crate::spawn_persisting)) for [`Node::with_durable_state`](bully_core::Node::with_durable_state).
    ///
    /// Errors with [`DriverError::Panicked`] if one of the threads panicked.
    pub fn shutdown(mut self) -> Result<DriverStats, DriverError> {
        self.stop(Input::Shutdown)
    }

    /// Stops at once, telling no one: to the other members this looks exactly like
    /// a crash. Returns when both threads, and with them the transport (its
    /// socket), are gone. For tests, demos and benchmarks.
    pub fn abort(mut self) {
        let _ = self.stop(Input::Abort);
    }

    /// Asks the driver to carry out `change`, and waits for its answer.
    fn change(&self, change: Change) -> Result<(), ChangeError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::Change { change, reply }, answer)?
    }

    fn request<R>(&self, input: Input, answer: mpsc::Receiver<R>) -> Result<R, DriverError> {
        self.inputs.send(input).map_err(|_| DriverError::Stopped)?;
        answer.recv().map_err(|_| DriverError::Stopped)
    }

    fn stop(&mut self, how: Input) -> Result<DriverStats, DriverError> {
        let Some(threads) = self.threads.take() else {
            return Err(DriverError::Stopped);
        };
        self.stop.store(true, Ordering::Release);
        // The driver may have stopped already (a panic): then nobody reads this.
        let _ = self.inputs.send(how);
        let driver = threads.driver.join();
        let receiver = threads.receiver.join();
        match (driver, receiver) {
            // The inbox is dropped only now, after the receiver's last send.
            (Ok((stats, _inbox)), Ok(())) => Ok(stats),
            _ => Err(DriverError::Panicked),
        }
    }
}

impl Drop for Handle {
    /// The same as [`Handle::shutdown`], ignoring failures.
    fn drop(&mut self) {
        let _ = self.stop(Input::Shutdown);
    }
}
