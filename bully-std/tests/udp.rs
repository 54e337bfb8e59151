//! Three nodes over real UDP sockets on 127.0.0.1 (fresh ports), with
//! authenticated frames: election, graceful leader shutdown, return and takeover,
//! and hostile datagrams. The assertions are about leaders and counters; the
//! timeouts are generous because the machine may be busy.
//!
//! Not under `--cfg loom` (real threads and sockets, outside the model).
#![cfg(not(loom))]

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, DropReason, Event, Message, MessageKind, Node, NodeId, Role, Term};
use bully_std::{Handle, LeaderWatch, RecvError, UdpTransport};

const WAIT: Duration = Duration::from_secs(30);
const CLUSTER: ClusterId = ClusterId(0xb011);
const SECRET: &[u8; 32] = b"bully-std udp test key, 32 bytes";
const MEMBERS: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];

fn auth(secret: &[u8]) -> Auth {
    Auth::hmac(Key::new(KeyId(1), secret).unwrap())
}

/// Three sockets on fresh loopback ports, and the address book they make.
fn sockets() -> (Vec<UdpSocket>, Vec<(NodeId, SocketAddr)>) {
    let sockets: Vec<UdpSocket> = MEMBERS
        .iter()
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let book = MEMBERS
        .iter()
        .zip(&sockets)
        .map(|(&id, socket)| (id, socket.local_addr().unwrap()))
        .collect();
    (sockets, book)
}

fn transport(
    id: NodeId,
    socket: UdpSocket,
    book: &[(NodeId, SocketAddr)],
    incarnation: u64,
) -> UdpTransport {
    let codec = Codec::new(CLUSTER, id, Incarnation(incarnation), MEMBERS, auth(SECRET)).unwrap();
    let peers = book.iter().copied().filter(|&(peer, _)| peer != id);
    UdpTransport::new(socket, codec, peers).unwrap()
}

fn start(id: NodeId, socket: UdpSocket, book: &[(NodeId, SocketAddr)], incarnation: u64) -> Handle {
    let node = Node::new(id, MEMBERS, Config::default()).unwrap();
    bully_std::spawn(node, transport(id, socket, book, incarnation))
}

fn cluster() -> (Vec<Handle>, Vec<(NodeId, SocketAddr)>) {
    let (sockets, book) = sockets();
    let handles = MEMBERS
        .iter()
        .zip(sockets)
        .map(|(&id, socket)| start(id, socket, &book, 1))
        .collect();
    (handles, book)
}

/// Waits until `watch` names `id` as leader in a term after `after`.
fn wait_for_leader_id(watch: &LeaderWatch, id: NodeId, after: Term) -> Term {
    let leader = watch
        .wait_for(WAIT, |leader| {
            leader.is_some_and(|l| l.id == id && l.term > after)
        })
        .unwrap_or_else(|error| panic!("no leader {id} ({error}); it has {:?}", watch.get()))
        .unwrap();
    leader.term
}

#[test]
fn three_nodes_elect_the_highest() {
    let (handles, _) = cluster();
    for handle in &handles {
        wait_for_leader_id(&handle.leader_watch(), NodeId(3), Term(0));
    }
    let status = handles[2].stats().unwrap();
    assert_eq!(status.role, Role::Leader);
    assert_eq!(status.send_errors, 0);
    for handle in handles {
        let status = handle.shutdown().unwrap();
        assert_eq!(status.recv_errors, 0);
        // Late answers to a finished election are dropped as outdated, but nothing
        // arrived from a stranger, from itself, or absurdly far ahead.
        for reason in [
            DropReason::NotMember,
            DropReason::FromSelf,
            DropReason::TermTooFarAhead,
        ] {
            assert_eq!(status.node.dropped[reason], 0, "{reason:?}");
        }
    }
}

