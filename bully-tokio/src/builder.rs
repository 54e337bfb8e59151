//! [`spawn`], [`spawn_persisting`] and their [`Builder`]: starting a driver task.

use bully_core::{DurableState, Node};
use bully_driver::{DriverCore, Persist, Settings};
use tokio::sync::{broadcast, mpsc, watch};
use tracing::Instrument;

use crate::driver::Driver;
use crate::handle::Handle;
use crate::permit::Permits;
use crate::transport::Transport;

/// Starts a task that runs `node` over `transport`, with the [`Builder`]'s
/// defaults, and returns its [`Handle`].
///
/// The task calls [`Node::start`](bully_core::Node::start) at once (boot or recovery), then serves the
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
/// [`Node::with_durable_state`](bully_core::Node::with_durable_state) when the process starts again: the restarted node
/// then resumes from its term (and, with a quorum, its vote) instead of announcing
/// a stale permit. `persist` runs on the driver's task, so keep it short (the
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

/// Settings for [`spawn`]: how many events a slow subscriber may fall behind.
/// The lease margin of a [`Permit`](crate::Permit) is the node's own
/// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)).
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId, Quorum};
/// use bully_tokio::{Builder, MemNetwork};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = Config::default()
///     .with_quorum(Quorum::Majority)
///     .with_lease_margin(Duration::from_millis(100));
/// let node = Node::new(NodeId(1), [NodeId(1)], config)?;
/// let handle = Builder::new()
///     .event_capacity(64)
///     .spawn(node, MemNetwork::new().endpoint(NodeId(1)));
/// # handle.shutdown().await?; Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    settings: Settings,
}

impl Builder {
    /// The defaults: [`DEFAULT_EVENT_CAPACITY`](bully_driver::DEFAULT_EVENT_CAPACITY)
    /// (1024) events per subscriber.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// How many events a [`Handle::events`] subscriber may fall behind before it
    /// misses the oldest (it then gets `RecvError::Lagged`; the leader watch
    /// never lags). At least 1.
    #[must_use]
    pub fn event_capacity(mut self, capacity: usize) -> Builder {
        self.settings = self.settings.with_event_capacity(capacity);
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
        let (commands, command_rx) = mpsc::channel(16);
        let (leader_tx, leader) = watch::channel(None);
        let (event_tx, events) = broadcast::channel(self.settings.event_capacity);
        let (leaderships, leadership) = Permits::new();
        let driver = Driver {
            core: DriverCore::new(node, persist),
            transport,
            commands: command_rx,
            leader: leader_tx,
            events: event_tx,
            leaderships,
        };
        let span = tracing::info_span!("bully", node = %id);
        let task = tokio::spawn(driver.run().instrument(span));
        Handle {
            id,
            commands,
            leader,
            leadership,
            events,
            task,
        }
    }
}
