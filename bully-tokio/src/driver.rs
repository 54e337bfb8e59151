//! The driver task: owns the [`Node`](bully_core::Node) (inside a
//! [`DriverCore`]), waits in one `select!` for a command, a message or its
//! deadline, and publishes what the node says.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::Auth;
use bully_core::{CommandError, Event, Leader, NodeId, Transmit};
use bully_driver::{Change, DriverCore, DriverStats, Peers};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::error::ChangeError;
use crate::permit::Permits;
use crate::transport::{Transport, TransportError};

/// After this many `recv` errors in a row, the driver stops calling `recv` until
/// its next timer or command, so a transport that fails at once, every time,
/// cannot make it spin.
pub const RECV_ERROR_BURST: u32 = 16;

/// What the [`Handle`](crate::Handle) asks of the task, each with where the
/// answer goes.
pub(crate) enum Command {
    StepDown(oneshot::Sender<bool>),
    WorkStopped(oneshot::Sender<()>),
    AbstainFor(Duration, oneshot::Sender<bool>),
    HandOver(
        Option<NodeId>,
        Duration,
        oneshot::Sender<Result<bool, CommandError>>,
    ),
    Suspect(NodeId, oneshot::Sender<Result<(), CommandError>>),
    Stats(oneshot::Sender<DriverStats>),
    LastHeard(oneshot::Sender<BTreeMap<NodeId, Duration>>),
    Change(Change, oneshot::Sender<Result<(), ChangeError>>),
    Shutdown,
}

/// What woke the loop.
enum Input {
    Command(Option<Command>),
    Message(Result<(NodeId, bully_core::Message), TransportError>),
    Timer,
}

/// The task's state: the node and what the driver keeps beside it, and where
/// its outputs go.
pub(crate) struct Driver<T> {
    pub(crate) core: DriverCore,
    pub(crate) transport: T,
    pub(crate) commands: mpsc::Receiver<Command>,
    pub(crate) leader: watch::Sender<Option<Leader>>,
    pub(crate) events: broadcast::Sender<Event>,
    pub(crate) leaderships: Permits,
}

/// The transport as the table of peers a [`Change`] reaches.
struct TransportPeers<'a, T>(&'a mut T);

impl<T: Transport> Peers for TransportPeers<'_, T> {
    type Error = TransportError;

    fn add_peer(&mut self, member: NodeId, address: SocketAddr) -> Result<(), TransportError> {
        self.0.add_peer(member, address)
    }

    fn remove_peer(&mut self, member: NodeId) -> Result<(), TransportError> {
        self.0.remove_peer(member)
    }

    fn set_peer_address(
        &mut self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), TransportError> {
        self.0.set_peer_address(member, address)
    }

    fn set_auth(&mut self, auth: Auth) -> Result<(), TransportError> {
        self.0.set_auth(auth)
    }
}

/// The core's clock: tokio's, so that paused and simulated time reach the node.
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl<T: Transport> Driver<T> {
    pub(crate) async fn run(mut self) -> DriverStats {
        tracing::debug!(members = self.core.node().members().len(), "node starting");
        self.core.start(now());
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
                    self.core.stats_mut().timer_resets += 1;
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
            self.core.woke();
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
                    self.core.handle_message(now(), from, message);
                    self.flush().await;
                }
                // A run of refused datagrams: back to the top of the loop, which
                // serves any deadline that passed meanwhile.
                Input::Message(Err(TransportError::Refused(_))) => {
                    self.core.stats_mut().recv_yields += 1;
                }
                Input::Message(Err(TransportError::Closed)) => {
                    tracing::warn!("transport closed: no longer receiving");
                    receiving = false;
                }
                Input::Message(Err(error)) => {
                    tracing::debug!(%error, "receive failed");
                    self.core.stats_mut().recv_errors += 1;
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
        if self.core.node_mut().step_down(now()) {
            tracing::debug!(term = %self.core.node().term(), "resigning leadership for shutdown");
        }
        self.flush().await;
        tracing::debug!("node stopped");
        self.snapshot()
    }

    /// The node's deadline: its next timer, or its permit's end.
    fn deadline(&self) -> Option<Instant> {
        self.core.poll_timeout().map(Instant::from_std)
    }

    /// A deadline passed: the node's timers, or its permit's end, if due.
    async fn on_deadline(&mut self, now: Instant) {
        if self.core.handle_timeout(now.into_std()) {
            self.flush().await;
        }
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::StepDown(reply) => {
                let stepped = self.core.node_mut().step_down(now());
                self.flush().await;
                let _ = reply.send(stepped);
            }
            Command::WorkStopped(reply) => {
                self.core.node_mut().work_stopped(now());
                self.flush().await;
                let _ = reply.send(());
            }
            Command::AbstainFor(duration, reply) => {
                let stepped = self.core.abstain_for(now(), duration);
                self.flush().await;
                let _ = reply.send(stepped);
            }
            Command::HandOver(to, abstain, reply) => {
                let result = self.core.hand_over(now(), to, abstain);
                self.flush().await;
                let _ = reply.send(result);
            }
            Command::Suspect(member, reply) => {
                let result = self.core.node_mut().suspect(now(), member);
                self.flush().await;
                let _ = reply.send(result);
            }
            Command::Stats(reply) => {
                let _ = reply.send(self.snapshot());
            }
            Command::LastHeard(reply) => {
                let _ = reply.send(self.core.last_heard(now()));
            }
            Command::Change(change, reply) => {
                let peers = &mut TransportPeers(&mut self.transport);
                let result = self.core.change(now(), peers, change);
                self.flush().await;
                let _ = reply.send(result);
            }
            Command::Shutdown => {}
        }
    }

    /// The rule after every input: the node's permit (work that must stop stops
    /// first), durable state, transmits, events, then (in the loop) the deadline.
    async fn flush(&mut self) {
        let leaderships = &mut self.leaderships;
        self.core.before_send(|change| leaderships.apply(change));
        while let Some(Transmit { to, message }) = self.core.poll_transmit() {
            let sent = self.transport.send(to, &message).await;
            match &sent {
                Ok(()) => tracing::trace!(%to, %message, "sent"),
                Err(error) => tracing::debug!(%to, %message, %error, "send failed"),
            }
            self.core.sent(sent.is_ok());
        }
        while let Some(event) = self.core.poll_event() {
            trace_event(event);
            // No subscriber is not an error.
            let _ = self.events.send(event);
        }
        let leader = self.core.leader();
        self.leader.send_if_modified(|current| {
            let changed = *current != leader;
            *current = leader;
            changed
        });
    }

    fn snapshot(&self) -> DriverStats {
        let mut stats = self.core.stats();
        stats.transport_dropped = self.transport.dropped();
        stats.wire = self.transport.wire_stats();
        stats
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
