//! [`MemNetwork`]: the in-process network both drivers test with, and its fault
//! controls; each driver supplies the endpoint ([`MemEndpoint`]), which is where
//! the runtimes differ (how a message waits in a mailbox, how a delay is slept).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bully_core::{Message, NodeId};

/// A driver's endpoint of a [`MemNetwork`]: its in-memory transport.
pub trait MemEndpoint: Sized {
    /// The sending half of the endpoint's mailbox, which the network keeps.
    type Mailbox: Clone;

    /// A new endpoint for member `id` of `network`, and its mailbox.
    fn open(network: MemNetwork<Self>, id: NodeId) -> (Self::Mailbox, Self);

    /// Puts `message` from `from` into `mailbox`, to be received after `delay`
    /// (zero: at once). `false` if the endpoint is gone, as a datagram to a dead
    /// host.
    fn deliver(mailbox: &Self::Mailbox, from: NodeId, message: Message, delay: Duration) -> bool;
}

/// An in-process network: every member gets an endpoint (the driver's
/// `MemTransport`) with its own mailbox from [`endpoint`](MemNetwork::endpoint),
/// and messages travel in order, at once or after [`set_delay`](MemNetwork::set_delay).
/// Cheap to clone: clones share the network.
///
/// Delivery is like UDP's: a message to a member with no live endpoint, across a
/// partition, or picked by the drop rate vanishes without an error, and is
/// counted ([`MemStats`]). Faults, as in raft-rs's test network:
/// [`partition`](MemNetwork::partition) two groups (or
/// [`partition_oneway`](MemNetwork::partition_oneway)),
/// [`isolate`](MemNetwork::isolate) a member (to the others, a crash),
/// [`repair`](MemNetwork::repair) or [`heal`](MemNetwork::heal), lose a share
/// of the messages ([`set_drop_rate`](MemNetwork::set_drop_rate)). Drops are
/// drawn from a seeded generator ([`with_seed`](MemNetwork::with_seed)), so a
/// test is repeatable.
pub struct MemNetwork<E: MemEndpoint> {
    state: Arc<Mutex<State<E::Mailbox>>>,
}

impl<E: MemEndpoint> Clone for MemNetwork<E> {
    fn clone(&self) -> Self {
        MemNetwork {
            state: self.state.clone(),
        }
    }
}

impl<E: MemEndpoint> Default for MemNetwork<E> {
    fn default() -> Self {
        MemNetwork::new()
    }
}

impl<E: MemEndpoint> fmt::Debug for MemNetwork<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MemNetwork")
            .field("endpoints", &state.mailboxes.keys().collect::<Vec<_>>())
            .field("stats", &state.stats)
            .finish_non_exhaustive()
    }
}

/// Counters of a [`MemNetwork`]'s traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemStats {
    /// Messages handed to a mailbox (or scheduled for delivery after a delay).
    pub delivered: u64,
    /// Messages dropped by a partition or an isolation.
    pub blocked: u64,
    /// Messages dropped by the drop rate.
    pub lost: u64,
    /// Messages to a member with no live endpoint (stopped, or never started).
    pub undeliverable: u64,
}

struct State<M> {
    mailboxes: BTreeMap<NodeId, M>,
    /// Directed links that drop everything: `(from, to)`.
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Members cut off from everyone, both ways.
    isolated: BTreeSet<NodeId>,
    delay: Duration,
    drop_rate: f64,
    /// xorshift64* state: never zero.
    rng: u64,
    stats: MemStats,
}

impl<M> State<M> {
    /// xorshift64*: deterministic, and good enough to pick which messages to drop.
    fn next_f64(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let bits = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        bits as f64 / (1u64 << 53) as f64
    }
}

impl<E: MemEndpoint> MemNetwork<E> {
    /// An empty network: no loss, no delay, no partition.
    pub fn new() -> MemNetwork<E> {
        MemNetwork::with_seed(0x9E37_79B9_7F4A_7C15)
    }

