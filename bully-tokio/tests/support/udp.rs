//! Real UDP sockets on 127.0.0.1 for the loopback tests: each on a fresh port.

use std::net::SocketAddr;

use bully_core::NodeId;
use tokio::net::UdpSocket;

/// A socket on a fresh loopback port, and its address.
pub(crate) async fn bind() -> (UdpSocket, SocketAddr) {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    (socket, addr)
}

/// One socket per member, each on a fresh loopback port.
pub(crate) async fn sockets(members: &[NodeId]) -> Vec<(NodeId, UdpSocket, SocketAddr)> {
    let mut out = Vec::new();
    for &id in members {
        let (socket, addr) = bind().await;
        out.push((id, socket, addr));
    }
    out
}
