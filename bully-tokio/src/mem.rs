//! [`MemNetwork`] and [`MemTransport`]: an in-process network with fault controls,
//! for tests and demos.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bully_core::{Message, NodeId};
use tokio::sync::mpsc;

use crate::transport::{Transport, TransportError};

/// An in-process network connecting [`MemTransport`]s, with controls to drop,
/// delay and partition their traffic. Clones share the same network.
///
/// Delivery is like UDP's: a message to a member with no live endpoint, across a
/// partition, or picked by the drop rate vanishes without an error. Delays run on
/// tokio's clock, so they are virtual under `tokio::time::pause`. Drops are drawn
/// from a seeded generator, so a test that seeds it is repeatable.
///
/// ```
/// use bully_core::NodeId;
/// use bully_tokio::MemNetwork;
///
/// let network = MemNetwork::new();
/// let a = network.endpoint(NodeId(1));
/// let b = network.endpoint(NodeId(2));
/// network.partition(&[NodeId(1)], &[NodeId(2)]);
/// network.heal();
/// # drop((a, b));
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemNetwork {
    state: Arc<Mutex<State>>,
}

/// Counters of a [`MemNetwork`]'s traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemStats {
    /// Messages handed to an endpoint (or scheduled for delivery after a delay).
    pub delivered: u64,
    /// Messages dropped by a partition.
    pub blocked: u64,
    /// Messages dropped by the drop rate.
    pub lost: u64,
    /// Messages to a member with no live endpoint (crashed or never started).
    pub undeliverable: u64,
}

#[derive(Debug)]
struct State {
    endpoints: BTreeMap<NodeId, mpsc::UnboundedSender<(NodeId, Message)>>,
    /// One-way blocks: `(from, to)` pairs that do not get through.
    blocked: BTreeSet<(NodeId, NodeId)>,
    delay: Duration,
    drop_rate: f64,
    rng: u64,
    stats: MemStats,
}

impl Default for State {
    fn default() -> Self {
        State {
            endpoints: BTreeMap::new(),
            blocked: BTreeSet::new(),
            delay: Duration::ZERO,
            drop_rate: 0.0,
            rng: 0x9E37_79B9_7F4A_7C15,
            stats: MemStats::default(),
        }
    }
}

impl State {
    /// xorshift64*: deterministic, and good enough to pick which messages to drop.
    fn next_f64(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let bits = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        bits as f64 / (1u64 << 53) as f64
    }
}

impl MemNetwork {
    /// An empty network: no loss, no delay, no partition.
    pub fn new() -> MemNetwork {
        MemNetwork::default()
    }

    /// An empty network whose drop decisions come from `seed`.
    pub fn with_seed(seed: u64) -> MemNetwork {
        let network = MemNetwork::default();
        // xorshift needs a non-zero state.
        network.lock().rng = seed | 1;
        network
    }

    /// Attaches member `id` and returns its transport. Attaching an id again
    /// replaces the old endpoint, which then receives nothing more (a restart).
    pub fn endpoint(&self, id: NodeId) -> MemTransport {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().endpoints.insert(id, tx);
        MemTransport {
            id,
            network: self.clone(),
            inbox: rx,
        }
    }

    /// Blocks traffic both ways between every member of `a` and every member of `b`.
    pub fn partition(&self, a: &[NodeId], b: &[NodeId]) {
        let mut state = self.lock();
        for &x in a {
            for &y in b {
                state.blocked.insert((x, y));
                state.blocked.insert((y, x));
            }
        }
    }

    /// Blocks traffic from every member of `from` to every member of `to` only.
    pub fn partition_oneway(&self, from: &[NodeId], to: &[NodeId]) {
        let mut state = self.lock();
        for &x in from {
            for &y in to {
                state.blocked.insert((x, y));
            }
        }
    }

    /// Cuts `member` off from every other member, both ways.
    pub fn isolate(&self, member: NodeId) {
        let mut state = self.lock();
        let others: Vec<NodeId> = state.endpoints.keys().copied().collect();
        for other in others.into_iter().filter(|&other| other != member) {
            state.blocked.insert((member, other));
            state.blocked.insert((other, member));
        }
    }

    /// Restores traffic both ways between every member of `a` and every member of `b`.
    pub fn repair(&self, a: &[NodeId], b: &[NodeId]) {
        let mut state = self.lock();
        for &x in a {
            for &y in b {
                state.blocked.remove(&(x, y));
                state.blocked.remove(&(y, x));
            }
        }
    }

    /// Removes every partition.
    pub fn heal(&self) {
        self.lock().blocked.clear();
    }

    /// Delays every message by `delay` (zero, the default, delivers at once).
    pub fn set_delay(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    /// Drops each message with probability `rate` (clamped to `0.0..=1.0`).
    pub fn set_drop_rate(&self, rate: f64) {
        self.lock().drop_rate = rate.clamp(0.0, 1.0);
    }

    /// Detaches member `id`: messages to it are undeliverable until a new
    /// [`endpoint`](MemNetwork::endpoint) is attached for it.
    pub fn detach(&self, id: NodeId) {
        self.lock().endpoints.remove(&id);
    }

    /// The traffic counters.
    pub fn stats(&self) -> MemStats {
        self.lock().stats
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state inconsistent (every
        // update is a single insert or counter bump), so a poisoned lock is usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn deliver(&self, from: NodeId, to: NodeId, message: &Message) {
        let mut state = self.lock();
        if state.blocked.contains(&(from, to)) {
            state.stats.blocked += 1;
            return;
        }
        if state.drop_rate > 0.0 && state.next_f64() < state.drop_rate {
            state.stats.lost += 1;
            return;
        }
        let Some(endpoint) = state.endpoints.get(&to).cloned() else {
            state.stats.undeliverable += 1;
            return;
        };
        if endpoint.is_closed() {
            state.stats.undeliverable += 1;
            return;
        }
        state.stats.delivered += 1;
        let delay = state.delay;
        drop(state);
        let message = message.clone();
        if delay.is_zero() {
            let _ = endpoint.send((from, message));
        } else {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = endpoint.send((from, message));
            });
        }
    }
}

/// One member's attachment to a [`MemNetwork`].
#[derive(Debug)]
pub struct MemTransport {
    id: NodeId,
    network: MemNetwork,
    inbox: mpsc::UnboundedReceiver<(NodeId, Message)>,
}

impl MemTransport {
    /// The member this endpoint belongs to.
    pub fn id(&self) -> NodeId {
        self.id
    }
}

#[async_trait]
impl Transport for MemTransport {
    async fn send(&mut self, to: NodeId, message: &Message) -> Result<(), TransportError> {
        self.network.deliver(self.id, to, message);
        Ok(())
    }

    async fn recv(&mut self) -> Result<(NodeId, Message), TransportError> {
        // The network keeps a sender for as long as this endpoint is attached; once
        // it is replaced or detached nothing will ever arrive.
        self.inbox.recv().await.ok_or(TransportError::Closed)
    }

    /// The network routes by id: a new member needs no address.
    fn add_peer(
        &mut self,
        _member: NodeId,
        _address: std::net::SocketAddr,
    ) -> Result<(), TransportError> {
        Ok(())
    }

    /// Members are reached by id on the in-memory network: an address means
    /// nothing here, so every change is accepted.
    fn set_peer_address(
        &mut self,
        _member: NodeId,
        _address: std::net::SocketAddr,
    ) -> Result<(), TransportError> {
        Ok(())
    }
}
