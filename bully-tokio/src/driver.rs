//! The driver task that owns a [`Node`], and the [`Handle`] that talks to it.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::{Auth, WireStats};
use bully_core::{CommandError, DurableState, Event, Leader, Node, NodeId, Stats, Transmit};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use crate::change::ChangeError;
use crate::leadership::{Leadership, Leaderships};
use crate::transport::{Transport, TransportError};

/// How many events a slow [`Handle::events`] subscriber may fall behind before it
/// misses some (it then gets `RecvError::Lagged`; the leader watch never lags).
pub const EVENT_CAPACITY: usize = 256;

/// After this many `recv` errors in a row, the driver stops calling `recv` until
/// its next timer or command, so a transport that fails at once, every time,
/// cannot make it spin.
pub const RECV_ERROR_BURST: u32 = 16;

/// Counters the driver keeps about its own loop, beside the node's [`Stats`].
///
/// They exist so tests can check the loop's behaviour (no busy loop, no missed
/// deadline) by counting rather than by timing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverStats {
    /// Times the loop woke up for an input: a message, a timer, or a command.
    pub wakeups: u64,
    /// Messages handed to the node.
    pub messages_received: u64,
    /// Calls to [`Node::handle_timeout`].
    pub timeouts: u64,
    /// Times the timer was re-armed (only when the node's deadline changed, or
    /// when tokio woke the timer before the deadline had passed).
    pub timer_resets: u64,
    /// Messages the transport accepted.
    pub messages_sent: u64,
    /// Sends the transport refused (counted, logged at debug, never fatal).
    pub send_errors: u64,
    /// Errors the transport returned from `recv` (counted, never fatal).
    pub recv_errors: u64,
    /// Times `recv` handed the loop back after refusing a run of datagrams
    /// ([`TransportError::Refused`]): not errors.
    pub recv_yields: u64,
    /// Input the transport refused before it reached the node
    /// ([`Transport::dropped`]).
    pub transport_dropped: u64,
    /// The wire codec's counters, frames refused by reason among them, when the
    /// transport speaks `bully_core::wire` ([`Transport::wire_stats`]).
    pub wire: Option<WireStats>,
    /// The node's own counters.
    pub node: Stats,
}

/// The driver task has stopped, so the request could not be carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The task is no longer running (shut down, aborted, or its runtime stopped).
    #[error("the driver task has stopped")]
    Stopped,
    /// The task panicked (a bug: please report it).
    #[error("the driver task panicked")]
    Panicked,
    /// What was waited for did not happen in time.
    #[error("timed out")]
    Timeout,
}

enum Command {
    StepDown(oneshot::Sender<bool>),
    WorkStopped(oneshot::Sender<()>),
    AbstainFor(Duration, oneshot::Sender<bool>),
    Suspect(NodeId, oneshot::Sender<Result<(), CommandError>>),
    Stats(oneshot::Sender<DriverStats>),
    LastHeard(oneshot::Sender<BTreeMap<NodeId, Duration>>),
    AddMember(NodeId, SocketAddr, oneshot::Sender<Result<(), ChangeError>>),
    RemoveMember(NodeId, oneshot::Sender<Result<(), ChangeError>>),
    SetMemberAddress(NodeId, SocketAddr, oneshot::Sender<Result<(), ChangeError>>),
    SetAuth(Box<Auth>, oneshot::Sender<Result<(), ChangeError>>),
    Shutdown,
}

/// Starts a task that runs `node` over `transport`, and returns its [`Handle`].
///
/// The task calls [`Node::start`] at once (boot or recovery), then serves the
/// node until [`Handle::shutdown`], or until the handle is dropped. The node must
/// not have been started already.
///
/// The node only ever sees instants from tokio's clock
/// (`tokio::time::Instant::now().into_std()`), so it runs in virtual time under
/// `tokio::time::pause` and under turmoil.
///
/// # Panics
///
/// Outside a tokio runtime, as `tokio::spawn` does.
pub fn spawn<T: Transport>(node: Node, transport: T) -> Handle {
    Builder::new().spawn(node, transport)
}

