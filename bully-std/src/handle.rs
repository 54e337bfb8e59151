//! [`spawn`], [`Builder`] and [`Handle`]: starting a driver and talking to it.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::Auth;
use bully_core::{CommandError, DurableState, Leader, Node, NodeId, Role, Stats, Term};

use crate::change::ChangeError;
use crate::driver::{Driver, DriverInbox, Input, Persist, receive};
use crate::error::DriverError;
use crate::events::{Events, Hub};
use crate::leadership::Leadership;
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering, lock, mpsc, thread};
use crate::transport::Transport;
use crate::watch::LeaderWatch;

/// Starts `node` on a driver thread, with a receiver thread reading `transport`,
/// using the [`Builder`]'s defaults, and returns its [`Handle`].
///
/// The driver calls [`Node::start`] at once (boot or recovery), then serves the
/// node until [`Handle::shutdown`], [`Handle::abort`], or the handle is dropped.
/// The node must not have been started already. The node only ever sees
/// `Instant::now()` read on the driver thread.
///
/// # Panics
///
/// If the operating system cannot start a thread, as [`std::thread::spawn`] does.
/// [`Builder::spawn`] returns that error instead.
pub fn spawn<T: Transport>(node: Node, transport: T) -> Handle {
    Builder::new()
        .spawn(node, transport)
        .expect("bully-std: failed to start a thread")
}

/// [`spawn`], and call `persist` with the node's [`DurableState`] whenever it
/// changes, before any message that depends on it is sent.
///
/// Write the state somewhere that survives a restart and pass it back to
/// [`Node::with_durable_state`] when the process starts again: the restarted node
/// then resumes from its term (and, with a quorum, its vote) instead of announcing
/// a stale leadership. `persist` runs on the driver thread, so keep it short; it
/// is not called for the state the node was created with.
///
/// # Panics
///
/// If the operating system cannot start a thread ([`Builder::spawn_persisting`]
/// returns that error instead).
pub fn spawn_persisting<T, P>(node: Node, transport: T, persist: P) -> Handle
where
    T: Transport,
    P: FnMut(DurableState) + Send + 'static,
{
    Builder::new()
        .spawn_persisting(node, transport, persist)
        .expect("bully-std: failed to start a thread")
}

/// Settings for [`spawn`]: how many events a slow reader may fall behind, and how
/// often the receiver thread checks for shutdown.
#[derive(Clone, Debug)]
pub struct Builder {
    event_capacity: usize,
    poll_interval: Duration,
    lease_margin: Option<Duration>,
    #[cfg(loom)]
    timer_expiries: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: 1024 events per subscription, the receiver checks for shutdown
    /// every 50 ms.
    pub fn new() -> Builder {
        Builder {
            event_capacity: 1024,
            poll_interval: Duration::from_millis(50),
            lease_margin: None,
            #[cfg(loom)]
            timer_expiries: 0,
        }
    }

    /// How many unread events each [`Events`] subscription holds before it discards
    /// the oldest (at least 1).
    #[must_use]
    pub fn event_capacity(mut self, capacity: usize) -> Builder {
        self.event_capacity = capacity.max(1);
        self
    }

