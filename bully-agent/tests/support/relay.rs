//! A UDP relay in the test process, to cut links between agents on 127.0.0.1
//! without root (no iptables, no namespaces).
//!
//! Every directed link `i -> j` gets a socket of its own in the relay: agent `i`'s
//! configuration names that socket's address as member `j`'s address, and the
//! relay forwards what arrives there to `j`'s real address. So `i -> j` and
//! `j -> i` are two sockets, and the test can cut either, or both, by dropping at
//! the relay.
//!
//! This works because the agent's transport (bully-tokio's `UdpTransport`) learns
//! who sent a datagram from the authenticated frame, never from its source
//! address, and sends its replies to the address its own configuration gives for
//! the sender: `j` answers `i` through the socket of the link `j -> i`, which the
//! relay forwards to `i`'s real address.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One directed link's socket and switches.
#[derive(Debug)]
struct Link {
    /// Where the sender of the link sends (its configuration's address for the
    /// receiver).
    address: SocketAddr,
    /// When set, datagrams are dropped.
    cut: Arc<AtomicBool>,
    /// Datagrams passed on.
    forwarded: Arc<AtomicU64>,
    /// Datagrams dropped while the link was cut.
    dropped: Arc<AtomicU64>,
}

/// The relay: one forwarding task per directed link, on a small tokio runtime of
/// its own, so the tests that use it can stay synchronous. Dropping the relay
/// stops every task and closes every socket.
#[derive(Debug)]
pub(crate) struct Relay {
    links: BTreeMap<(u64, u64), Link>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Relay {
    /// Binds a socket on 127.0.0.1 (a port the OS picks) for every ordered pair
    /// of distinct members of `targets` (member id -> its real UDP address), and
    /// starts forwarding.
    pub(crate) fn start(targets: &BTreeMap<u64, SocketAddr>) -> Relay {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("relay")
            .enable_io()
            .build()
            .expect("the relay's runtime");
        let mut links = BTreeMap::new();
        for &from in targets.keys() {
            for (&to, &target) in targets {
                if from == to {
                    continue;
                }
                let socket = runtime
                    .block_on(tokio::net::UdpSocket::bind("127.0.0.1:0"))
                    .expect("bind a relay socket");
                let link = Link {
                    address: socket.local_addr().expect("relay socket address"),
                    cut: Arc::new(AtomicBool::new(false)),
                    forwarded: Arc::new(AtomicU64::new(0)),
                    dropped: Arc::new(AtomicU64::new(0)),
                };
                let (cut, forwarded, dropped) = (
                    link.cut.clone(),
                    link.forwarded.clone(),
                    link.dropped.clone(),
                );
                runtime.spawn(async move {
                    // Larger than any frame: an oversized datagram still arrives
                    // whole and the agent counts it.
                    let mut buf = vec![0u8; 65_536];
                    loop {
                        let Ok((len, _source)) = socket.recv_from(&mut buf).await else {
                            continue;
                        };
                        if cut.load(Ordering::SeqCst) {
                            dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        // A receiver that is down is not the relay's business: UDP
                        // loses the datagram, as the network would.
                        if socket.send_to(&buf[..len], target).await.is_ok() {
                            forwarded.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
                links.insert((from, to), link);
            }
        }
        Relay {
            links,
            runtime: Some(runtime),
        }
    }

    fn link(&self, from: u64, to: u64) -> &Link {
        self.links
            .get(&(from, to))
            .unwrap_or_else(|| panic!("no relay link {from} -> {to}"))
    }

    /// The address member `from` must use for member `to`.
    pub(crate) fn address(&self, from: u64, to: u64) -> SocketAddr {
        self.link(from, to).address
    }

    /// Drops everything on `from -> to` from now on.
    pub(crate) fn cut(&self, from: u64, to: u64) {
        self.link(from, to).cut.store(true, Ordering::SeqCst);
    }

    /// Forwards `from -> to` again.
    pub(crate) fn heal(&self, from: u64, to: u64) {
        self.link(from, to).cut.store(false, Ordering::SeqCst);
    }

    /// Cuts every link to and from `id`: it hears nobody and nobody hears it.
    pub(crate) fn isolate(&self, id: u64) {
        for &(from, to) in self.links.keys() {
            if from == id || to == id {
                self.cut(from, to);
            }
        }
    }

    /// Heals every link.
    pub(crate) fn heal_all(&self) {
        for &(from, to) in self.links.keys() {
            self.heal(from, to);
        }
    }

    /// Datagrams forwarded on `from -> to` so far.
    pub(crate) fn forwarded(&self, from: u64, to: u64) -> u64 {
        self.link(from, to).forwarded.load(Ordering::Relaxed)
    }

    /// Datagrams dropped on `from -> to` so far.
    pub(crate) fn dropped(&self, from: u64, to: u64) -> u64 {
        self.link(from, to).dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