    /// An empty network whose drop decisions come from `seed`.
    pub fn with_seed(seed: u64) -> MemNetwork<E> {
        MemNetwork {
            state: Arc::new(Mutex::new(State {
                mailboxes: BTreeMap::new(),
                cut: BTreeSet::new(),
                isolated: BTreeSet::new(),
                delay: Duration::ZERO,
                drop_rate: 0.0,
                // xorshift needs a non-zero state.
                rng: seed | 1,
                stats: MemStats::default(),
            })),
        }
    }

    /// Connects member `id` and returns its endpoint. A second endpoint for the
    /// same id (a restart) gets a fresh mailbox; the previous one then receives
    /// nothing more, and its `recv` says the transport is closed.
    pub fn endpoint(&self, id: NodeId) -> E {
        let (mailbox, endpoint) = E::open(self.clone(), id);
        self.lock().mailboxes.insert(id, mailbox);
        endpoint
    }

    /// Removes member `id`'s mailbox: messages to it are undeliverable until a
    /// new [`endpoint`](Self::endpoint) is made for it.
    pub fn detach(&self, id: NodeId) {
        self.lock().mailboxes.remove(&id);
    }

    /// Drops every message between a member of `a` and a member of `b`, both ways.
    pub fn partition(&self, a: &[NodeId], b: &[NodeId]) {
        self.partition_oneway(a, b);
        self.partition_oneway(b, a);
    }

    /// Drops every message from a member of `from` to a member of `to` (one way).
    pub fn partition_oneway(&self, from: &[NodeId], to: &[NodeId]) {
        let mut state = self.lock();
        for &x in from {
            for &y in to {
                state.cut.insert((x, y));
            }
        }
    }

    /// Drops every message to or from `member`, whoever the others are (also
    /// members attached later): to them it has crashed. Until
    /// [`heal`](Self::heal); [`repair`](Self::repair) does not undo it.
    pub fn isolate(&self, member: NodeId) {
        self.lock().isolated.insert(member);
    }

    /// Restores traffic both ways between every member of `a` and every member of
    /// `b` (an isolation stays until [`heal`](Self::heal)).
    pub fn repair(&self, a: &[NodeId], b: &[NodeId]) {
        let mut state = self.lock();
        for &x in a {
            for &y in b {
                state.cut.remove(&(x, y));
                state.cut.remove(&(y, x));
            }
        }
    }

    /// Removes every cut, partition and isolation.
    pub fn heal(&self) {
        let mut state = self.lock();
        state.cut.clear();
        state.isolated.clear();
    }

    /// Delays every message by `delay` from now on (zero, the default, delivers
    /// at once).
    pub fn set_delay(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    /// Drops each message with probability `rate` (clamped to `0.0..=1.0`).
    pub fn set_drop_rate(&self, rate: f64) {
        self.lock().drop_rate = rate.clamp(0.0, 1.0);
    }

    /// The traffic counters.
    pub fn stats(&self) -> MemStats {
        self.lock().stats
    }

    /// Sends `message` from `from` to `to`, through the faults: what an
    /// endpoint's `send` calls.
    pub fn deliver(&self, from: NodeId, to: NodeId, message: &Message) {
        let mut state = self.lock();
        let blocked = state.isolated.contains(&from)
            || state.isolated.contains(&to)
            || state.cut.contains(&(from, to));
        if blocked {
            state.stats.blocked += 1;
            return;
        }
        if state.drop_rate > 0.0 && state.next_f64() < state.drop_rate {
            state.stats.lost += 1;
            return;
        }
        // Under the lock, so two senders' messages reach a mailbox in the order
        // they were counted.
        let delivered = state
            .mailboxes
            .get(&to)
            .is_some_and(|mailbox| E::deliver(mailbox, from, message.clone(), state.delay));
        if delivered {
            state.stats.delivered += 1;
        } else {
            state.stats.undeliverable += 1;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<E::Mailbox>> {
        // Every update is a single insert, removal or counter bump: a panic
        // while holding the lock cannot leave the state inconsistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
