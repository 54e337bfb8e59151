//! A planned hand-over over real UDP on 127.0.0.1: process 3 leads three and
//! hands over to 2, which leads without anyone waiting out a leader timeout
//! (the timeout here is longer than the test's patience), while 3 stays out.
//!
//! Nothing here asserts how long anything took beyond that; the time limits
//! are "give up" guards.

use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{CommandError, Config, DurableState, MessageKind, Node, NodeId, Quorum};
use bully_tokio::{Handle, UdpTransport};
use tokio::net::UdpSocket;

mod support;
use support::udp::sockets;

/// Longer than any wait below: a leader found by a timeout could not be.
const LEADER_TIMEOUT: Duration = Duration::from_secs(60);
const GIVE_UP: Duration = Duration::from_secs(20);
const SECRET: &[u8] = b"hand-over test secret of 32 byte";

fn start(
    id: NodeId,
    socket: UdpSocket,
    members: &[NodeId],
    peers: &[(NodeId, SocketAddr)],
) -> Handle {
    let auth = Auth::hmac(Key::new(KeyId(1), SECRET).unwrap());
    let codec = Codec::new(
        ClusterId(0xB012),
        id,
        Incarnation(1),
        members.iter().copied(),
        auth,
    )
    .unwrap();
    let transport = UdpTransport::new(socket, codec, peers.iter().copied());
    let config = Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(LEADER_TIMEOUT)
        .with_max_message_delay(Duration::from_millis(10))
        .with_quorum(Quorum::Majority);
    // A declared first boot votes at once, rather than a follower lease (a
    // minute here) after its start.
    let node = Node::with_durable_state(
        id,
        members.iter().copied(),
        config,
        DurableState::first_boot(),
    )
    .unwrap();
    bully_tokio::spawn(node, transport)
}

#[tokio::test]
async fn process_3_hands_over_to_2_without_a_leader_timeout() {
    let members: Vec<NodeId> = (1..=3).map(NodeId).collect();
    let bound = sockets(&members).await;
    let peers: Vec<(NodeId, SocketAddr)> = bound.iter().map(|(id, _, addr)| (*id, *addr)).collect();
    let handles: Vec<Handle> = bound
        .into_iter()
        .map(|(id, socket, _)| start(id, socket, &members, &peers))
        .collect();
    support::agree::agree_on(handles.iter(), NodeId(3), GIVE_UP).await;
    let (one, two, three) = (&handles[0], &handles[1], &handles[2]);
    let permit = three.current_permit().expect("3 leads");

    // A follower has nothing to hand over; 3 refuses to name itself or 1,
    // whom 2 would beat.
    assert_eq!(
        one.hand_over(None, LEADER_TIMEOUT).await.unwrap(),
        Ok(false)
    );
    assert_eq!(
        three
            .hand_over(Some(NodeId(3)), LEADER_TIMEOUT)
            .await
            .unwrap(),
        Err(CommandError::SelfReference(NodeId(3)))
    );
    assert_eq!(
        three
            .hand_over(Some(NodeId(1)), LEADER_TIMEOUT)
            .await
            .unwrap(),
        Err(CommandError::Outranked {
            to: NodeId(1),
            by: NodeId(2)
        })
    );
    assert!(permit.is_current(), "a refused hand-over changed nothing");

    assert_eq!(
        three
            .hand_over(Some(NodeId(2)), LEADER_TIMEOUT)
            .await
            .unwrap(),
        Ok(true)
    );
    assert!(
        !permit.is_current(),
        "hand_over returned with the work not told"
    );
    let mut leaders = two.leader_watch();
    tokio::time::timeout(
        GIVE_UP,
        leaders.wait_for(|leader| leader.is_some_and(|l| l.id == NodeId(2))),
    )
    .await
    .expect("2 leads well before any leader timeout")
    .unwrap();
    support::agree::agree_on(handles.iter(), NodeId(2), GIVE_UP).await;
    let stats = three.stats().await.unwrap();
    assert_eq!(stats.node.sent[MessageKind::Resign], 2, "3 told 1 and 2");
    // 3 abstains: it follows 2, as 1 does, and leads nothing meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(three.current_permit().is_none());
    assert_eq!(three.leader().map(|l| l.id), Some(NodeId(2)));
}
