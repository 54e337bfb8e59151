//! [`UdpTransport`]: std's UDP sockets carrying authenticated
//! [`bully_core::wire`] frames.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bully_core::wire::{Auth, Codec, WireStats};
use bully_core::{Message, NodeId};

use crate::transport::Transport;

/// Why a [`UdpTransport`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UdpSetupError {
    /// A member of the codec's cluster has no address.
    #[error("member {0} has no address")]
    MissingPeer(NodeId),
    /// An address was given for an id that is not a member.
    #[error("{0} is not a member")]
    NotMember(NodeId),
    /// The socket could not be set up.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A [`Transport`] over a [`UdpSocket`]: one datagram per message, each a
/// [`bully_core::wire`] frame.
///
/// The [`Codec`] authenticates every frame (HMAC-SHA256 with the cluster key,
/// when built with [`Auth::Hmac`](bully_core::wire::Auth::Hmac)) and refuses
/// anything forged, replayed, misaddressed, from another cluster or malformed:
/// such datagrams are dropped, never passed to the node, and counted in
/// [`wire_stats`](UdpTransport::wire_stats) (see [`WireStats::rejected`]) and
/// reported to the driver as [`Transport::dropped`]. A peer is known by
/// the id its frames prove, not by the address they come from; the addresses are
/// only where to send.
///
/// ```no_run
/// use std::net::UdpSocket;
/// use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
/// use bully_core::{Config, Node, NodeId};
/// use bully_std::UdpTransport;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// let peers = [
///     (NodeId(2), "10.0.0.2:7000".parse()?),
///     (NodeId(3), "10.0.0.3:7000".parse()?),
/// ];
/// // 32 random bytes from your secret store, the same on every member.
/// let secret = std::fs::read("/etc/bully/cluster.key")?;
/// let auth = Auth::hmac(Key::new(KeyId(1), &secret)?);
/// let incarnation = Incarnation::from_duration_since_epoch(std::time::UNIX_EPOCH.elapsed()?);
/// let codec = Codec::new(ClusterId(0x5eed), NodeId(1), incarnation, members, auth)?;
///
/// let transport = UdpTransport::new(UdpSocket::bind("0.0.0.0:7000")?, codec, peers)?;
/// let node = Node::new(NodeId(1), members, Config::default())?;
/// let handle = bully_std::spawn(node, transport);
/// # Ok(()) }
/// ```
pub struct UdpTransport {
    socket: UdpSocket,
    id: NodeId,
    /// Where to send; changed at runtime by `add_peer`, `remove_peer` and
    /// `set_peer_address`.
    peers: Mutex<BTreeMap<NodeId, SocketAddr>>,
    /// The codec numbers what it sends and remembers what it accepted: both
    /// threads use it, each briefly.
    codec: Mutex<Codec>,
    /// The driver thread's frame buffer, reused.
    send_buf: Mutex<Vec<u8>>,
    /// The receiver thread's datagram buffer, reused, and the read timeout the
    /// socket has (set again only when it changes).
    recv_state: Mutex<RecvState>,
}

struct RecvState {
    buf: Vec<u8>,
    timeout: Option<Duration>,
}

impl fmt::Debug for UdpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpTransport")
            .field("id", &self.id)
            .field("local_addr", &self.socket.local_addr().ok())
            .field("peers", &self.peers())
            .finish_non_exhaustive()
    }
}