/// [`spawn`], and call `persist` with the node's [`DurableState`] whenever it
/// changes, before any message that depends on it is sent.
///
/// Write the state somewhere that survives a restart, and pass it back to
/// [`Node::with_durable_state`] when the process starts again: the restarted node
/// then resumes from its term (and, with a quorum, its vote) instead of announcing
/// a stale leadership. `persist` runs on the driver's task, so keep it short (the
/// state is two small integers); it is not called for the state the node was
/// created with.
///
/// # Panics
///
/// Outside a tokio runtime, as `tokio::spawn` does.
pub fn spawn_persisting<T, P>(node: Node, transport: T, persist: P) -> Handle
where
    T: Transport,
    P: FnMut(DurableState) + Send + 'static,
{
    Builder::new().spawn_persisting(node, transport, persist)
}

type Persist = Box<dyn FnMut(DurableState) + Send>;

/// Settings for [`spawn`]: so far, the lease margin of [`Leadership`].
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId};
/// use bully_tokio::{Builder, MemNetwork};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
/// let handle = Builder::new()
///     .lease_margin(Duration::from_millis(100))
///     .spawn(node, MemNetwork::new().endpoint(NodeId(1)));
/// # handle.shutdown().await?; Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    lease_margin: Option<Duration>,
}

impl Builder {
    /// The defaults: a lease margin of a quarter of the node's
    /// [`Config::leader_lease`](bully_core::Config::leader_lease).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// With a quorum, how long before the end of its lease
    /// ([`Node::exclusive_until`]) this node's [`Leadership`] ends: the time the
    /// work needs to notice the signal and stop, plus the driver's own lateness.
    /// Keep it below the lease minus a heartbeat interval and a round trip, or the
    /// leadership ends between two renewals. Without a quorum it has no effect.
    #[must_use]
    pub fn lease_margin(mut self, margin: Duration) -> Builder {
        self.lease_margin = Some(margin);
        self
    }

    /// [`spawn`] with these settings.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn<T: Transport>(self, node: Node, transport: T) -> Handle {
        self.start(node, transport, None)
    }

    /// [`spawn_persisting`] with these settings.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn_persisting<T, P>(self, node: Node, transport: T, persist: P) -> Handle
    where
        T: Transport,
        P: FnMut(DurableState) + Send + 'static,
    {
        self.start(node, transport, Some(Box::new(persist)))
    }

    fn start<T: Transport>(self, node: Node, transport: T, persist: Option<Persist>) -> Handle {
        let id = node.id();
        let margin = self
            .lease_margin
            .unwrap_or_else(|| node.config().default_lease_margin());
        let (command_tx, command_rx) = mpsc::channel(16);
        let (leader_tx, leader_rx) = watch::channel(None);
        let (event_tx, event_rx) = broadcast::channel(EVENT_CAPACITY);
        let (leaderships, leadership_rx) = Leaderships::new(margin);
        let driver = Driver {
            persisted: node.durable_state(),
            node,
            transport,
            commands: command_rx,
            leader: leader_tx,
            events: event_tx,
            leaderships,
            guard: None,
            persist,
            heard: BTreeMap::new(),
            stats: DriverStats::default(),
        };
        let span = tracing::info_span!("bully", node = %id);
        let task = tokio::spawn(driver.run().instrument(span));
        Handle {
            id,
            commands: command_tx,
            leader: leader_rx,
            leadership: leadership_rx,
            events: event_rx,
            task,
        }
    }
}

/// The application's side of a running node.
///
/// Dropping the handle stops the task as [`shutdown`](Handle::shutdown) does (a
/// leader resigns first), without waiting for it.
#[derive(Debug)]
pub struct Handle {
    id: NodeId,
    commands: mpsc::Sender<Command>,
    leader: watch::Receiver<Option<Leader>>,
    leadership: watch::Receiver<Option<Leadership>>,
    events: broadcast::Receiver<Event>,
    task: JoinHandle<DriverStats>,
}

impl Handle {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The leader this node has accepted (itself when it leads), as a watch: read
    /// it with `borrow()`, wait for the next change with `changed().await`. `None`
    /// while an election runs, and after the task has stopped.
    pub fn leader(&self) -> watch::Receiver<Option<Leader>> {
        self.leader.clone()
    }

