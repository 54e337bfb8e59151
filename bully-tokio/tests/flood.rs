//! A sustained flood of forged frames does not delay the node's own timers: the
//! leader's heartbeats keep their schedule, counted in paused (virtual) time.
//!
//! The socket below always has another forged datagram ready, as a real socket
//! does under a flood, and spends tokio's cooperative budget on each one as
//! tokio's own sockets do. Were `UdpTransport::recv` to loop until a valid frame
//! came, the driver's sleep would never get budget to fire and the leader would
//! send no heartbeat at all.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Node, NodeId};
use bully_tokio::{DatagramSocket, MAX_REFUSED_PER_RECV, UdpTransport};

mod support;

const CLUSTER: ClusterId = ClusterId(9);
const MEMBERS: [NodeId; 2] = [NodeId(1), NodeId(2)];

/// Sends nowhere (it counts), and receives an endless stream of one forged frame.
struct FloodedSocket {
    sent: Arc<AtomicU64>,
    forged: Vec<u8>,
}

#[async_trait]
impl DatagramSocket for FloodedSocket {
    async fn send_to(&self, datagram: &[u8], _target: SocketAddr) -> io::Result<usize> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        Ok(datagram.len())
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        tokio::task::consume_budget().await;
        buf[..self.forged.len()].copy_from_slice(&self.forged);
        Ok((self.forged.len(), "10.0.0.66:7000".parse().unwrap()))
    }
}

fn key(secret: &[u8]) -> Auth {
    Auth::hmac(Key::new(KeyId(1), secret).unwrap())
}

/// A `Coordinator` "from member 1", signed by an attacker who does not hold the key.
fn forged_frame() -> Vec<u8> {
    let mut attacker = Codec::new(
        CLUSTER,
        NodeId(1),
        Incarnation(1),
        MEMBERS,
        key(b"the attacker's guess at the key!"),
    )
    .unwrap();
    let mut frame = Vec::new();
    attacker
        .encode(
            NodeId(2),
            &bully_core::Message::Coordinator {
                term: bully_core::Term(1_000),
                round: 0,
            },
            &mut frame,
        )
        .unwrap();
    frame
}

#[tokio::test(start_paused = true)]
async fn a_leader_under_a_flood_of_forged_frames_keeps_its_heartbeat_schedule() {
    let config = support::config::ticking();
    let sent = Arc::new(AtomicU64::new(0));
    let socket = FloodedSocket {
        sent: sent.clone(),
        forged: forged_frame(),
    };
    let codec = Codec::new(
        CLUSTER,
        NodeId(2),
        Incarnation(1),
        MEMBERS,
        key(b"the cluster's real 32-byte key!!"),
    )
    .unwrap();
    let peers = [(NodeId(1), "10.0.0.1:7000".parse().unwrap())];
    let transport = UdpTransport::new(socket, codec, peers);
    // 2 is the highest member: it leads at once, and then sends a heartbeat to 1
    // every 100 ms, whatever floods in.
    let handle = bully_tokio::spawn(Node::new(NodeId(2), MEMBERS, config).unwrap(), transport);

    // The flood keeps the runtime busy, so paused time only moves when told to.
    tokio::time::advance(Duration::from_millis(1)).await;
    let before = handle.stats().await.unwrap();
    let sent_before = sent.load(Ordering::Relaxed);
    for _ in 0..200 {
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    let after = handle.stats().await.unwrap();

    // 2 s of virtual time: 20 heartbeat rounds to the one peer.
    let heartbeats = sent.load(Ordering::Relaxed) - sent_before;
    assert!(
        (19..=21).contains(&heartbeats),
        "{heartbeats} heartbeats in 2 s"
    );
    assert_eq!(handle.leader().map(|l| l.id), Some(NodeId(2)));
    let refused = after.transport_dropped - before.transport_dropped;
    assert!(
        refused >= 100 * u64::from(MAX_REFUSED_PER_RECV),
        "only {refused} forged frames arrived: not a flood"
    );
    // Each run of refusals handed the loop back; none counted as an error.
    assert!(after.recv_yields - before.recv_yields >= 100);
    assert_eq!(after.recv_errors, 0);
    assert_eq!(after.node.received.total(), 0, "a forgery reached the node");
}
