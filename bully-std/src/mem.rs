//! [`MemTransport`], the endpoint of an in-process [`MemNetwork`] with fault
//! controls, for tests. The network and its faults are written once
//! (`bully_sim::MemNetwork`), bully-tokio's too; this is the threads'
//! side of it: a std channel per mailbox, a delay slept by the receiving thread.
//!
//! This is test scaffolding, not part of the model: it uses std's types even
//! under loom.

use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bully_core::{Message, NodeId};
use bully_sim::MemEndpoint;

use crate::transport::Transport;

pub use bully_sim::MemStats;

/// An in-process network: every member gets a [`MemTransport`] with its own
/// mailbox from [`endpoint`](bully_sim::MemNetwork::endpoint), and
/// messages travel through std channels, in order. Cheap to clone (clones share
/// the network). The same type, and the same controls, as bully-tokio's
/// `MemNetwork` (see [`bully_sim::MemNetwork`] for every control).
///
/// Faults, as in raft-rs's test network: `partition` two groups (or
/// `partition_oneway`), `isolate` a member (to the others, a crash), `repair`
/// or `heal`, `set_drop_rate`, `set_delay`. A message across a partition, or to
/// a member with no endpoint, is dropped and counted, like a datagram to a dead
/// host.
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId};
/// use bully_std::MemNetwork;
///
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// let network = MemNetwork::new();
/// let handles: Vec<_> = members
///     .iter()
///     .map(|&id| {
///         let node = Node::new(id, members, Config::default()).unwrap();
///         bully_std::spawn(node, network.endpoint(id))
///     })
///     .collect();
/// for handle in &handles {
///     let leader = handle.wait_for_leader(Duration::from_secs(30)).unwrap();
///     assert_eq!(leader.id, NodeId(3));
/// }
/// ```
pub type MemNetwork = bully_sim::MemNetwork<MemTransport>;

/// A message, with when it may be received (after the network's delay).
type Datagram = (Instant, NodeId, Message);

/// One member's link to a [`MemNetwork`], from
/// [`MemNetwork::endpoint`](bully_sim::MemNetwork::endpoint).
#[derive(Debug)]
pub struct MemTransport {
    id: NodeId,
    network: MemNetwork,
    inbox: Mutex<Inbox>,
}

#[derive(Debug)]
struct Inbox {
    receiver: Receiver<Datagram>,
    /// A message taken off the channel whose delay had not passed when `recv`
    /// had to return: the next `recv` hands it out first, so order is kept.
    held: Option<Datagram>,
}

impl MemTransport {
    /// The member this transport sends as.
    pub fn id(&self) -> NodeId {
        self.id
    }
}

impl MemEndpoint for MemTransport {
    type Mailbox = Sender<Datagram>;

    fn open(network: MemNetwork, id: NodeId) -> (Sender<Datagram>, MemTransport) {
        let (mailbox, receiver) = mpsc::channel();
        let inbox = Mutex::new(Inbox {
            receiver,
            held: None,
        });
        (mailbox, MemTransport { id, network, inbox })
    }

    fn deliver(
        mailbox: &Sender<Datagram>,
        from: NodeId,
        message: Message,
        delay: Duration,
    ) -> bool {
        let now = Instant::now();
        let due = now.checked_add(delay).unwrap_or(now);
        mailbox.send((due, from, message)).is_ok()
    }
}

impl Transport for MemTransport {
    fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
        self.network.deliver(self.id, to, message);
        Ok(())
    }

    fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
        let deadline = Instant::now().checked_add(timeout);
        let mut inbox = self.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        let next = match inbox.held.take() {
            Some(held) => held,
            None => match inbox.receiver.recv_timeout(timeout) {
                Ok(datagram) => datagram,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotConnected,
                        format!("member {} was detached or has a newer endpoint", self.id),
                    ));
                }
            },
        };
        let now = Instant::now();
        let wait = next.0.saturating_duration_since(now);
        let left = deadline.map_or(Duration::MAX, |deadline| {
            deadline.saturating_duration_since(now)
        });
        if wait > left {
            // Not due within this call: keep it for the next.
            inbox.held = Some(next);
            std::thread::sleep(left);
            return Ok(None);
        }
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let (_, from, message) = next;
        Ok(Some((from, message)))
    }

    /// The network routes by id: a new member needs no address.
    fn add_peer(&self, _member: NodeId, _address: std::net::SocketAddr) -> io::Result<()> {
        Ok(())
    }

    /// Members are reached by id on the in-memory network: an address means
    /// nothing here, so every change is accepted.
    fn set_peer_address(&self, _member: NodeId, _address: std::net::SocketAddr) -> io::Result<()> {
        Ok(())
    }
}