    /// Waits until the node has a leader, at most `timeout`, and returns it.
    ///
    /// Errors with [`DriverError::Timeout`], or [`DriverError::Stopped`] if the
    /// task stops first.
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
    /// let leader = handle.wait_for_leader(Duration::from_secs(1)).await?;
    /// assert_eq!(leader.id, NodeId(1));
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_leader(&self, timeout: Duration) -> Result<Leader, DriverError> {
        let mut leader = self.leader.clone();
        let wait = leader.wait_for(Option::is_some);
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(leader)) => (*leader).ok_or(DriverError::Stopped),
            Ok(Err(_)) => Err(DriverError::Stopped),
            Err(_) => Err(DriverError::Timeout),
        }
    }

    /// Waits until this node leads, and returns that [`Leadership`]: its fencing
    /// token, and the signal that says when work tied to it must stop (see
    /// [`Leadership`] for when it fires, with and without a quorum).
    ///
    /// Errors with [`DriverError::Stopped`] if the task stops first.
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId, Quorum};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
    /// let handle = bully_tokio::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    ///
    /// let leadership = handle.leadership().await?;
    /// assert_eq!(leadership.token().leader, NodeId(1));
    /// assert!(leadership.is_current());
    /// handle.step_down().await?;
    /// leadership.ended().await; // fired by the step-down
    /// assert!(!leadership.is_current());
    /// # Ok(()) }
    /// ```
    pub async fn leadership(&self) -> Result<Leadership, DriverError> {
        next_leadership(self.leadership.clone()).await
    }

    /// This node's current [`Leadership`], without waiting: `None` unless it
    /// leads and, with a quorum, its lease has more than the margin left.
    pub fn current_leadership(&self) -> Option<Leadership> {
        self.leadership
            .borrow()
            .as_ref()
            .filter(|leadership| leadership.is_current())
            .cloned()
    }

    /// Runs `work` in each leadership of this node, client-go's loop: waits until
    /// the node leads, runs `work(leadership)`, cancels it (drops its future) as
    /// soon as the leadership's signal fires, then waits for the next leadership
    /// and runs `work` again. Work that finishes early is not restarted within the
    /// same leadership. Completes when the task stops.
    ///
    /// With a quorum, the work of one leadership is cancelled before any other
    /// member can be elected, so the work of two leaderships never overlaps in
    /// time (given the clock drift bound of the config). Without a quorum the
    /// signal follows this node's belief only, and a partitioned old leader keeps
    /// working while the other side elects: their work overlaps.
    ///
    /// The returned future does not borrow the handle: spawn it, and
    /// [`shutdown`](Handle::shutdown) ends it.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use bully_core::{Config, Node, NodeId, Quorum};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
    /// let handle = bully_tokio::spawn(node, MemNetwork::new().endpoint(NodeId(1)));
    ///
    /// let started = Arc::new(Mutex::new(Vec::new()));
    /// let log = started.clone();
    /// let work = tokio::spawn(handle.run_while_leader(move |leadership| {
    ///     log.lock().unwrap().push(leadership.token());
    ///     async move {
    ///         // The job, e.g. a loop of writes fenced with leadership.token().
    ///         std::future::pending::<()>().await
    ///     }
    /// }));
    /// handle.leadership().await?;
    /// tokio::task::yield_now().await;
    /// handle.shutdown().await?; // ends the leadership, then the loop
    /// work.await?;
    /// assert_eq!(started.lock().unwrap().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn run_while_leader<F, Fut>(&self, mut work: F) -> impl Future<Output = ()> + use<F, Fut>
    where
        F: FnMut(Leadership) -> Fut,
        Fut: Future<Output = ()>,
    {
        let leaderships = self.leadership.clone();
        async move {
            while let Ok(leadership) = next_leadership(leaderships.clone()).await {
                let ended = leadership.cancellation_token();
                let job = work(leadership);
                tokio::select! {
                    biased;
                    () = ended.cancelled() => {}
                    () = job => ended.cancelled().await,
                }
            }
        }
    }

    /// Adds `member` to the cluster at runtime, reachable at `address`: the
    /// transport learns it first ([`Transport::add_peer`]), then the node
    /// ([`Node::add_member`], whose caveats apply: every member must make the
    /// same change, one at a time, while the cluster is stable).
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
    /// let handle = bully_tokio::spawn(node, network.endpoint(NodeId(1)));
    /// handle.add_member(NodeId(2), "127.0.0.1:7002".parse()?).await?;
    /// handle.remove_member(NodeId(2)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_member(&self, member: NodeId, address: SocketAddr) -> Result<(), ChangeError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::AddMember(member, address, reply), answer)
            .await?
    }

    /// Removes `member` from the cluster at runtime: the node first (it sends the
    /// member nothing more, [`Node::remove_member`]), then the transport, which
    /// refuses the member's frames from then on ([`Transport::remove_peer`]).
    /// Nothing changes if the node refuses.
    pub async fn remove_member(&self, member: NodeId) -> Result<(), ChangeError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::RemoveMember(member, reply), answer)
            .await?
    }

    /// Sends to `member`, a member other than this node, at `address` from now
    /// on ([`Transport::set_peer_address`]): it moved (a host name that now
    /// resolves elsewhere, a rescheduled pod), or its address was unknown until
    /// now (a transport built without one for it). The node is not told: the
    /// membership, and everything the node knows about the member, stay as
    /// they are.
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default())?;
    /// let handle = bully_tokio::spawn(node, network.endpoint(NodeId(1)));
    /// handle.set_member_address(NodeId(2), "127.0.0.1:7102".parse()?).await?;
    /// // Not a member: refused.
    /// assert!(handle.set_member_address(NodeId(3), "127.0.0.1:7103".parse()?).await.is_err());
    /// # Ok(()) }
    /// ```
    pub async fn set_member_address(
        &self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), ChangeError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::SetMemberAddress(member, address, reply), answer)
            .await?
    }

    /// Replaces the transport's keys without a restart, one step of a rotation
    /// (see [`Auth`] for the three steps): the replay windows and sequence
    /// numbers are kept.
    ///
    /// ```no_run
    /// use bully_core::wire::{Auth, Key, KeyId};
    /// # async fn rotate(handle: &bully_tokio::Handle, old: Key, new: Key) -> Result<(), bully_tokio::ChangeError> {
    /// // Step 1 on every member, then step 2 on every member, then step 3.
    /// handle.set_auth(Auth::Hmac { current: old, previous: Some(new.clone()) }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_auth(&self, auth: Auth) -> Result<(), ChangeError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::SetAuth(Box::new(auth), reply), answer)
            .await?
    }

    /// Every [`Event`] from now on, in order. A subscriber that falls more than
    /// [`EVENT_CAPACITY`] events behind skips the oldest (`RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.resubscribe()
    }

    /// Gives up the leadership ([`Node::step_down`]): the others elect at once.
    /// Returns `false` if this node was not the leader.
    pub async fn step_down(&self) -> Result<bool, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::StepDown(reply), answer).await
    }

    /// Tells the node that the work of its last leadership has stopped
    /// ([`Node::work_stopped`]). With a resign delay
    /// ([`Config::with_resign_delay`](bully_core::Config::with_resign_delay)) a
    /// step-down is told to the members, and a deferred vote cast, only once the
    /// delay ends or this is called: call it when the work has stopped, before
    /// [`shutdown`](Handle::shutdown) too, so that the others take over at once.
    pub async fn work_stopped(&self) -> Result<(), DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::WorkStopped(reply), answer).await
    }

    /// Makes the node abstain from leading for `duration` from now
    /// ([`Node::abstain_until`]): a leader steps down, and until then the node
    /// neither stands nor takes over; afterwards it stands again as the
    /// preemption policy says. A zero `duration` ends an abstention. Returns
    /// whether the node stepped down.
    pub async fn abstain_for(&self, duration: Duration) -> Result<bool, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::AbstainFor(duration, reply), answer)
            .await
    }

    /// Tells the node that an external failure detector believes `member` has
    /// failed ([`Node::suspect`]).
    pub async fn suspect(&self, member: NodeId) -> Result<Result<(), CommandError>, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::Suspect(member, reply), answer).await
    }

    /// The driver's and the node's counters.
    pub async fn stats(&self) -> Result<DriverStats, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::Stats(reply), answer).await
    }

    /// How long ago this node last received a message from each member it has
    /// heard from since it started (members never heard from are absent): what a
    /// status page shows as "the members it hears".
    ///
    /// ```
    /// use bully_core::{Config, Node, NodeId};
    /// use bully_tokio::MemNetwork;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let network = MemNetwork::new();
    /// let members = [NodeId(1), NodeId(2)];
    /// let one = bully_tokio::spawn(Node::new(NodeId(1), members, Config::default())?, network.endpoint(NodeId(1)));
    /// let two = bully_tokio::spawn(Node::new(NodeId(2), members, Config::default())?, network.endpoint(NodeId(2)));
    /// one.wait_for_leader(std::time::Duration::from_secs(5)).await?;
    /// let heard = one.last_heard().await?;
    /// assert!(heard.contains_key(&NodeId(2)) && !heard.contains_key(&NodeId(1)));
    /// # drop(two); Ok(()) }
    /// ```
    pub async fn last_heard(&self) -> Result<BTreeMap<NodeId, Duration>, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.request(Command::LastHeard(reply), answer).await
    }

    /// Stops the task gracefully and waits for it: a leader resigns first
    /// (`Message::Resign` to every member, sent before the task ends), so the next
    /// leader is elected at once rather than after the leader timeout. Returns the
    /// final counters.
    pub async fn shutdown(self) -> Result<DriverStats, DriverError> {
        // If the task is gone already, joining it says how it ended.
        let _ = self.commands.send(Command::Shutdown).await;
        join(self.task).await
    }

    /// Stops the task at once, without telling anyone: to the other members this
    /// looks exactly like a crash. Returns when the task, and with it the
    /// transport (its socket), is gone. For tests, demos and benchmarks.
    pub async fn abort(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    /// Whether the task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    async fn request<R>(
        &self,
        command: Command,
        answer: oneshot::Receiver<R>,
    ) -> Result<R, DriverError> {
        self.commands
            .send(command)
            .await
            .map_err(|_| DriverError::Stopped)?;
        answer.await.map_err(|_| DriverError::Stopped)
    }
}

