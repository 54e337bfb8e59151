//! Real UDP sockets on 127.0.0.1, real time, authenticated frames.
//!
//! Nothing here asserts how long anything took (the machine is shared); the
//! time limits are only "give up" guards, far above the protocol's bounds.

use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, Message, MessageKind, Node, NodeId, Term};
use bully_tokio::{Handle, UdpTransport};
use tokio::net::UdpSocket;

mod support;
use support::udp::sockets;

const GIVE_UP: Duration = Duration::from_secs(20);
const CLUSTER: ClusterId = ClusterId(0xB011);
const SECRET: &[u8] = b"loopback test secret of 32 bytes";

fn config() -> Config {
    support::config::loopback()
}

fn codec(id: NodeId, incarnation: u64, members: &[NodeId]) -> Codec {
    let auth = Auth::hmac(Key::new(KeyId(1), SECRET).unwrap());
    Codec::new(
        CLUSTER,
        id,
        Incarnation(incarnation),
        members.iter().copied(),
        auth,
    )
    .unwrap()
}

fn start(
    id: NodeId,
    socket: UdpSocket,
    incarnation: u64,
    members: &[NodeId],
    peers: &[(NodeId, SocketAddr)],
) -> Handle {
    let transport = UdpTransport::new(
        socket,
        codec(id, incarnation, members),
        peers.iter().copied(),
    );
    let node = Node::new(id, members.iter().copied(), config()).unwrap();
    bully_tokio::spawn(node, transport)
}

async fn agree_on(handles: &[&Handle], expected: NodeId) {
    support::agree::agree_on(handles.iter().copied(), expected, GIVE_UP).await;
}

#[tokio::test]
async fn three_nodes_elect_the_highest_fail_over_and_take_back() {
    let members: Vec<NodeId> = (1..=3).map(NodeId).collect();
    let bound = sockets(&members).await;
    let peers: Vec<(NodeId, SocketAddr)> = bound.iter().map(|(id, _, addr)| (*id, *addr)).collect();
    let mut handles: Vec<Handle> = bound
        .into_iter()
        .map(|(id, socket, _)| start(id, socket, 1, &members, &peers))
        .collect();

    // Three nodes elect the highest.
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // The leader is shut down (gracefully: it resigns); 2 is elected.
    let three = handles.pop().unwrap();
    let stats = three.shutdown().await.unwrap();
    assert_eq!(stats.node.sent[MessageKind::Resign], 2);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(2)).await;

    // 3 comes back on its old address, in a new incarnation, and takes over
    // (preemption Always).
    let socket = UdpSocket::bind(peers[2].1).await.unwrap();
    handles.push(start(NodeId(3), socket, 2, &members, &peers));
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // The followers refused nothing along the way.
    for handle in &handles {
        assert_eq!(handle.stats().await.unwrap().transport_dropped, 0);
    }
}

#[tokio::test]
async fn garbage_forgeries_and_replays_are_counted_and_dropped() {
    // Node 2 runs; the test plays member 1 from a raw socket.
    let members = [NodeId(1), NodeId(2)];
    let bound = sockets(&members).await;
    let peers: Vec<(NodeId, SocketAddr)> = bound.iter().map(|(id, _, addr)| (*id, *addr)).collect();
    let mut bound = bound.into_iter();
    let (_, attacker, _) = bound.next().unwrap();
    let (_, socket, target) = bound.next().unwrap();
    let two = start(NodeId(2), socket, 1, &members, &peers);
    agree_on(&[&two], NodeId(2)).await;

    // Garbage, an empty datagram, and a forged Coordinator from a term far ahead
    // under the wrong key.
    attacker
        .send_to(b"not a frame at all", target)
        .await
        .unwrap();
    attacker.send_to(&[], target).await.unwrap();
    let wrong_key = Auth::hmac(Key::new(KeyId(1), b"a different secret of 32 bytes!!").unwrap());
    let mut forger = Codec::new(CLUSTER, NodeId(1), Incarnation(1), members, wrong_key).unwrap();
    let mut frame = Vec::new();
    forger
        .encode(
            NodeId(2),
            &Message::Coordinator {
                term: Term(99),
                round: 0,
            },
            &mut frame,
        )
        .unwrap();
    attacker.send_to(&frame, target).await.unwrap();

    // A genuine frame from 1 is accepted once; its replay is refused.
    let mut genuine = codec(NodeId(1), 1, &members);
    genuine
        .encode(NodeId(2), &Message::Election { term: Term(1) }, &mut frame)
        .unwrap();
    attacker.send_to(&frame, target).await.unwrap();
    attacker.send_to(&frame, target).await.unwrap();

    // Wait until the node has seen all five datagrams.
    let stats = tokio::time::timeout(GIVE_UP, async {
        loop {
            let stats = two.stats().await.unwrap();
            if stats.transport_dropped + stats.node.received[MessageKind::Election] >= 5 {
                return stats;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the datagrams never arrived");
    assert_eq!(stats.transport_dropped, 4);
    assert_eq!(stats.node.received[MessageKind::Election], 1);
    // By reason: the garbage and the empty datagram are too short to be frames,
    // the forgery fails its tag, the replay is a replay.
    let wire = stats.wire.expect("UDP reports the codec's counters");
    assert_eq!(
        (wire.truncated + wire.bad_magic, wire.bad_tag, wire.replayed),
        (2, 1, 1),
        "{wire:?}"
    );

    // Still running, still the leader, in its own term: nothing forged got in.
    let leader = two.leader().unwrap();
    assert_eq!(leader.id, NodeId(2));
    assert!(leader.term < Term(99));
    assert!(!two.is_finished());
}
