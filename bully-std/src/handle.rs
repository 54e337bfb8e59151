//! [`spawn`], [`Builder`] and [`Handle`]: starting a driver and talking to it.

use std::io;
use std::time::Duration;

use bully_core::{Leader, Node, NodeId, Role, Stats, Term};

use crate::driver::{Driver, DriverInbox, Input, receive};
use crate::error::Error;
use crate::events::{Events, Hub};
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering, lock, mpsc, thread};
use crate::transport::Transport;
use crate::watch::LeaderWatch;

/// Starts `node` on a driver thread, with a receiver thread reading `transport`,
/// using the [`Builder`]'s defaults. The driver calls [`Node::start`] first: pass
/// a node that has not been started.
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

/// Settings for [`spawn`]: how many events a slow reader may fall behind, and how
/// often the receiver thread checks for shutdown.
#[derive(Clone, Debug)]
pub struct Builder {
    event_capacity: usize,
    poll_interval: Duration,
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

    /// Under loom: how many times the model lets a deadline pass (see the crate's
    /// `ModelInbox`).
    #[cfg(loom)]
    #[doc(hidden)]
    #[must_use]
    pub fn model_timer_expiries(mut self, expiries: usize) -> Builder {
        self.timer_expiries = expiries;
        self
    }

    /// Starts `node` on a driver thread, with a receiver thread reading
    /// `transport`. The driver calls [`Node::start`] first.
    ///
    /// Errors if a thread cannot be started; nothing is left running then.
    pub fn spawn<T: Transport>(self, node: Node, transport: T) -> io::Result<Handle> {
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
        let driver = Driver {
            node,
            transport: transport.clone(),
            leader: publisher,
            hub: hub.clone(),
            recv_errors: recv_errors.clone(),
            send_errors: 0,
            batch: Vec::new(),
        };
        let driver = thread::Builder::new()
            .name(format!("bully-{id}-driver"))
            .spawn(move || driver.run(inbox))?;

        let receiver = {
            let inputs = inputs.clone();
            let stop = stop.clone();
            let recv_errors = recv_errors.clone();
            let poll_interval = self.poll_interval;
            thread::Builder::new()
                .name(format!("bully-{id}-recv"))
                .spawn(move || receive(transport, inputs, stop, recv_errors, poll_interval))
        };
        let receiver = match receiver {
            Ok(receiver) => receiver,
            Err(error) => {
                let _ = inputs.send(Input::Shutdown);
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

/// A node's state as its driver last saw it, from [`Handle::status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The node's id.
    pub id: NodeId,
    /// What the node is doing.
    pub role: Role,
    /// The highest term it has seen.
    pub term: Term,
    /// The leader it has accepted.
    pub leader: Option<Leader>,
    /// The core's counters: messages by kind, elections, refused input.
    pub stats: Stats,
    /// Sends the transport failed locally (not lost datagrams: those go unseen).
    pub send_errors: u64,
    /// Receives the transport failed locally.
    pub recv_errors: u64,
}

struct Threads {
    driver: thread::JoinHandle<(Status, DriverInbox)>,
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
/// does the same and ignores failures.
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
    pub fn leader(&self) -> Option<Leader> {
        self.leader.get()
    }

    /// A cloneable view of the leader for other threads, with the waits.
    pub fn leader_watch(&self) -> LeaderWatch {
        self.leader.clone()
    }

    /// Blocks until the node has a leader, at most `timeout`.
    ///
    /// Errors with [`Error::Timeout`], or [`Error::Stopped`] if the driver stopped.
    pub fn wait_for_leader(&self, timeout: Duration) -> Result<Leader, Error> {
        self.leader.wait_for_leader(timeout)
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

    /// Asks the node to give up the leadership ([`Node::step_down`]): `Ok(true)`
    /// if it was leader, and then the others have been told and the change is
    /// published when this returns; `Ok(false)` if it was not leader.
    pub fn step_down(&self) -> Result<bool, Error> {
        let (reply, answer) = mpsc::channel();
        self.inputs
            .send(Input::StepDown { reply })
            .map_err(|_| Error::Stopped)?;
        answer.recv().map_err(|_| Error::Stopped)
    }

    /// The node's role, term, leader and counters, from the driver thread.
    pub fn status(&self) -> Result<Status, Error> {
        let (reply, answer) = mpsc::channel();
        self.inputs
            .send(Input::Status { reply })
            .map_err(|_| Error::Stopped)?;
        answer.recv().map_err(|_| Error::Stopped)
    }

    /// Stops the node gracefully and joins every thread the handle started.
    ///
    /// The driver steps down if it leads and sends what that says (`Resign`), then
    /// stops: inputs that arrive after the shutdown request are not processed.
    /// Events published before can still be read from existing subscriptions.
    /// Returns within about [`Builder::poll_interval`] (plus the transport's
    /// send time).
    ///
    /// Returns the node's final status: persist its `term` and pass it to
    /// [`Node::with_term`] when the node comes back. Errors with
    /// [`Error::Panicked`] if one of the threads panicked.
    pub fn shutdown(mut self) -> Result<Status, Error> {
        self.stop()
    }

    fn stop(&mut self) -> Result<Status, Error> {
        let Some(threads) = self.threads.take() else {
            return Err(Error::Stopped);
        };
        self.stop.store(true, Ordering::Release);
        // The driver may have stopped already (a panic): then nobody reads this.
        let _ = self.inputs.send(Input::Shutdown);
        let driver = threads.driver.join();
        let receiver = threads.receiver.join();
        match (driver, receiver) {
            // The inbox is dropped only now, after the receiver's last send.
            (Ok((status, _inbox)), Ok(())) => Ok(status),
            _ => Err(Error::Panicked),
        }
    }
}

impl Drop for Handle {
    /// The same as [`Handle::shutdown`], ignoring failures.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