    /// The timeout the receiver thread passes to [`Transport::recv`]: the longest
    /// [`Handle::shutdown`] waits for it to notice (default 50 ms, at least 1 ms).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Builder {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// With a quorum, how long before the end of its lease
    /// ([`Node::exclusive_until`]) this node's [`Leadership`] ends: the time the
    /// work needs to notice the flag and stop, plus the driver thread's own
    /// lateness. Keep it below the lease minus a heartbeat interval and a round
    /// trip, or the leadership ends between two renewals. Default: a quarter of
    /// the node's [`Config::leader_lease`](bully_core::Config::leader_lease).
    /// Without a quorum it has no effect.
    ///
    /// ```
    /// use std::time::Duration;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use bully_core::{Config, Node, NodeId};
    /// # let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// # let transport = bully_std::ChannelNetwork::new().endpoint(NodeId(1));
    /// let handle = bully_std::Builder::new()
    ///     .lease_margin(Duration::from_millis(150))
    ///     .spawn(node, transport)?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn lease_margin(mut self, margin: Duration) -> Builder {
        self.lease_margin = Some(margin);
        self
    }

    /// Under loom: how many times the model lets a deadline pass (see the crate's
    /// `ModelInbox`).
    #[cfg(loom)]
    #[doc(hidden)]
    #[must_use]
    pub fn model_timer_expiries(mut self, expiries: usize) -> Builder {
        self.timer_expiries = expiries;
        self
    }

    /// [`spawn`](crate::spawn) with these settings. Errors if a thread cannot be
    /// started; nothing is left running then.
    pub fn spawn<T: Transport>(self, node: Node, transport: T) -> io::Result<Handle> {
        self.start(node, transport, None)
    }

    /// [`spawn_persisting`](crate::spawn_persisting) with these settings. Errors if
    /// a thread cannot be started; nothing is left running then.
    pub fn spawn_persisting<T, P>(self, node: Node, transport: T, persist: P) -> io::Result<Handle>
    where
        T: Transport,
        P: FnMut(DurableState) + Send + 'static,
    {
        self.start(node, transport, Some(Box::new(persist)))
    }

    fn start<T: Transport>(
        self,
        node: Node,
        transport: T,
        persist: Option<Persist>,
    ) -> io::Result<Handle> {
        let id = node.id();
        let (inputs, inbox) = mpsc::channel();
        let (watch, publisher) = LeaderWatch::new();
        let hub = Arc::new(Hub::new(self.event_capacity));
        // Subscribed before the node starts, so the first `events()` misses nothing.
        let first_events = hub.subscribe();
        let transport = Arc::new(transport);
        let recv_errors = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));

        #[cfg(not(loom))]
        let inbox = crate::driver::ChannelInbox { inputs: inbox };
        #[cfg(loom)]
        let inbox = crate::driver::ModelInbox {
            inputs: inbox,
            now: std::time::Instant::now(),
            expiries: self.timer_expiries,
        };
        let lease_margin = self
            .lease_margin
            .unwrap_or_else(|| node.config().default_lease_margin());
        let driver = Driver {
            lease_margin,
            guard: None,
            persisted: node.durable_state(),
            node,
            transport: transport.clone(),
            leader: publisher,
            hub: hub.clone(),
            recv_errors: recv_errors.clone(),
            persist,
            stats: DriverStats::default(),
            batch: Vec::new(),
        };
        let driver = thread::Builder::new()
            .name(format!("bully-{id}-driver"))
            .spawn(move || driver.run(inbox))?;

        let receiver = {
            let inputs = inputs.clone();
            let stop = stop.clone();
            let poll_interval = self.poll_interval;
            thread::Builder::new()
                .name(format!("bully-{id}-recv"))
                .spawn(move || receive(transport, inputs, stop, recv_errors, poll_interval))
        };
        let receiver = match receiver {
            Ok(receiver) => receiver,
            Err(error) => {
                let _ = inputs.send(Input::Abort);
                let _ = driver.join();
                return Err(error);
            }
        };
        Ok(Handle {
            id,
            inputs,
            leader: watch,
            hub,
            first_events: Mutex::new(Some(first_events)),
            stop,
            threads: Some(Threads { driver, receiver }),
        })
    }
}

/// The driver's counters and the node's, and the node's state when they were read:
/// from [`Handle::stats`], and [`Handle::shutdown`] (the final ones).
///
/// They let tests check the loop by counting rather than by timing. (The counters
/// have the same names as bully-tokio's.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverStats {
    /// Times the driver woke up: a message, a command, or a deadline.
    pub wakeups: u64,
    /// Messages handed to the node.
    pub messages_received: u64,
    /// Calls to [`Node::handle_timeout`].
    pub timeouts: u64,
    /// Messages the transport accepted.
    pub messages_sent: u64,
    /// Sends the transport failed locally (counted, never fatal; a lost datagram
    /// is not one).
    pub send_errors: u64,
    /// Errors the transport returned from `recv` (counted, never fatal).
    pub recv_errors: u64,
    /// Input the transport refused before it reached the node
    /// ([`Transport::dropped`]).
    pub transport_dropped: u64,
    /// The node's own counters.
    pub node: Stats,
    /// What the node was doing.
    pub role: Role,
    /// The highest term the node had seen.
    pub term: Term,
    /// The leader the node had accepted.
    pub leader: Option<Leader>,
}

impl Default for DriverStats {
    /// All counters at zero; a follower in term 0 with no leader.
    fn default() -> Self {
        DriverStats {
            wakeups: 0,
            messages_received: 0,
            timeouts: 0,
            messages_sent: 0,
            send_errors: 0,
            recv_errors: 0,
            transport_dropped: 0,
            node: Stats::default(),
            role: Role::Follower,
            term: Term::default(),
            leader: None,
        }
    }
}

struct Threads {
    driver: thread::JoinHandle<(DriverStats, DriverInbox)>,
    receiver: thread::JoinHandle<()>,
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
pub struct Handle {
    id: NodeId,
    inputs: mpsc::Sender<Input>,
    leader: LeaderWatch,
    hub: Arc<Hub>,
    /// The subscription made before the node started, for the first `events()`.
    first_events: Mutex<Option<Events>>,
    stop: Arc<AtomicBool>,
    /// `None` once stopped.
    threads: Option<Threads>,
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

