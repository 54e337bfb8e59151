//! A datagram socket that loses a share of what it sends, drawn from a seeded
//! generator, so a lossy run replays exactly under the same seed.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bully_tokio::DatagramSocket;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The share of datagrams every [`LossySocket`] of a cluster drops, in per
/// mille; the test turns it up and down while the cluster runs. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Loss(Arc<AtomicU32>);

impl Loss {
    /// Drops `per_mille` of every thousand datagrams from now on (0: none).
    pub(crate) fn set(&self, per_mille: u32) {
        self.0.store(per_mille.min(1000), Ordering::Relaxed);
    }

    fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// `S`, except that each datagram sent is dropped with the probability [`Loss`]
/// says (a send that "succeeds" but never arrives, as UDP's do).
pub(crate) struct LossySocket<S> {
    inner: S,
    loss: Loss,
    rng: Mutex<ChaCha8Rng>,
    dropped: Arc<AtomicU32>,
}

impl<S> LossySocket<S> {
    /// `inner` losing what `loss` says, drawn from a generator seeded with `seed`;
    /// each drop is counted in `dropped`.
    pub(crate) fn new(inner: S, loss: Loss, seed: u64, dropped: Arc<AtomicU32>) -> Self {
        LossySocket {
            inner,
            loss,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            dropped,
        }
    }

    fn lose(&self) -> bool {
        let per_mille = self.loss.get();
        // Draw even at 0 % so that turning loss on later does not shift the draws
        // that decide which datagrams go.
        let draw = self
            .rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .random_range(0..1000);
        draw < per_mille
    }
}

#[async_trait]
impl<S: DatagramSocket> DatagramSocket for LossySocket<S> {
    async fn send_to(&self, datagram: &[u8], target: SocketAddr) -> io::Result<usize> {
        if self.lose() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(datagram.len());
        }
        self.inner.send_to(datagram, target).await
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.recv_from(buf).await
    }
}
