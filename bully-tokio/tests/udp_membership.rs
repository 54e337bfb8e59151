//! Membership and keys changed at runtime through the handle, over real UDP on
//! 127.0.0.1 with authenticated frames: no restart, no new transport.
//!
//! Nothing here asserts how long anything took; the time limits are only "give up"
//! guards.

use std::net::SocketAddr;
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{CommandError, Config, Node, NodeId};
use bully_tokio::{ChangeError, Handle, UdpTransport};
use tokio::net::UdpSocket;

mod support;
use support::udp::bind;

const GIVE_UP: Duration = Duration::from_secs(20);
const CLUSTER: ClusterId = ClusterId(0xB012);

fn config() -> Config {
    support::config::loopback()
}

fn key(id: u32) -> Key {
    let secret: &[u8; 32] = match id {
        1 => b"the first key, of 32 bytes long!",
        _ => b"the second key, 32 bytes as well",
    };
    Key::new(KeyId(id), secret).unwrap()
}

fn ids(range: std::ops::RangeInclusive<u64>) -> Vec<NodeId> {
    range.map(NodeId).collect()
}

struct Member {
    handle: Handle,
    addr: SocketAddr,
}
fn start(
    id: NodeId,
    socket: UdpSocket,
    members: &[NodeId],
    peers: &[(NodeId, SocketAddr)],
    auth: Auth,
) -> Handle {
    let codec = Codec::new(CLUSTER, id, Incarnation(1), members.iter().copied(), auth).unwrap();
    let transport = UdpTransport::new(socket, codec, peers.iter().copied());
    let node = Node::new(id, members.iter().copied(), config()).unwrap();
    bully_tokio::spawn(node, transport)
}

/// Binds and starts members `ids`, all knowing each other.
async fn cluster(members: &[NodeId]) -> Vec<Member> {
    let mut sockets = Vec::new();
    for &id in members {
        let (socket, addr) = bind().await;
        sockets.push((id, socket, addr));
    }
    let peers: Vec<(NodeId, SocketAddr)> =
        sockets.iter().map(|(id, _, addr)| (*id, *addr)).collect();
    sockets
        .into_iter()
        .map(|(id, socket, addr)| Member {
            handle: start(id, socket, members, &peers, Auth::hmac(key(1))),
            addr,
        })
        .collect()
}

async fn agree_on<'a>(handles: impl IntoIterator<Item = &'a Handle>, expected: NodeId) {
    support::agree::agree_on(handles, expected, GIVE_UP).await;
}

/// Datagrams that reached a member's socket: accepted or refused.
async fn arrived(handle: &Handle) -> u64 {
    let stats = handle.stats().await.unwrap();
    stats.messages_received + stats.transport_dropped
}

#[tokio::test]
async fn a_sixth_member_added_through_the_handles_is_elected_then_removed_and_sent_nothing() {
    let five = cluster(&ids(1..=5)).await;
    agree_on(five.iter().map(|m| &m.handle), NodeId(5)).await;

    // 6 comes up knowing everyone; the five learn its address through their handles.
    let (socket, six_addr) = bind().await;
    let mut peers: Vec<(NodeId, SocketAddr)> = five
        .iter()
        .map(|member| (member.handle.id(), member.addr))
        .collect();
    peers.push((NodeId(6), six_addr));
    for member in &five {
        member.handle.add_member(NodeId(6), six_addr).await.unwrap();
    }
    let six = start(NodeId(6), socket, &ids(1..=6), &peers, Auth::hmac(key(1)));

    // The highest member, so everyone follows it.
    agree_on(five.iter().map(|m| &m.handle).chain([&six]), NodeId(6)).await;
    assert!(matches!(
        five[0].handle.add_member(NodeId(6), six_addr).await,
        Err(ChangeError::Node(CommandError::AlreadyMember(NodeId(6))))
    ));

    // Removed from the five: they elect 5 again, and send 6 nothing more.
    for member in &five {
        member.handle.remove_member(NodeId(6)).await.unwrap();
    }
    agree_on(five.iter().map(|m| &m.handle), NodeId(5)).await;
    let before = arrived(&six).await;
    let sent_before: Vec<_> = {
        let mut sent = Vec::new();
        for member in &five {
            sent.push(member.handle.stats().await.unwrap().send_errors);
        }
        sent
    };
    // Twenty heartbeat intervals.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        arrived(&six).await,
        before,
        "a removed member was sent something"
    );
    for (member, before) in five.iter().zip(sent_before) {
        // Not even an attempt: the node itself no longer addresses 6.
        assert_eq!(member.handle.stats().await.unwrap().send_errors, before);
    }
    // 6 still believes it leads and sends heartbeats: the five refuse them.
    let refused = five[0].handle.stats().await.unwrap().transport_dropped;
    assert!(refused > 0, "6's frames were not refused");
    assert_eq!(five[0].handle.leader().map(|l| l.id), Some(NodeId(5)));

    six.shutdown().await.unwrap();
    for member in five {
        member.handle.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn keys_rotate_through_the_handles_in_three_steps_without_losing_the_leader() {
    let members = cluster(&ids(1..=3)).await;
    let handles: Vec<&Handle> = members.iter().map(|m| &m.handle).collect();
    agree_on(handles.iter().copied(), NodeId(3)).await;
    let leader = handles[0].leader();

    // 1: everyone accepts the new key; 2: everyone sends with it; 3: the old one
    // is retired. Between any two steps every frame is still accepted.
    let steps = [
        Auth::Hmac {
            current: key(1),
            previous: Some(key(2)),
        },
        Auth::Hmac {
            current: key(2),
            previous: Some(key(1)),
        },
        Auth::hmac(key(2)),
    ];
    for auth in steps {
        for handle in &handles {
            handle.set_auth(auth.clone()).await.unwrap();
        }
        // Several heartbeat rounds under the new step.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for handle in &handles {
        let stats = handle.stats().await.unwrap();
        assert_eq!(
            stats.transport_dropped, 0,
            "a frame was refused mid-rotation"
        );
        assert_eq!(handle.leader(), leader, "the leadership changed");
    }

    // A member still on the retired key alone is no longer heard.
    let (socket, _) = bind().await;
    let peers: Vec<(NodeId, SocketAddr)> = members
        .iter()
        .map(|member| (member.handle.id(), member.addr))
        .collect();
    let stale = start(NodeId(3), socket, &ids(1..=3), &peers, Auth::hmac(key(1)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(handles[0].stats().await.unwrap().transport_dropped > 0);
    stale.abort().await;
    for member in members {
        member.handle.shutdown().await.unwrap();
    }
}
