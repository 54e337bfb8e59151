//! A `MemTransport` with the faults `MemNetwork` lacks: loss (a share of
//! datagrams dropped, drawn from a seeded generator) and freezes (every message
//! to or from a member held, then delivered late, in order, once it thaws).

use std::collections::{BTreeSet, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bully_core::{Message, NodeId};
use bully_std::{MemTransport, Transport};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The faults every [`FaultyTransport`] of one cluster obeys, set by the test
/// while the cluster runs. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Faults(Arc<State>);

#[derive(Debug, Default)]
struct State {
    /// Per mille of datagrams dropped.
    loss: AtomicU32,
    frozen: Mutex<BTreeSet<NodeId>>,
    lost: AtomicU64,
    held: AtomicU64,
}

impl Faults {
    /// Drops `per_mille` of every thousand datagrams from now on (0: none).
    pub(crate) fn set_loss(&self, per_mille: u32) {
        self.0.loss.store(per_mille.min(1000), Ordering::Relaxed);
    }

    /// Holds every message to or from `id` until [`thaw`](Self::thaw): to the
    /// others it is paused, and to it they are.
    pub(crate) fn freeze(&self, id: NodeId) {
        lock(&self.0.frozen).insert(id);
    }

    /// Lets `id`'s messages go again: what was held is delivered, late.
    pub(crate) fn thaw(&self, id: NodeId) {
        lock(&self.0.frozen).remove(&id);
    }

    /// Datagrams dropped by the loss so far.
    pub(crate) fn lost(&self) -> u64 {
        self.0.lost.load(Ordering::Relaxed)
    }

    /// Messages held by a freeze so far.
    pub(crate) fn held(&self) -> u64 {
        self.0.held.load(Ordering::Relaxed)
    }

    fn is_frozen(&self, id: NodeId) -> bool {
        lock(&self.0.frozen).contains(&id)
    }
}

/// One member's [`MemTransport`], obeying [`Faults`]. What it sends to or
/// from a frozen member waits in its own queue and goes, in order, at its first
/// send or receive after the thaw (the receiver thread receives every few
/// milliseconds).
pub(crate) struct FaultyTransport {
    inner: MemTransport,
    faults: Faults,
    rng: Mutex<ChaCha8Rng>,
    held: Mutex<VecDeque<(NodeId, Message)>>,
}

impl FaultyTransport {
    /// `inner` obeying `faults`, its losses drawn from a generator seeded with
    /// `seed`.
    pub(crate) fn new(inner: MemTransport, faults: Faults, seed: u64) -> FaultyTransport {
        FaultyTransport {
            inner,
            faults,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            held: Mutex::new(VecDeque::new()),
        }
    }

    fn frozen(&self, to: NodeId) -> bool {
        self.faults.is_frozen(self.inner.id()) || self.faults.is_frozen(to)
    }

    fn lose(&self) -> bool {
        let per_mille = self.faults.0.loss.load(Ordering::Relaxed);
        per_mille > 0 && lock(&self.rng).random_range(0..1000) < per_mille
    }

    /// Sends what was held for links that are no longer frozen, in the order it
    /// was sent.
    fn release(&self) -> io::Result<()> {
        let mut held = lock(&self.held);
        let mut still = VecDeque::new();
        while let Some((to, message)) = held.pop_front() {
            if self.frozen(to) {
                still.push_back((to, message));
            } else {
                self.inner.send(to, &message)?;
            }
        }
        *held = still;
        Ok(())
    }
}

impl Transport for FaultyTransport {
    fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
        self.release()?;
        if self.frozen(to) {
            self.faults.0.held.fetch_add(1, Ordering::Relaxed);
            lock(&self.held).push_back((to, message.clone()));
            return Ok(());
        }
        if self.lose() {
            // As a datagram: the send succeeds, nothing arrives.
            self.faults.0.lost.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.inner.send(to, message)
    }

    fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
        self.release()?;
        self.inner.recv(timeout)
    }

    fn add_peer(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        self.inner.add_peer(member, address)
    }
}
