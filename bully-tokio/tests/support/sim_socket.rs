//! turmoil's UDP socket, seen by `UdpTransport`: shared by the turmoil tests.

use std::io;
use std::net::SocketAddr;

use async_trait::async_trait;
use bully_tokio::DatagramSocket;

/// A turmoil host's UDP socket as a [`DatagramSocket`].
pub(crate) struct SimSocket(pub(crate) turmoil::net::UdpSocket);

#[async_trait]
impl DatagramSocket for SimSocket {
    async fn send_to(&self, datagram: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.0.send_to(datagram, target).await
    }
    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.0.recv_from(buf).await
    }
}