    /// A cloneable view of the leader for other threads, with the waits.
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
    /// [`Leadership`] ([`LeaderWatch::leadership`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Node, NodeId, Quorum};
    /// use bully_std::ChannelNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
    /// let handle = bully_std::spawn(node, ChannelNetwork::new().endpoint(NodeId(1)));
    ///
    /// let leadership = handle.leadership(Duration::from_secs(5))?;
    /// assert_eq!(leadership.token().leader, NodeId(1));
    /// assert!(leadership.is_current());
    /// handle.step_down()?;
    /// // Raised before step_down returned.
    /// assert!(!leadership.is_current());
    /// assert!(leadership.wait_ended(Duration::ZERO));
    /// # Ok(()) }
    /// ```
    pub fn leadership(&self, timeout: Duration) -> Result<Leadership, DriverError> {
        self.leader.leadership(timeout)
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
    /// use bully_std::ChannelNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_std::spawn(node, ChannelNetwork::new().endpoint(NodeId(1)));
    /// let (started, starts) = std::sync::mpsc::channel();
    /// let worker = handle.run_while_leader(move |leadership| {
    ///     started.send(leadership.token()).unwrap();
    ///     while leadership.is_current() {
    ///         // One step of the job, fenced with leadership.token().
    ///         leadership.wait_ended(Duration::from_millis(10));
    ///     }
    /// });
    /// assert_eq!(starts.recv()?.leader, NodeId(1));
    /// handle.shutdown()?; // the leadership ends, then the loop
    /// worker.join().unwrap();
    /// # Ok(()) }
    /// ```
    pub fn run_while_leader<F>(&self, work: F) -> thread::JoinHandle<()>
    where
        F: FnMut(Leadership) + Send + 'static,
    {
        let watch = self.leader.clone();
        thread::Builder::new()
            .name(format!("bully-{}-work", self.id))
            .spawn(move || watch.run_while_leader(work))
            .expect("bully-std: failed to start a thread")
    }

    /// Adds `member` to the cluster at runtime, reachable at `address`: the
    /// transport learns it first ([`Transport::add_peer`]), then the node
    /// ([`Node::add_member`], whose caveats apply: every member must make the
    /// same change, one at a time, while the cluster is stable).
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_std::ChannelNetwork;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_std::spawn(node, ChannelNetwork::new().endpoint(NodeId(1)));
    /// handle.add_member(NodeId(2), "127.0.0.1:7002".parse()?)?;
    /// handle.remove_member(NodeId(2))?;
    /// # Ok(()) }
    /// ```
    pub fn add_member(&self, member: NodeId, address: SocketAddr) -> Result<(), ChangeError> {
        let (reply, answer) = mpsc::channel();
        self.request(
            Input::AddMember {
                member,
                address,
                reply,
            },
            answer,
        )?
    }

    /// Removes `member` from the cluster at runtime: the node first (it sends the
    /// member nothing more, [`Node::remove_member`]), then the transport, which
    /// refuses the member's frames from then on ([`Transport::remove_peer`]).
    /// Nothing changes if the node refuses.
    pub fn remove_member(&self, member: NodeId) -> Result<(), ChangeError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::RemoveMember { member, reply }, answer)?
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
        let (reply, answer) = mpsc::channel();
        self.request(
            Input::SetAuth {
                auth: Box::new(auth),
                reply,
            },
            answer,
        )?
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

    /// Gives up the leadership ([`Node::step_down`]): `Ok(true)` if the node was
    /// leader, and then the others have been told and the change is published when
    /// this returns; `Ok(false)` if it was not leader.
    pub fn step_down(&self) -> Result<bool, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::StepDown { reply }, answer)
    }

    /// Tells the node that the work of its last leadership has stopped
    /// ([`Node::work_stopped`]). With a resign delay
    /// ([`Config::with_resign_delay`](bully_core::Config::with_resign_delay)) a
    /// step-down is told to the members, and a deferred vote cast, only once the
    /// delay ends or this is called: call it when the work has stopped, before
    /// [`shutdown`](Handle::shutdown) too, so that the others take over at once.
    pub fn work_stopped(&self) -> Result<(), DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::WorkStopped { reply }, answer)
    }

    /// Makes the node abstain from leading for `duration` from now
    /// ([`Node::abstain_until`]): a leader steps down, and until then the node
    /// neither stands nor takes over; afterwards it stands again as the
    /// preemption policy says. A zero `duration` ends an abstention.
    /// `Ok(true)` if the node stepped down, and then the change is published
    /// when this returns.
    pub fn abstain_for(&self, duration: Duration) -> Result<bool, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::AbstainFor { duration, reply }, answer)
    }

    /// Tells the node that an external failure detector believes `member` has
    /// failed ([`Node::suspect`]).
    pub fn suspect(&self, member: NodeId) -> Result<Result<(), CommandError>, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::Suspect { member, reply }, answer)
    }

    /// The driver's and the node's counters, and the node's role, term and leader.
    pub fn stats(&self) -> Result<DriverStats, DriverError> {
        let (reply, answer) = mpsc::channel();
        self.request(Input::Stats { reply }, answer)
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
    /// subscriptions. Returns within about [`Builder::poll_interval`] (plus the
    /// transport's send time), with the final counters: persist `term` (or use
    /// [`spawn_persisting`]) for [`Node::with_durable_state`].
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
