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

/// An in-process network: every member that [`join`](ChannelNetwork::join)s gets a
/// [`ChannelTransport`] with its own mailbox, and messages travel through std
/// channels, instantly and in order. Cheap to clone (clones share the network).
///
/// Faults, as in raft-rs's test network: [`cut`](ChannelNetwork::cut) a link one
/// way, [`partition`](ChannelNetwork::partition) two groups,
/// [`isolate`](ChannelNetwork::isolate) a member (to the others, a crash), and
/// [`heal`](ChannelNetwork::heal) everything. A message to a member that has not
/// joined, or across a cut, is dropped and counted, like a datagram to a dead host.
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
///         bully_std::spawn(node, network.join(id))
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

#[derive(Debug, Default)]
struct Net {
    mailboxes: BTreeMap<NodeId, Sender<Datagram>>,
    /// Directed links that drop everything.
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Members cut off from everyone, both ways.
    isolated: BTreeSet<NodeId>,
    delivered: u64,
    dropped: u64,
}

impl ChannelNetwork {
    /// An empty network.
    pub fn new() -> ChannelNetwork {
        ChannelNetwork::default()
    }

    fn net(&self) -> std::sync::MutexGuard<'_, Net> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connects member `id` and returns its transport. Joining again (a restart)
    /// gives a fresh mailbox; the previous transport of `id` then receives nothing
    /// and its `recv` errors.
    pub fn join(&self, id: NodeId) -> ChannelTransport {
        let (sender, inbox) = mpsc::channel();
        self.net().mailboxes.insert(id, sender);
        ChannelTransport {
            id,
            network: self.clone(),
            inbox: Mutex::new(inbox),
        }
    }

    /// Drops every message from `from` to `to` (one way) until [`heal`](Self::heal).
    pub fn cut(&self, from: NodeId, to: NodeId) {
        self.net().cut.insert((from, to));
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

    /// Messages handed to a mailbox so far.
    pub fn delivered(&self) -> u64 {
        self.net().delivered
    }

    /// Messages dropped so far: across a cut, or to a member that is not there.
    pub fn dropped(&self) -> u64 {
        self.net().dropped
    }

    fn deliver(&self, from: NodeId, to: NodeId, message: &Message) {
        let mut net = self.net();
        let blocked = net.isolated.contains(&from)
            || net.isolated.contains(&to)
            || net.cut.contains(&(from, to));
        let sent = !blocked
            && net
                .mailboxes
                .get(&to)
                .is_some_and(|mailbox| mailbox.send((from, message.clone())).is_ok());
        if sent {
            net.delivered += 1;
        } else {
            net.dropped += 1;
        }
    }
}

/// One member's link to a [`ChannelNetwork`], from [`ChannelNetwork::join`].
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
                format!("member {} rejoined the network elsewhere", self.id),
            )),
        }
    }
}