#[test]
fn the_leader_shuts_down_gracefully_and_node_2_takes_over_then_3_returns() {
    let (mut handles, book) = cluster();
    let mut first_term = Term(0);
    for handle in &handles {
        first_term = wait_for_leader_id(&handle.leader_watch(), NodeId(3), Term(0));
    }

    // Node 3 shuts down: it resigns to both others on the way out...
    let three = handles.pop().unwrap();
    let events_of_1 = handles[0].events();
    let last = three.shutdown().unwrap();
    assert_eq!(last.role, Role::Follower);
    assert_eq!(last.node.sent[MessageKind::Resign], 2);

    // ...so 2, the highest left, takes over at once (it heard the Resign rather
    // than waiting out the leader timeout), and 1 follows it.
    let second_term = wait_for_leader_id(&handles[0].leader_watch(), NodeId(2), first_term);
    wait_for_leader_id(&handles[1].leader_watch(), NodeId(2), first_term);
    let two = handles[1].stats().unwrap();
    assert_eq!(two.role, Role::Leader);
    assert!(
        two.node.received[MessageKind::Resign] >= 1,
        "2 heard 3 resign"
    );
    assert_eq!(two.send_errors, 0);

    // Node 1's events tell the same story, in order.
    let mut lost_3 = false;
    loop {
        match events_of_1.recv_timeout(WAIT).unwrap().expect("an event") {
            Event::LeaderLost {
                leader: NodeId(3), ..
            } => lost_3 = true,
            Event::LeaderElected {
                leader: NodeId(2),
                term,
            } => {
                assert!(lost_3, "3 was lost before 2 was elected");
                assert_eq!(term, second_term);
                break;
            }
            _ => {}
        }
    }

    // Node 3 comes back on the same port, in a new incarnation, and bullies its way
    // back to the leadership, in a later term than 2's (it restarted at term 0, so
    // it first learns the current term from 2's heartbeats).
    let socket = UdpSocket::bind(book[2].1).unwrap();
    handles.push(start(NodeId(3), socket, &book, 2));
    for handle in &handles {
        wait_for_leader_id(&handle.leader_watch(), NodeId(3), second_term);
    }
    for handle in handles {
        handle.shutdown().unwrap();
    }
}

#[test]
fn forged_and_garbage_datagrams_are_dropped_and_counted() {
    let (sockets, book) = sockets();
    let mut sockets = sockets.into_iter();
    let one = std::sync::Arc::new(transport(NodeId(1), sockets.next().unwrap(), &book, 1));
    let node = Node::new(NodeId(1), MEMBERS, Config::default()).unwrap();
    let handle = bully_std::spawn(node, one.clone());
    let events = handle.events();

    // An attacker who knows the format but not the key claims to be node 3, the
    // highest, and announces itself coordinator; another sends garbage.
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut forger = Codec::new(
        CLUSTER,
        NodeId(3),
        Incarnation(9),
        MEMBERS,
        auth(b"not the cluster key, but 32 byte"),
    )
    .unwrap();
    let mut frame = Vec::new();
    forger
        .encode(
            NodeId(1),
            &Message::Coordinator {
                term: Term(99),
                round: 0,
            },
            &mut frame,
        )
        .unwrap();
    let one_addr = book[0].1;
    attacker.send_to(&frame, one_addr).unwrap();
    attacker
        .send_to(b"BULY and then nonsense", one_addr)
        .unwrap();
    attacker.send_to(&[0xff; 2000], one_addr).unwrap();

    // Node 1 is alone (2 and 3 never started), so it elects itself; the forged
    // Coordinator never reaches it.
    let leader = handle.wait_for_leader(WAIT).unwrap();
    assert_eq!(leader.id, NodeId(1));
    let deadline = std::time::Instant::now() + WAIT;
    while one.wire_stats().rejected() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            one.wire_stats()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let wire = one.wire_stats();
    assert_eq!(wire.bad_tag, 1);
    assert_eq!(wire.accepted, 0);
    let status = handle.shutdown().unwrap();
    assert_eq!(
        status.node.received.total(),
        0,
        "nothing forged reached the node"
    );
    loop {
        match events.recv() {
            Ok(Event::LeaderElected { leader, .. }) => assert_eq!(leader, NodeId(1)),
            Ok(_) => {}
            Err(RecvError::Closed) => break,
            Err(other) => panic!("{other}"),
        }
    }
}

