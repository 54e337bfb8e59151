//! [`UdpTransport`]: authenticated frames ([`bully_core::wire`]) over UDP.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;

use async_trait::async_trait;
use bully_core::wire::{Auth, Codec, WireStats};
use bully_core::{Message, NodeId};

use crate::transport::{Transport, TransportError};

/// A datagram socket [`UdpTransport`] can run over: tokio's `UdpSocket`, or a
/// simulated one (turmoil's, in tests).
///
/// Both methods must be cancel safe, as tokio's are.
#[async_trait]
pub trait DatagramSocket: Send + Sync + 'static {
    /// Sends one datagram to `target`.
    async fn send_to(&self, datagram: &[u8], target: SocketAddr) -> io::Result<usize>;
    /// Receives one datagram into `buf`: its length and its source.
    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)>;
}

#[async_trait]
impl DatagramSocket for tokio::net::UdpSocket {
    async fn send_to(&self, datagram: &[u8], target: SocketAddr) -> io::Result<usize> {
        tokio::net::UdpSocket::send_to(self, datagram, target).await
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        tokio::net::UdpSocket::recv_from(self, buf).await
    }
}

/// How many refused datagrams in a row [`UdpTransport`]'s `recv` drops before it
/// returns [`TransportError::Refused`], handing the driver its loop back: a flood
/// of forged frames then costs the node this many decodes between two looks at
/// its timers, never its schedule.
pub const MAX_REFUSED_PER_RECV: u32 = 64;

/// One [`bully_core::wire`] frame per datagram: each message authenticated
/// (HMAC-SHA256 with the cluster's key), addressed, numbered against replay.
///
/// Anyone can send a datagram to the node's port. Every datagram that is not a
/// frame from a member to this node, intact, authentic and new (garbage, a
/// forgery, a replay, another cluster's traffic) is counted and dropped: never a
/// panic, never an error for the driver. [`Transport::dropped`] and
/// [`wire_stats`](UdpTransport::wire_stats) say how many and why.
///
/// ```no_run
/// use std::net::SocketAddr;
/// use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
/// use bully_core::{Config, Node, NodeId};
/// use bully_tokio::UdpTransport;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// let addr = |id: u64| -> SocketAddr { format!("127.0.0.1:{}", 7000 + id).parse().unwrap() };
/// // The same secret on every member, from your secret store.
/// let key = Key::new(KeyId(1), b"32 bytes of secret from a vault!")?;
/// // Grows at every restart, so peers do not take the new frames for replays.
/// let incarnation = Incarnation::from_duration_since_epoch(
///     std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?,
/// );
/// let codec = Codec::new(ClusterId(7), NodeId(2), incarnation, members, Auth::hmac(key))?;
/// let peers = members.iter().map(|&id| (id, addr(id.0)));
/// let transport = UdpTransport::bind(addr(2), codec, peers).await?;
/// let handle = bully_tokio::spawn(Node::new(NodeId(2), members, Config::default())?, transport);
/// # drop(handle); Ok(()) }
/// ```
#[derive(Debug)]
pub struct UdpTransport<S = tokio::net::UdpSocket> {
    socket: S,
    codec: Codec,
    peers: BTreeMap<NodeId, SocketAddr>,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
    dropped: u64,
}

impl UdpTransport<tokio::net::UdpSocket> {
    /// Binds a tokio UDP socket on `listen` and serves `codec`'s node over it.
    /// `peers` maps member ids to their addresses (an entry for this node itself
    /// is ignored).
    pub async fn bind(
        listen: SocketAddr,
        codec: Codec,
        peers: impl IntoIterator<Item = (NodeId, SocketAddr)>,
    ) -> io::Result<Self> {
        let socket = tokio::net::UdpSocket::bind(listen).await?;
        Ok(UdpTransport::new(socket, codec, peers))
    }

    /// The address the socket is bound to (with the port the OS chose, if
    /// `listen` asked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

impl<S: DatagramSocket> UdpTransport<S> {
    /// Serves `codec`'s node over a bound `socket`. `peers` maps member ids to
    /// their addresses (an entry for this node itself is ignored).
    pub fn new(
        socket: S,
        codec: Codec,
        peers: impl IntoIterator<Item = (NodeId, SocketAddr)>,
    ) -> Self {
        let id = codec.id();
        let peers = peers.into_iter().filter(|&(peer, _)| peer != id).collect();
        // One byte more than the largest frame, so an oversized datagram shows as
        // oversized instead of being silently cut to a valid-looking length.
        let recv_buf = vec![0; codec.max_frame_len() + 1];
        UdpTransport {
            socket,
            codec,
            peers,
            send_buf: Vec::with_capacity(128),
            recv_buf,
            dropped: 0,
        }
    }

    /// The codec's counters: frames sent, accepted, and refused by reason.
    pub fn wire_stats(&self) -> WireStats {
        self.codec.stats()
    }

    /// The socket.
    pub fn socket(&self) -> &S {
        &self.socket
    }

    /// Where each peer is sent to.
    pub fn peers(&self) -> &BTreeMap<NodeId, SocketAddr> {
        &self.peers
    }
}

#[async_trait]
impl<S: DatagramSocket> Transport for UdpTransport<S> {
    async fn send(&mut self, to: NodeId, message: &Message) -> Result<(), TransportError> {
        let Some(&target) = self.peers.get(&to) else {
            return Err(TransportError::UnknownMember(to));
        };
        self.codec
            .encode(to, message, &mut self.send_buf)
            .map_err(|error| TransportError::Encode(error.to_string()))?;
        self.socket.send_to(&self.send_buf, target).await?;
        Ok(())
    }

    async fn recv(&mut self) -> Result<(NodeId, Message), TransportError> {
        for _ in 0..MAX_REFUSED_PER_RECV {
            let (len, source) = self.socket.recv_from(&mut self.recv_buf).await?;
            match self.codec.decode(&self.recv_buf[..len]) {
                Ok(received) => return Ok(received),
                Err(error) => {
                    self.dropped += 1;
                    tracing::debug!(%source, len, %error, "datagram refused");
                }
            }
        }
        Err(TransportError::Refused(MAX_REFUSED_PER_RECV))
    }

    fn dropped(&self) -> u64 {
        self.dropped
    }

    fn wire_stats(&self) -> Option<WireStats> {
        Some(self.codec.stats())
    }

    fn add_peer(&mut self, member: NodeId, address: SocketAddr) -> Result<(), TransportError> {
        self.codec.add_member(member)?;
        self.peers.insert(member, address);
        Ok(())
    }

    fn remove_peer(&mut self, member: NodeId) -> Result<(), TransportError> {
        self.codec.remove_member(member)?;
        self.peers.remove(&member);
        Ok(())
    }

    fn set_peer_address(
        &mut self,
        member: NodeId,
        address: SocketAddr,
    ) -> Result<(), TransportError> {
        if member == self.codec.id() || self.codec.members().binary_search(&member).is_err() {
            return Err(TransportError::UnknownMember(member));
        }
        self.peers.insert(member, address);
        Ok(())
    }

    fn set_auth(&mut self, auth: Auth) -> Result<(), TransportError> {
        self.codec.set_auth(auth)?;
        Ok(())
    }
}
