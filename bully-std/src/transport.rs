//! [`Transport`]: how a driver reaches the other members.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bully_core::wire::{Auth, WireStats};
use bully_core::{Message, NodeId};

/// A blocking, datagram-like link to the other members of the cluster.
///
/// [`spawn`](crate::spawn) shares one transport between two threads: the driver
/// thread calls [`send`](Transport::send) and a receiver thread calls
/// [`recv`](Transport::recv) in a loop, hence `&self` and `Send + Sync`.
///
/// Delivery is best effort, as with UDP: a message may be lost, and the protocol
/// copes (it has timeouts for that). A transport drops what it cannot read or
/// authenticate, and counts it, rather than returning an error for it.
///
/// Implementations in this crate: [`UdpTransport`](crate::UdpTransport) (real
/// sockets, authenticated frames) and [`MemTransport`](crate::MemTransport)
/// (an in-process network for tests).
///
/// A custom transport (a serial bus, a message broker) only has to move
/// [`Message`]s between [`NodeId`]s:
///
/// ```
/// use std::io;
/// use std::sync::Mutex;
/// use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
/// use std::time::Duration;
/// use bully_core::{Message, NodeId};
/// use bully_std::Transport;
///
/// /// A two-member link: everything sent goes to the one peer.
/// struct Pipe {
///     peer: NodeId,
///     me: NodeId,
///     out: Mutex<Sender<(NodeId, Message)>>,
///     inbox: Mutex<Receiver<(NodeId, Message)>>,
/// }
///
/// impl Transport for Pipe {
///     fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
///         if to == self.peer {
///             // A closed pipe is a lost datagram, not an error.
///             let _ = self.out.lock().unwrap().send((self.me, message.clone()));
///         }
///         Ok(())
///     }
///
///     fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
///         match self.inbox.lock().unwrap().recv_timeout(timeout) {
///             Ok(received) => Ok(Some(received)),
///             Err(RecvTimeoutError::Timeout) => Ok(None),
///             Err(RecvTimeoutError::Disconnected) => Err(io::ErrorKind::BrokenPipe.into()),
///         }
///     }
/// }
/// ```
pub trait Transport: Send + Sync + 'static {
    /// Sends `message` to member `to`, without waiting for it to be delivered.
    ///
    /// An `Err` is a local failure (the socket is broken); the driver counts it in
    /// [`DriverStats::send_errors`](crate::DriverStats::send_errors) and carries on, as it
    /// would for a lost datagram.
    fn send(&self, to: NodeId, message: &Message) -> io::Result<()>;

    /// Waits at most `timeout` for the next message from a member: `Ok(None)` if
    /// none came in time.
    ///
    /// The receiver thread calls it in a loop and checks for shutdown between
    /// calls, so it must return within about `timeout`. An `Err` is counted in
    /// [`DriverStats::recv_errors`](crate::DriverStats::recv_errors) and the thread backs off
    /// for `timeout` before it tries again.
    fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>>;

    /// How much input this transport has received and refused so far (garbage,
    /// forgeries, replays): reported in
    /// [`DriverStats::transport_dropped`](crate::DriverStats::transport_dropped).
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
    /// hears of the member). The default refuses (`ErrorKind::Unsupported`).
    fn add_peer(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        let _ = (member, address);
        Err(unsupported("this transport cannot add a peer"))
    }

    /// Stops reaching `member`, removed from the cluster, and refuses what it
    /// sends ([`Handle::remove_member`](crate::Handle::remove_member) calls it
    /// after the node removed it, so the node sends it nothing more anyway). The
    /// default does nothing.
    fn remove_peer(&self, member: NodeId) -> io::Result<()> {
        let _ = member;
        Ok(())
    }

    /// Sends to `member`, already a member, at `address` from now on: it moved
    /// (its host name resolves to a new address), or its address was not known
    /// until now ([`Handle::set_member_address`](crate::Handle::set_member_address)
    /// calls it). What the member sends is accepted from any source address, as
    /// before. The default refuses (`ErrorKind::Unsupported`).
    fn set_peer_address(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        let _ = (member, address);
        Err(unsupported("this transport cannot change a peer's address"))
    }

    /// Replaces the keys that authenticate frames, one step of a rotation (see
    /// [`Auth`]). The default refuses (`ErrorKind::Unsupported`): the transport
    /// does not authenticate.
    fn set_auth(&self, auth: Auth) -> io::Result<()> {
        let _ = auth;
        Err(unsupported("this transport has no keys"))
    }
}

/// What a default method answers: the transport cannot do what was asked.
fn unsupported(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, what)
}

/// A transport behind a pointer is a transport: keep an `Arc` clone to read a
/// transport's counters while the driver runs, or box one to choose it at run
/// time.
macro_rules! forward_transport {
    ($($pointer:ident),*) => {$(
        impl<T: Transport + ?Sized> Transport for $pointer<T> {
            fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
                (**self).send(to, message)
            }

            fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
                (**self).recv(timeout)
            }

            fn dropped(&self) -> u64 {
                (**self).dropped()
            }

            fn wire_stats(&self) -> Option<WireStats> {
                (**self).wire_stats()
            }

            fn add_peer(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
                (**self).add_peer(member, address)
            }

            fn remove_peer(&self, member: NodeId) -> io::Result<()> {
                (**self).remove_peer(member)
            }

            fn set_peer_address(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
                (**self).set_peer_address(member, address)
            }

            fn set_auth(&self, auth: Auth) -> io::Result<()> {
                (**self).set_auth(auth)
            }
        }
    )*};
}

forward_transport!(Arc, Box);
