//! The [`Transport`] trait: how the driver reaches the other members.

use std::io;

use async_trait::async_trait;
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
///   waiting; it is not an error. Return an error only for a failure of the
///   transport itself: the driver counts it and calls `recv` again (after
///   [`RECV_ERROR_BURST`](crate::RECV_ERROR_BURST) failures in a row, only after
///   its next timer), except after [`TransportError::Closed`], when it stops
///   receiving (and keeps running its timers and sending).
/// - **Senders are identified by the transport.** `recv` returns the member that
///   sent the message; an authenticated transport is what makes that claim true.
///   The node itself drops messages from non-members and from itself.
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
}
