//! The [`Transport`] trait: how the driver reaches the other members.

use std::io;
use std::net::SocketAddr;

use async_trait::async_trait;
use bully_core::wire::{Auth, SetupError, WireStats};
use bully_core::{Message, NodeId};

/// Carries [`Message`]s between members. The driver owns one and is its only user.
///
/// Implement it to run the election over your own network stack (TCP, QUIC, a
/// message bus, a serial line); the crate ships [`UdpTransport`](crate::UdpTransport)
/// and [`MemTransport`](crate::MemTransport). The contract:
///
/// - **Datagram semantics are enough.** The protocol tolerates loss, duplication
///   and reordering; a transport need not retry. A message to a member that is
///   down may be dropped silently (return `Ok`).
/// - **`recv` must be cancel safe.** The driver waits on `recv` in a
///   `tokio::select!` beside its timer and its commands, and drops the future when
///   one of those wins. Dropping it must not lose a message that was already
///   taken off the network (`tokio::net::UdpSocket::recv_from` and
///   `tokio::sync::mpsc::Receiver::recv` are cancel safe).
/// - **`send` should be quick.** The driver awaits each send in turn, so a send
///   that blocks delays the node's timers; bound any connect or write with a
///   timeout.
/// - **`recv` filters its own garbage.** Input that cannot be decoded or
///   authenticated is counted and dropped inside the transport, which then goes on
///   waiting; it is not an error. But it must not wait through an endless stream
///   of garbage: after a bounded number of refusals in a row, return
///   [`TransportError::Refused`], which hands the driver back its loop (to serve
///   its timers) and is not counted as a failure. Return any other error only for
///   a failure of the transport itself: the driver counts it and calls `recv`
///   again (after
///   [`RECV_ERROR_BURST`](crate::RECV_ERROR_BURST) failures in a row, only after
///   its next timer), except after [`TransportError::Closed`], when it stops
///   receiving (and keeps running its timers and sending).
/// - **Senders are identified by the transport.** `recv` returns the member that
///   sent the message; an authenticated transport is what makes that claim true.
///   The node itself drops messages from non-members and from itself.
///
/// A custom transport only has to move [`Message`]s between [`NodeId`]s; here,
/// a two-member link over tokio channels (whose `recv` is cancel safe):
///
/// ```
/// use async_trait::async_trait;
/// use bully_core::{Message, NodeId};
/// use bully_tokio::{Transport, TransportError};
/// use tokio::sync::mpsc::{Receiver, Sender};
///
/// /// Everything sent goes to the one peer.
/// struct Pipe {
///     me: NodeId,
///     peer: NodeId,
///     out: Sender<(NodeId, Message)>,
///     inbox: Receiver<(NodeId, Message)>,
/// }
///
/// #[async_trait]
/// impl Transport for Pipe {
///     async fn send(&mut self, to: NodeId, message: &Message) -> Result<(), TransportError> {
///         if to != self.peer {
///             return Err(TransportError::UnknownMember(to));
///         }
///         // A full or closed pipe is a lost datagram, not an error.
///         let _ = self.out.try_send((self.me, message.clone()));
///         Ok(())
///     }
///
///     async fn recv(&mut self) -> Result<(NodeId, Message), TransportError> {
///         self.inbox.recv().await.ok_or(TransportError::Closed)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bully_core::{Config, Node};
/// let (to_two, from_one) = tokio::sync::mpsc::channel(64);
/// let (to_one, from_two) = tokio::sync::mpsc::channel(64);
/// let members = [NodeId(1), NodeId(2)];
/// let one = Pipe { me: NodeId(1), peer: NodeId(2), out: to_two, inbox: from_two };
/// let two = Pipe { me: NodeId(2), peer: NodeId(1), out: to_one, inbox: from_one };
/// let one = bully_tokio::spawn(Node::new(NodeId(1), members, Config::default())?, one);
/// let _two = bully_tokio::spawn(Node::new(NodeId(2), members, Config::default())?, two);
/// let leader = one.wait_for_leader(std::time::Duration::from_secs(5)).await?;
/// assert_eq!(leader.id, NodeId(2));
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Transport: Send + 'static {
    /// Sends `message` to member `to`.
    async fn send(&mut self, to: NodeId, message: &Message) -> Result<(), TransportError>;

    /// Waits for the next message from a member: `(sender, message)`. Cancel safe.
    async fn recv(&mut self) -> Result<(NodeId, Message), TransportError>;

    /// How much input this transport has received and refused so far (garbage,
    /// forgeries, replays): reported in [`DriverStats::transport_dropped`](crate::DriverStats::transport_dropped).
    /// The default says none.
    fn dropped(&self) -> u64 {
        0
    }

    /// The wire codec's counters (frames refused by reason), for a transport that
    /// speaks [`bully_core::wire`]: reported in
    /// [`DriverStats::wire`](crate::DriverStats::wire). The default has none.
    fn wire_stats(&self) -> Option<WireStats> {
        None
    }

    /// Starts reaching `member`, added to the cluster at runtime, at `address`
    /// ([`Handle::add_member`](crate::Handle::add_member) calls it before the node
    /// hears of the member). The default refuses with
    /// [`TransportError::Unsupported`].
    fn add_peer(&mut self, member: NodeId, address: SocketAddr) -> Result<(), TransportError> {
        let _ = (member, address);
        Err(TransportError::Unsupported("adding a peer"))
    }

    /// Stops reaching `member`, removed from the cluster, and refuses what it
    /// sends ([`Handle::remove_member`](crate::Handle::remove_member) calls it
    /// after the node has removed it, so the node sends it nothing more anyway).
    /// The default does nothing.
    fn remove_peer(&mut self, member: NodeId) -> Result<(), TransportError> {
        let _ = member;
        Ok(())
    }

    /// Sends to `member`, already a member, at `address` from now on: it moved
    /// (its host name resolves to a new address), or its address was not known
    /// until now ([`Handle::set_member_address`](crate::Handle::set_member_address)
    /// calls it). What the member sends is accepted from any source address, as
    /// before. The default refuses with [`TransportError::Unsupported`].
    fn set_peer_address(
        &mut self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), TransportError> {
        let _ = (member, address);
        Err(TransportError::Unsupported("changing a peer's address"))
    }

    /// Replaces the keys that authenticate frames, one step of a rotation (see
    /// [`Auth`]). The default refuses with [`TransportError::Unsupported`]: the
    /// transport does not authenticate.
    fn set_auth(&mut self, auth: Auth) -> Result<(), TransportError> {
        let _ = auth;
        Err(TransportError::Unsupported("setting keys"))
    }
}

/// A transport's failure to send or receive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The transport has no address or route for this member.
    #[error("no route to member {0}")]
    UnknownMember(NodeId),
    /// The message cannot be carried by this transport (too large, or of a kind
    /// its encoding does not support).
    #[error("message cannot be encoded: {0}")]
    Encode(String),
    /// An I/O error from the underlying network.
    #[error("transport I/O error: {0}")]
    Io(#[from] io::Error),
    /// The transport will never deliver another message.
    #[error("the transport is closed")]
    Closed,
    /// Not a failure: `recv` refused this many datagrams in a row (forgeries,
    /// garbage, replays) and returns so that the driver can serve its timers
    /// before it waits again. The driver does not count it as an error.
    #[error("{0} datagrams refused in a row")]
    Refused(u32),
    /// The transport does not support the operation named.
    #[error("the transport does not support {0}")]
    Unsupported(&'static str),
    /// A peer or key change the codec refused.
    #[error(transparent)]
    Setup(#[from] SetupError),
}
