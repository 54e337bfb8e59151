//! The driver task that owns a [`Node`], and the [`Handle`] that talks to it.

use bully_core::{CommandError, DurableState, Event, Leader, Node, NodeId, Stats, Transmit};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

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
    /// Input the transport refused before it reached the node
    /// ([`Transport::dropped`]).
    pub transport_dropped: u64,
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
}

enum Command {
    StepDown(oneshot::Sender<bool>),
    Suspect(NodeId, oneshot::Sender<Result<(), CommandError>>),
    Stats(oneshot::Sender<DriverStats>),
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
    spawn_inner(node, transport, None)
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
    spawn_inner(node, transport, Some(Box::new(persist)))
}

type Persist = Box<dyn FnMut(DurableState) + Send>;

fn spawn_inner<T: Transport>(node: Node, transport: T, persist: Option<Persist>) -> Handle {
    let id = node.id();
    let (command_tx, command_rx) = mpsc::channel(16);
    let (leader_tx, leader_rx) = watch::channel(None);
    let (event_tx, event_rx) = broadcast::channel(EVENT_CAPACITY);
    let driver = Driver {
        persisted: node.durable_state(),
        node,
        transport,
        commands: command_rx,
        leader: leader_tx,
        events: event_tx,
        persist,
        stats: DriverStats::default(),
    };
    let span = tracing::info_span!("bully", node = %id);
    let task = tokio::spawn(driver.run().instrument(span));
    Handle {
        id,
        commands: command_tx,
        leader: leader_rx,
        events: event_rx,
        task,
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
    persist: Option<Persist>,
    /// The durable state last handed to `persist` (or restored at creation).
    persisted: DurableState,
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
            let mut deadline = self.node.poll_timeout().map(Instant::from_std);
            // The clock before the sleep: a deadline that has already passed (the
            // task was busy, or the runtime was slow to poll it) is served now,
            // whatever state the sleep is in.
            if let Some(at) = deadline {
                let now = Instant::now();
                if at <= now {
                    self.on_timeout(now).await;
                    deadline = self.node.poll_timeout().map(Instant::from_std);
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
                Input::Message(Ok(_)) | Input::Timer | Input::Command(_) => failed_receives = 0,
                Input::Message(Err(_)) => failed_receives += 1,
            }

            match input {
                Input::Command(None | Some(Command::Shutdown)) => break,
                Input::Command(Some(command)) => self.on_command(command).await,
                Input::Message(Ok((from, message))) => {
                    tracing::trace!(%from, %message, "received");
                    self.stats.messages_received += 1;
                    self.node.handle_message(now(), from, message);
                    self.flush().await;
                }
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
                Input::Timer => self.on_timeout(Instant::now()).await,
            }
        }

        // Graceful stop: a leader tells everyone before the task ends.
        if self.node.step_down(now()) {
            tracing::debug!(term = %self.node.term(), "resigning leadership for shutdown");
        }
        self.flush().await;
        tracing::debug!("node stopped");
        self.snapshot()
    }

    async fn on_timeout(&mut self, now: Instant) {
        self.stats.timeouts += 1;
        self.node.handle_timeout(now.into_std());
        self.flush().await;
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::StepDown(reply) => {
                let stepped = self.node.step_down(now());
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
            Command::Shutdown => {}
        }
    }

    /// The rule after every input: transmits, then events, then (in the loop) the
    /// deadline.
    async fn flush(&mut self) {
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