#[test]
fn a_fourth_member_added_through_the_handles_is_elected_then_removed_and_sent_nothing() {
    let (handles, mut book) = cluster();
    for handle in &handles {
        wait_for_leader_id(&handle.leader_watch(), NodeId(3), Term(0));
    }
    // 4 comes up knowing everyone; the three learn its address through their handles.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let four_addr = socket.local_addr().unwrap();
    for handle in &handles {
        handle.add_member(NodeId(4), four_addr).unwrap();
    }
    book.push((NodeId(4), four_addr));
    let all = [NodeId(1), NodeId(2), NodeId(3), NodeId(4)];
    let codec = Codec::new(CLUSTER, NodeId(4), Incarnation(1), all, auth(SECRET)).unwrap();
    let peers = book.iter().copied().filter(|&(peer, _)| peer != NodeId(4));
    let transport = UdpTransport::new(socket, codec, peers).unwrap();
    let four = bully_std::spawn(
        Node::new(NodeId(4), all, Config::default()).unwrap(),
        transport,
    );
    // The highest member, so everyone follows it.
    for handle in handles.iter().chain([&four]) {
        wait_for_leader_id(&handle.leader_watch(), NodeId(4), Term(0));
    }

    // Removed from the three: they elect 3 again and send 4 nothing more.
    for handle in &handles {
        handle.remove_member(NodeId(4)).unwrap();
    }
    for handle in &handles {
        wait_for_leader_id(&handle.leader_watch(), NodeId(3), Term(0));
    }
    // What was on its way when the last removal landed has arrived by now.
    std::thread::sleep(Duration::from_millis(100));
    let arrived = |handle: &Handle| {
        let stats = handle.stats().unwrap();
        stats.messages_received + stats.transport_dropped
    };
    let before = arrived(&four);
    // Ten heartbeat intervals of the default configuration.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        arrived(&four),
        before,
        "a removed member was sent something"
    );
    // 4 still believes it leads and sends heartbeats: the three refuse them.
    assert!(handles[0].stats().unwrap().transport_dropped > 0);
    assert_eq!(handles[0].leader().map(|l| l.id), Some(NodeId(3)));
    four.shutdown().unwrap();
}

/// A planned hand-over: 3 leads three members with a majority and hands over
/// to 2, which leads without anyone waiting out a leader timeout (the timeout
/// here is longer than the test's patience), while 3 stays out.
#[test]
fn process_3_hands_over_to_2_without_a_leader_timeout() {
    use bully_core::{CommandError, DurableState, Quorum};
    let leader_timeout = Duration::from_secs(60);
    let config = Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(leader_timeout)
        .with_max_message_delay(Duration::from_millis(10))
        .with_quorum(Quorum::Majority);
    let (sockets, book) = sockets();
    let handles: Vec<Handle> = MEMBERS
        .iter()
        .zip(sockets)
        .map(|(&id, socket)| {
            // A declared first boot votes at once, rather than a follower
            // lease (a minute here) after its start.
            let node =
                Node::with_durable_state(id, MEMBERS, config.clone(), DurableState::first_boot())
                    .unwrap();
            bully_std::spawn(node, transport(id, socket, &book, 1))
        })
        .collect();
    let first = wait_for_leader_id(&handles[2].leader_watch(), NodeId(3), Term(0));
    let (one, three) = (&handles[0], &handles[2]);

    assert_eq!(one.hand_over(None, leader_timeout).unwrap(), Ok(false));
    assert_eq!(
        three.hand_over(Some(NodeId(1)), leader_timeout).unwrap(),
        Err(CommandError::Outranked {
            to: NodeId(1),
            by: NodeId(2)
        })
    );
    assert_eq!(three.leader().map(|l| l.id), Some(NodeId(3)));

    assert_eq!(
        three.hand_over(Some(NodeId(2)), leader_timeout).unwrap(),
        Ok(true)
    );
    // `WAIT` is half the leader timeout: 2 leads without one.
    for handle in &handles {
        wait_for_leader_id(&handle.leader_watch(), NodeId(2), first);
    }
    let stats = three.stats().unwrap();
    assert_eq!(stats.node.sent[MessageKind::Resign], 2, "3 told 1 and 2");
    std::thread::sleep(Duration::from_millis(500));
    assert_ne!(three.stats().unwrap().role, Role::Leader, "3 abstains");
    assert_eq!(three.leader().map(|l| l.id), Some(NodeId(2)));
}