/// The next current leadership published on `leaderships`.
async fn next_leadership(
    mut leaderships: watch::Receiver<Option<Leadership>>,
) -> Result<Leadership, DriverError> {
    let current = leaderships
        .wait_for(|leadership| leadership.as_ref().is_some_and(Leadership::is_current))
        .await
        .map_err(|_| DriverError::Stopped)?;
    current.clone().ok_or(DriverError::Stopped)
}

async fn join(task: JoinHandle<DriverStats>) -> Result<DriverStats, DriverError> {
    match task.await {
        Ok(stats) => Ok(stats),
        Err(error) if error.is_panic() => Err(DriverError::Panicked),
        Err(_) => Err(DriverError::Stopped),
    }
}

/// What woke the loop.
enum Input {
    Command(Option<Command>),
    Message(Result<(NodeId, bully_core::Message), TransportError>),
    Timer,
}

struct Driver<T> {
    node: Node,
    transport: T,
    commands: mpsc::Receiver<Command>,
    leader: watch::Sender<Option<Leader>>,
    events: broadcast::Sender<Event>,
    leaderships: Leaderships,
    /// When the current leadership must end unless the lease is renewed.
    guard: Option<std::time::Instant>,
    persist: Option<Persist>,
    /// The durable state last handed to `persist` (or restored at creation).
    persisted: DurableState,
    /// When each member was last heard from (members only: bounded).
    heard: BTreeMap<NodeId, Instant>,
    stats: DriverStats,
}

