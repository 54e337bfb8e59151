//! [`ChannelNetwork`] and [`ChannelTransport`]: an in-process network for tests.
//!
//! This is test scaffolding, not part of the model: it uses std's types even
//! under loom.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bully_core::{Message, NodeId};

use crate::transport::Transport;

type Datagram = (NodeId, Message);

/// An in-process network: every member gets a [`ChannelTransport`] with its own
/// mailbox from [`endpoint`](ChannelNetwork::endpoint), and messages travel
/// through std channels, instantly and in order. Cheap to clone (clones share the
/// network). (The same controls as bully-tokio's `MemNetwork`.)
///
/// Faults, as in raft-rs's test network: [`partition`](ChannelNetwork::partition)
/// two groups (or [`partition_oneway`](ChannelNetwork::partition_oneway)),
/// [`isolate`](ChannelNetwork::isolate) a member (to the others, a crash),
/// [`repair`](ChannelNetwork::repair) or [`heal`](ChannelNetwork::heal). A message
/// across a partition, or to a member with no endpoint, is dropped and counted,
/// like a datagram to a dead host.
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Config, Node, NodeId};
/// use bully_std::ChannelNetwork;
///
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// let network = ChannelNetwork::new();
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
#[derive(Clone, Debug, Default)]
pub struct ChannelNetwork {
    shared: Arc<Mutex<Net>>,
}

/// Counters of a [`ChannelNetwork`]'s traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelStats {
    /// Messages handed to a mailbox.
    pub delivered: u64,
    /// Messages dropped by a partition or an isolation.
    pub blocked: u64,
    /// Messages to a member with no live endpoint (stopped, or never started).
    pub undeliverable: u64,
}

#[derive(Debug, Default)]
struct Net {
    mailboxes: BTreeMap<NodeId, Sender<Datagram>>,
    /// Directed links that drop everything.
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Members cut off from everyone, both ways.
    isolated: BTreeSet<NodeId>,
    stats: ChannelStats,
}

impl ChannelNetwork {
    /// An empty network.
    pub fn new() -> ChannelNetwork {
        ChannelNetwork::default()
    }

    fn net(&self) -> std::sync::MutexGuard<'_, Net> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connects member `id` and returns its transport. A second endpoint for the
    /// same id (a restart) gets a fresh mailbox; the previous one then receives
    /// nothing and its `recv` errors.
    pub fn endpoint(&self, id: NodeId) -> ChannelTransport {
        let (sender, inbox) = mpsc::channel();
        self.net().mailboxes.insert(id, sender);
        ChannelTransport {
            id,
            network: self.clone(),
            inbox: Mutex::new(inbox),
        }
    }

    /// Drops every message from a member of `from` to a member of `to` (one way).
    pub fn partition_oneway(&self, from: &[NodeId], to: &[NodeId]) {
        let mut net = self.net();
        for &x in from {
            for &y in to {
                net.cut.insert((x, y));
            }
        }
    }

    /// Restores traffic both ways between every member of `a` and every member of
    /// `b` (an isolation stays until [`heal`](Self::heal)).
    pub fn repair(&self, a: &[NodeId], b: &[NodeId]) {
        let mut net = self.net();
        for &x in a {
            for &y in b {
                net.cut.remove(&(x, y));
                net.cut.remove(&(y, x));
            }
        }
    }

    /// Removes member `id`'s mailbox: messages to it are undeliverable until a new
    /// [`endpoint`](Self::endpoint) is made for it.
    pub fn detach(&self, id: NodeId) {
        self.net().mailboxes.remove(&id);
    }

    /// Drops every message between a member of `a` and a member of `b`, both ways.
    pub fn partition(&self, a: &[NodeId], b: &[NodeId]) {
        let mut net = self.net();
        for &x in a {
            for &y in b {
                net.cut.insert((x, y));
                net.cut.insert((y, x));
            }
        }
    }

    /// Drops every message to or from `id`: to the others it has crashed.
    pub fn isolate(&self, id: NodeId) {
        self.net().isolated.insert(id);
    }

    /// Removes every cut, partition and isolation.
    pub fn heal(&self) {
        let mut net = self.net();
        net.cut.clear();
        net.isolated.clear();
    }

    /// The traffic counters.
    pub fn stats(&self) -> ChannelStats {
        self.net().stats
    }

    fn deliver(&self, from: NodeId, to: NodeId, message: &Message) {
        let mut net = self.net();
        let blocked = net.isolated.contains(&from)
            || net.isolated.contains(&to)
            || net.cut.contains(&(from, to));
        if blocked {
            net.stats.blocked += 1;
            return;
        }
        let sent = net
            .mailboxes
            .get(&to)
            .is_some_and(|mailbox| mailbox.send((from, message.clone())).is_ok());
        if sent {
            net.stats.delivered += 1;
        } else {
            net.stats.undeliverable += 1;
        }
    }
}

/// One member's link to a [`ChannelNetwork`], from [`ChannelNetwork::endpoint`].
#[derive(Debug)]
pub struct ChannelTransport {
    id: NodeId,
    network: ChannelNetwork,
    inbox: Mutex<Receiver<Datagram>>,
}

impl ChannelTransport {
    /// The member this transport sends as.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The network it belongs to.
    pub fn network(&self) -> &ChannelNetwork {
        &self.network
    }
}

impl Transport for ChannelTransport {
    fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
        self.network.deliver(self.id, to, message);
        Ok(())
    }

    fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
        let inbox = self.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        match inbox.recv_timeout(timeout) {
            Ok(datagram) => Ok(Some(datagram)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("member {} was detached or has a newer endpoint", self.id),
            )),
        }
    }

    /// The network routes by id: a new member needs no address.
    fn add_peer(&self, _member: NodeId, _address: std::net::SocketAddr) -> io::Result<()> {
        Ok(())
    }
}
