//! [`MemTransport`], the endpoint of an in-process [`MemNetwork`] with fault
//! controls, for tests and demos. The network and its faults are written once
//! (`bully_sim::MemNetwork`), bully-std's too; this is tokio's side of
//! it: a tokio channel per mailbox, delays slept on tokio's clock.

use std::time::Duration;

use async_trait::async_trait;
use bully_core::{Message, NodeId};
use bully_sim::MemEndpoint;
use tokio::sync::mpsc;

use crate::transport::{Transport, TransportError};

pub use bully_sim::MemStats;

/// An in-process network connecting [`MemTransport`]s, with controls to drop,
/// delay and partition their traffic (see
/// [`bully_sim::MemNetwork`] for every control). Clones share the same
/// network.
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
pub type MemNetwork = bully_sim::MemNetwork<MemTransport>;

type Mailbox = mpsc::UnboundedSender<(NodeId, Message)>;

/// One member's attachment to a [`MemNetwork`], from
/// [`MemNetwork::endpoint`](bully_sim::MemNetwork::endpoint).
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

impl MemEndpoint for MemTransport {
    type Mailbox = Mailbox;

    fn open(network: MemNetwork, id: NodeId) -> (Mailbox, MemTransport) {
        let (mailbox, inbox) = mpsc::unbounded_channel();
        let endpoint = MemTransport { id, network, inbox };
        (mailbox, endpoint)
    }

    fn deliver(mailbox: &Mailbox, from: NodeId, message: Message, delay: Duration) -> bool {
        if mailbox.is_closed() {
            return false;
        }
        if delay.is_zero() {
            let _ = mailbox.send((from, message));
        } else {
            let mailbox = mailbox.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = mailbox.send((from, message));
            });
        }
        true
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