/// The core's clock: tokio's, so that paused and simulated time reach the node.
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl<T: Transport> Driver<T> {
    async fn run(mut self) -> DriverStats {
        tracing::debug!(members = self.node.members().len(), "node starting");
        self.node.start(now());
        self.flush().await;

        // One sleep for the task's whole life, re-armed only when the node's
        // deadline changes.
        let sleep = tokio::time::sleep_until(Instant::now());
        tokio::pin!(sleep);
        let mut armed: Option<Instant> = None;
        let mut receiving = true;
        let mut failed_receives: u32 = 0;

        loop {
            let mut deadline = self.deadline();
            // The clock before the sleep: a deadline that has already passed (the
            // task was busy, or the runtime was slow to poll it) is served now,
            // whatever state the sleep is in.
            if let Some(at) = deadline {
                let now = Instant::now();
                if at <= now {
                    self.on_deadline(now).await;
                    deadline = self.deadline();
                }
            }
            // Re-arm if the deadline moved, or if tokio woke the sleep before it
            // (its clock has millisecond granularity). A deadline that is due
            // again already (the timeout's own sends were slow) fires in the
            // select below, after commands and messages have had their turn: a
            // slow transport cannot starve them.
            if deadline != armed || (deadline.is_some() && sleep.is_elapsed()) {
                if let Some(at) = deadline {
                    sleep.as_mut().reset(at);
                    self.stats.timer_resets += 1;
                }
                armed = deadline;
            }

            let input = tokio::select! {
                biased;
                command = self.commands.recv() => Input::Command(command),
                received = self.transport.recv(), if receiving && failed_receives < RECV_ERROR_BURST => {
                    Input::Message(received)
                }
                () = &mut sleep, if armed.is_some() => Input::Timer,
            };
            self.stats.wakeups += 1;
            match &input {
                Input::Message(Ok(_) | Err(TransportError::Refused(_)))
                | Input::Timer
                | Input::Command(_) => failed_receives = 0,
                Input::Message(Err(_)) => failed_receives += 1,
            }

            match input {
                Input::Command(None | Some(Command::Shutdown)) => break,
                Input::Command(Some(command)) => self.on_command(command).await,
                Input::Message(Ok((from, message))) => {
                    tracing::trace!(%from, %message, "received");
                    self.stats.messages_received += 1;
                    if self.node.members().binary_search(&from).is_ok() {
                        self.heard.insert(from, Instant::now());
                    }
                    self.node.handle_message(now(), from, message);
                    self.flush().await;
                }
                // A run of refused datagrams: back to the top of the loop, which
                // serves any deadline that passed meanwhile.
                Input::Message(Err(TransportError::Refused(_))) => self.stats.recv_yields += 1,
                Input::Message(Err(TransportError::Closed)) => {
                    tracing::warn!("transport closed: no longer receiving");
                    receiving = false;
                }
                Input::Message(Err(error)) => {
                    tracing::debug!(%error, "receive failed");
                    self.stats.recv_errors += 1;
                    if failed_receives == RECV_ERROR_BURST {
                        tracing::warn!(%error, "receive keeps failing: pausing it until the next timer");
                    }
                }
                Input::Timer => self.on_deadline(Instant::now()).await,
            }
        }

        // Graceful stop: a leader tells everyone before the task ends (and its
        // leadership ends in the flush, before that is sent). With a resign
        // delay it tells them only if its work was said to have stopped
        // (`Handle::work_stopped`); else they wait for their promises to run
        // out, as the work may still be stopping.
        if self.node.step_down(now()) {
            tracing::debug!(term = %self.node.term(), "resigning leadership for shutdown");
        }
        self.flush().await;
        tracing::debug!("node stopped");
        self.snapshot()
    }

    /// The earliest of the node's deadline and the leadership's guard.
    fn deadline(&self) -> Option<Instant> {
        let node = self.node.poll_timeout();
        let earliest = match (node, self.guard) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        earliest.map(Instant::from_std)
    }

    /// A deadline passed: the node's timers if they are due, and the leadership's
    /// guard.
    async fn on_deadline(&mut self, now: Instant) {
        if self
            .node
            .poll_timeout()
            .is_some_and(|at| at <= now.into_std())
        {
            self.stats.timeouts += 1;
            self.node.handle_timeout(now.into_std());
            self.flush().await;
        } else {
            self.guard = self.leaderships.update(&self.node, now.into_std());
        }
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::StepDown(reply) => {
                let stepped = self.node.step_down(now());
                self.flush().await;
                let _ = reply.send(stepped);
            }
            Command::WorkStopped(reply) => {
                self.node.work_stopped(now());
                self.flush().await;
                let _ = reply.send(());
            }
            Command::AbstainFor(duration, reply) => {
                let now = now();
                let until = now.checked_add(duration).unwrap_or(now);
                let stepped = self.node.abstain_until(now, until);
                self.flush().await;
                let _ = reply.send(stepped);
            }
            Command::Suspect(member, reply) => {
                let result = self.node.suspect(now(), member);
                self.flush().await;
                let _ = reply.send(result);
            }
            Command::Stats(reply) => {
                let _ = reply.send(self.snapshot());
            }
            Command::LastHeard(reply) => {
                let now = Instant::now();
                let ages = self
                    .heard
                    .iter()
                    .map(|(&member, &at)| (member, now.saturating_duration_since(at)))
                    .collect();
                let _ = reply.send(ages);
            }
            Command::AddMember(member, address, reply) => {
                let result = self.add_member(member, address);
                self.flush().await;
                let _ = reply.send(result);
            }
            Command::RemoveMember(member, reply) => {
                let result = self.remove_member(member);
                self.flush().await;
                let _ = reply.send(result);
            }
            Command::SetMemberAddress(member, address, reply) => {
                let result = self.set_member_address(member, address);
                let _ = reply.send(result);
            }
            Command::SetAuth(auth, reply) => {
                let result = self.transport.set_auth(*auth).map_err(ChangeError::from);
                let _ = reply.send(result);
            }
            Command::Shutdown => {}
        }
    }

    fn add_member(&mut self, member: NodeId, address: SocketAddr) -> Result<(), ChangeError> {
        if self.node.members().binary_search(&member).is_ok() {
            return Err(CommandError::AlreadyMember(member).into());
        }
        // The transport first, so the node's first message to it has a route.
        self.transport.add_peer(member, address)?;
        if let Err(error) = self.node.add_member(now(), member) {
            let _ = self.transport.remove_peer(member);
            return Err(error.into());
        }
        Ok(())
    }

    fn set_member_address(
        &mut self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), ChangeError> {
        if member == self.node.id() {
            return Err(CommandError::SelfReference(member).into());
        }
        if self.node.members().binary_search(&member).is_err() {
            return Err(CommandError::UnknownMember(member).into());
        }
        self.transport.set_peer_address(member, address)?;
        Ok(())
    }

    fn remove_member(&mut self, member: NodeId) -> Result<(), ChangeError> {
        // The node first: it sends the member nothing more from here on.
        self.node.remove_member(now(), member)?;
        self.transport.remove_peer(member)?;
        Ok(())
    }

    /// The rule after every input: the leadership (work that must stop stops
    /// first), durable state, transmits, events, then (in the loop) the deadline.
    async fn flush(&mut self) {
        self.guard = self.leaderships.update(&self.node, now());
        // What the transmits below promise (a term, a vote) is written first.
        if let Some(persist) = &mut self.persist {
            let state = self.node.durable_state();
            if state != self.persisted {
                persist(state);
                self.persisted = state;
            }
        }
        while let Some(Transmit { to, message }) = self.node.poll_transmit() {
            match self.transport.send(to, &message).await {
                Ok(()) => {
                    tracing::trace!(%to, %message, "sent");
                    self.stats.messages_sent += 1;
                }
                Err(error) => {
                    tracing::debug!(%to, %message, %error, "send failed");
                    self.stats.send_errors += 1;
                }
            }
        }
        while let Some(event) = self.node.poll_event() {
            trace_event(event);
            // No subscriber is not an error.
            let _ = self.events.send(event);
        }
        let leader = self.node.leader();
        self.leader.send_if_modified(|current| {
            let changed = *current != leader;
            *current = leader;
            changed
        });
    }

    fn snapshot(&self) -> DriverStats {
        DriverStats {
            node: *self.node.stats(),
            transport_dropped: self.transport.dropped(),
            wire: self.transport.wire_stats(),
            ..self.stats
        }
    }
}

fn trace_event(event: Event) {
    match event {
        Event::ElectionStarted { term } => tracing::debug!(%term, "election started"),
        Event::LeaderElected { leader, term } => {
            tracing::debug!(%leader, %term, "leader elected");
        }
        Event::LeaderLost { leader, term } => tracing::debug!(%leader, %term, "leader lost"),
        Event::BecameLeader { term } => tracing::debug!(%term, "became leader"),
        Event::SteppedDown { term } => tracing::debug!(%term, "stepped down"),
        _ => tracing::debug!(?event, "event"),
    }
}