impl UdpTransport {
    /// A transport for the node of `codec`, on `socket`, sending to `peers`: an
    /// address for every other member of the codec's cluster (an entry for this
    /// node itself is ignored, so the whole address book can be passed).
    ///
    /// Errors if a member has no address, or an address names a non-member.
    pub fn new(
        socket: UdpSocket,
        codec: Codec,
        peers: impl IntoIterator<Item = (NodeId, SocketAddr)>,
    ) -> Result<UdpTransport, UdpSetupError> {
        let id = codec.id();
        let peers: BTreeMap<NodeId, SocketAddr> =
            peers.into_iter().filter(|&(peer, _)| peer != id).collect();
        if let Some(&stranger) = peers
            .keys()
            .find(|&&peer| codec.members().binary_search(&peer).is_err())
        {
            return Err(UdpSetupError::NotMember(stranger));
        }
        if let Some(&missing) = codec
            .members()
            .iter()
            .find(|&&member| member != id && !peers.contains_key(&member))
        {
            return Err(UdpSetupError::MissingPeer(missing));
        }
        socket.set_nonblocking(false)?;
        // One byte more than the largest frame: a longer datagram is truncated by
        // the socket, and the codec refuses it as too large instead of misreading it.
        let buf = vec![0; codec.max_frame_len() + 1];
        Ok(UdpTransport {
            socket,
            id,
            peers: Mutex::new(peers),
            codec: Mutex::new(codec),
            send_buf: Mutex::new(Vec::new()),
            recv_state: Mutex::new(RecvState { buf, timeout: None }),
        })
    }

    /// The member this transport sends as.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Where each peer is sent to (a copy: peers can change at runtime).
    pub fn peers(&self) -> BTreeMap<NodeId, SocketAddr> {
        self.table().clone()
    }

    /// The codec's counters: frames encoded and accepted, and the datagrams
    /// dropped by reason ([`WireStats::rejected`] sums them).
    pub fn wire_stats(&self) -> WireStats {
        self.codec().stats()
    }

    /// The codec, which both threads use, each briefly.
    fn codec(&self) -> MutexGuard<'_, Codec> {
        self.codec.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where to send.
    fn table(&self) -> MutexGuard<'_, BTreeMap<NodeId, SocketAddr>> {
        self.peers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A change the codec refused, as the transport's error.
fn refused(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, error)
}

impl Transport for UdpTransport {
    fn send(&self, to: NodeId, message: &Message) -> io::Result<()> {
        let addr = self.table().get(&to).copied();
        let Some(addr) = addr else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no address for member {to}"),
            ));
        };
        let mut buf = self.send_buf.lock().unwrap_or_else(PoisonError::into_inner);
        self.codec()
            .encode(to, message, &mut buf)
            .map_err(io::Error::other)?;
        self.socket.send_to(&buf, addr)?;
        Ok(())
    }

    /// Waits for one datagram. A datagram the codec refuses is dropped and counted,
    /// and `recv` returns `Ok(None)` at once rather than waiting out the rest of
    /// `timeout`.
    fn recv(&self, timeout: Duration) -> io::Result<Option<(NodeId, Message)>> {
        let mut state = self
            .recv_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A zero read timeout is refused by the OS.
        let timeout = timeout.max(Duration::from_millis(1));
        if state.timeout != Some(timeout) {
            self.socket.set_read_timeout(Some(timeout))?;
            state.timeout = Some(timeout);
        }
        let len = match self.socket.recv_from(&mut state.buf) {
            Ok((len, _from)) => len,
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let decoded = self.codec().decode(&state.buf[..len]);
        Ok(decoded.ok())
    }

    /// Every datagram the codec refused ([`WireStats::rejected`]).
    fn dropped(&self) -> u64 {
        self.wire_stats().rejected()
    }

    fn wire_stats(&self) -> Option<WireStats> {
        Some(self.codec().stats())
    }

    fn add_peer(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        self.codec().add_member(member).map_err(refused)?;
        self.table().insert(member, address);
        Ok(())
    }

    fn remove_peer(&self, member: NodeId) -> io::Result<()> {
        self.codec().remove_member(member).map_err(refused)?;
        self.table().remove(&member);
        Ok(())
    }

    fn set_peer_address(&self, member: NodeId, address: SocketAddr) -> io::Result<()> {
        let codec = self.codec();
        if member == codec.id() || codec.members().binary_search(&member).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{member} is not a peer"),
            ));
        }
        drop(codec);
        self.table().insert(member, address);
        Ok(())
    }

    fn set_auth(&self, auth: Auth) -> io::Result<()> {
        self.codec().set_auth(auth).map_err(refused)
    }
}
