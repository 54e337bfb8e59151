//! [`spawn`], [`spawn_persisting`] and their [`Builder`]: starting a driver's
//! threads.

use std::io;
use std::time::Duration;

use bully_core::{DurableState, Node};
use bully_driver::{DriverCore, Persist, Settings};

use crate::driver::{Driver, Input, receive};
use crate::events::Hub;
use crate::handle::{Handle, Threads};
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, mpsc, thread};
use crate::transport::Transport;
use crate::watch::LeaderWatch;

/// Starts `node` on a driver thread, with a receiver thread reading `transport`,
/// using the [`Builder`]'s defaults, and returns its [`Handle`].
///
/// The driver calls [`Node::start`](bully_core::Node::start) at once (boot or recovery), then serves the
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
/// [`Node::with_durable_state`](bully_core::Node::with_durable_state) when the process starts again: the restarted node
/// then resumes from its term (and, with a quorum, its vote) instead of announcing
/// a stale permit. `persist` runs on the driver thread, so keep it short; it
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

/// Settings for [`spawn`]: how many events a slow reader may fall behind, and
/// how often the receiver thread checks for shutdown. The lease margin of a
/// [`Permit`](crate::Permit) is the node's own
/// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)).
#[derive(Clone, Debug)]
pub struct Builder {
    settings: Settings,
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
    /// The defaults:
    /// [`DEFAULT_EVENT_CAPACITY`](bully_driver::DEFAULT_EVENT_CAPACITY)
    /// (1024) events per subscription, the receiver checks for shutdown every
    /// 50 ms.
    pub fn new() -> Builder {
        Builder {
            settings: Settings::default(),
            poll_interval: Duration::from_millis(50),
            #[cfg(loom)]
            timer_expiries: 0,
        }
    }

    /// How many unread events each [`Events`](crate::Events) subscription holds
    /// before it discards the oldest (at least 1).
    #[must_use]
    pub fn event_capacity(mut self, capacity: usize) -> Builder {
        self.settings = self.settings.with_event_capacity(capacity);
        self
    }

    /// The timeout the receiver thread passes to [`Transport::recv`](crate::Transport::recv): the longest
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
        let hub = Arc::new(Hub::new(self.settings.event_capacity));
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
            core: DriverCore::new(node, persist),
            transport: transport.clone(),
            leader: publisher,
            hub: hub.clone(),
            recv_errors: recv_errors.clone(),
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
