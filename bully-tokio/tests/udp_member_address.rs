//! A member's address changed at runtime through the handle
//! (`Handle::set_member_address`), over real UDP on 127.0.0.1: a member whose
//! address was unknown at start (a host name that did not resolve yet) is
//! reached once it is known, and a member that moved (restarted on another
//! address, as a rescheduled pod) is found again, without a membership change.
//!
//! Nothing here asserts how long anything took; the time limits are only "give up"
//! guards.

use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{CommandError, Config, Node, NodeId, Quorum};
use bully_tokio::{ChangeError, Handle, UdpTransport};
use tokio::net::UdpSocket;

mod support;
use support::udp::bind;

const GIVE_UP: Duration = Duration::from_secs(20);
const CLUSTER: ClusterId = ClusterId(0xB013);

fn config() -> Config {
    support::config::patient().with_quorum(Quorum::Majority)
}

fn auth() -> Auth {
    Auth::hmac(Key::new(KeyId(1), b"the member address test's secret").unwrap())
}

const MEMBERS: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];

/// Starts `id` over `socket`, reaching only the members `peers` names.
fn start(
    id: NodeId,
    socket: UdpSocket,
    peers: &[(NodeId, SocketAddr)],
    incarnation: u64,
) -> Handle {
    let codec = Codec::new(CLUSTER, id, Incarnation(incarnation), MEMBERS, auth()).unwrap();
    let transport = UdpTransport::new(socket, codec, peers.iter().copied());
    bully_tokio::spawn(Node::new(id, MEMBERS, config()).unwrap(), transport)
}

async fn agree_on(handles: &[&Handle], expected: NodeId) {
    support::agree::agree_on(handles.iter().copied(), expected, GIVE_UP).await;
}

async fn send_errors(handle: &Handle) -> u64 {
    handle.stats().await.unwrap().send_errors
}

/// Datagrams that reach `trap` within `window`.
async fn count_arrivals(trap: &UdpSocket, window: Duration) -> u64 {
    let mut buf = [0u8; 2048];
    let mut count = 0;
    let end = tokio::time::Instant::now() + window;
    while let Ok(Ok(_)) = tokio::time::timeout_at(end, trap.recv_from(&mut buf)).await {
        count += 1;
    }
    count
}

#[tokio::test]
async fn a_member_unknown_at_start_then_moved_is_reached_at_each_new_address() {
    let (s1, a1) = bind().await;
    let (s2, a2) = bind().await;
    let (s3, a3) = bind().await;
    // 1 and 2 do not know where 3 is (its name did not resolve); 3 knows them.
    let one = start(NodeId(1), s1, &[(NodeId(2), a2)], 1);
    let two = start(NodeId(2), s2, &[(NodeId(1), a1)], 1);
    let three = start(NodeId(3), s3, &[(NodeId(1), a1), (NodeId(2), a2)], 1);

    // 1 and 2 make a quorum of their own; what they owe 3 has no route.
    agree_on(&[&one, &two], NodeId(2)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        send_errors(&one).await + send_errors(&two).await > 0,
        "1 and 2 had messages for 3 and no address to send them to"
    );

    // They learn 3's address: 3, the highest, leads, and everyone follows it.
    for handle in [&one, &two] {
        handle.set_member_address(NodeId(3), a3).await.unwrap();
    }
    agree_on(&[&one, &two, &three], NodeId(3)).await;

    // 3 moves: its old process crashes, a new one starts at another address.
    three.abort().await;
    let trap = UdpSocket::bind(a3).await.unwrap();
    let (s3, moved) = bind().await;
    let three = start(NodeId(3), s3, &[(NodeId(1), a1), (NodeId(2), a2)], 2);
    // 1 and 2 still send to where 3 was.
    assert!(
        count_arrivals(&trap, Duration::from_millis(500)).await > 0,
        "1 and 2 kept sending to 3's old address"
    );
    for handle in [&one, &two] {
        handle.set_member_address(NodeId(3), moved).await.unwrap();
    }
    agree_on(&[&one, &two, &three], NodeId(3)).await;
    // What was in flight has landed; nothing more goes to the old address.
    count_arrivals(&trap, Duration::from_millis(100)).await;
    assert_eq!(
        count_arrivals(&trap, Duration::from_secs(1)).await,
        0,
        "1 and 2 send to 3's new address only (twenty heartbeat intervals)"
    );

    // Neither a non-member nor the node itself has an address to change.
    assert!(matches!(
        one.set_member_address(NodeId(9), moved).await,
        Err(ChangeError::Node(CommandError::UnknownMember(NodeId(9))))
    ));
    assert!(matches!(
        one.set_member_address(NodeId(1), moved).await,
        Err(ChangeError::Node(CommandError::SelfReference(NodeId(1))))
    ));
}
