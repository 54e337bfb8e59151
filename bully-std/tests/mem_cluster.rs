//! The driver and `Handle` over the in-process `MemNetwork`: fast scenarios
//! with faults (isolation, healing), commands, events and shutdown. Assertions are
//! about leaders and counters, never about timings.
//!
//! Not under `--cfg loom` (real threads and sockets, outside the model).
#![cfg(not(loom))]

use std::time::Duration;

use bully_core::{Config, Event, MessageKind, Node, NodeId, Role, Term};
use bully_std::{Builder, DriverError, MemNetwork, RecvError};

mod support;
use support::mem::{MemCluster, WAIT};

/// Every member elects at boot, as the seeds' processes do (the events test
/// reads each boot election).
fn config() -> Config {
    Config::default().with_staggered_start(false)
}

fn node(id: u64, members: &[u64]) -> Node {
    Node::new(NodeId(id), members.iter().map(|&m| NodeId(m)), config()).unwrap()
}

#[test]
fn five_nodes_elect_the_highest_and_every_node_says_so_in_its_events() {
    let cluster = MemCluster::new(&[1, 2, 3, 4, 5], config());
    let handles = cluster.running();
    let subscriptions: Vec<_> = handles.iter().map(|h| h.events()).collect();
    for id in 1..=5 {
        cluster.leader_is(id, 5, Term(0));
    }
    // The first subscription was made before the node started: it has the
    // whole story, from the boot election to node 5's leadership.
    for (handle, events) in handles.iter().zip(&subscriptions) {
        let mut started = false;
        loop {
            match events.recv_timeout(WAIT).unwrap().expect("an event") {
                Event::ElectionStarted { .. } => started = true,
                Event::LeaderElected {
                    leader: NodeId(5), ..
                } => break,
                _ => {}
            }
        }
        assert!(started, "node {} started an election at boot", handle.id());
    }
    assert_eq!(cluster.handle(5).stats().unwrap().role, Role::Leader);
}

#[test]
fn an_isolated_leader_is_replaced_and_takes_over_again_when_the_network_heals() {
    let cluster = MemCluster::new(&[1, 2, 3], config());
    let first = cluster.leader_is(1, 3, Term(0));

    // To 1 and 2, node 3 has crashed: no Resign, they wait out the leader timeout.
    cluster.isolate(3);
    let second = cluster.leader_is(1, 2, first);
    cluster.leader_is(2, 2, first);
    let two = cluster.handle(2).stats().unwrap();
    assert_eq!(two.node.received[MessageKind::Resign], 0);

    // Node 3 comes back and bullies its way to the leadership again.
    cluster.heal();
    for id in 1..=3 {
        cluster.leader_is(id, 3, second);
    }
    assert!(cluster.network.stats().blocked > 0);
}

#[test]
fn an_aborted_leader_says_nothing_and_the_others_wait_out_the_leader_timeout() {
    let mut cluster = MemCluster::new(&[1, 2, 3], config());
    let first = cluster.leader_is(1, 3, Term(0));

    cluster.crash(3);
    cluster.leader_is(1, 2, first);
    cluster.leader_is(2, 2, first);
    let two = cluster.handle(2).stats().unwrap();
    assert_eq!(two.node.received[MessageKind::Resign], 0, "no goodbye");
    // What 2 still sends to 3 (its Coordinator, its heartbeats) finds no one.
    let before = cluster.network.stats().undeliverable;
    let deadline = std::time::Instant::now() + WAIT;
    while cluster.network.stats().undeliverable == before {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn suspecting_the_leader_starts_an_election_and_bad_suspicions_are_refused() {
    let cluster = MemCluster::new(&[1, 2], config());
    let first = cluster.leader_is(1, 2, Term(0));
    let one = cluster.handle(1);
    assert_eq!(
        one.suspect(NodeId(9)),
        Ok(Err(bully_core::CommandError::UnknownMember(NodeId(9))))
    );
    assert_eq!(one.suspect(NodeId(2)), Ok(Ok(())));
    // Node 1 elects again; 2, alive, answers and announces itself in a later term.
    cluster.leader_is(1, 2, first);
}

#[test]
fn step_down_hands_the_leadership_over_and_a_follower_cannot_step_down() {
    // Sticky leadership, so that 3 does not take the leadership straight back.
    let config = Config::default().with_preemption(bully_core::Preemption::Never);
    let cluster = MemCluster::new(&[1, 2, 3], config);
    let leader = cluster.agreed_leader();
    let handles = cluster.running();
    let leading = handles.iter().find(|h| h.id() == leader.id).unwrap();
    let follower = handles.iter().find(|h| h.id() != leader.id).unwrap();

    assert_eq!(follower.step_down(), Ok(false));
    assert_eq!(leading.step_down(), Ok(true));
    // Published before step_down returned.
    assert_ne!(leading.leader(), Some(leader));
    let next = follower
        .leader_watch()
        .wait_for(WAIT, |l| l.is_some_and(|l| l.id != leader.id))
        .unwrap()
        .unwrap();
    assert!(next.term > leader.term);
    assert_eq!(leading.stats().unwrap().node.sent[MessageKind::Resign], 2);
}

#[test]
fn a_slow_reader_is_told_how_many_events_it_missed() {
    let network = MemNetwork::new();
    let members = [1, 2];
    // Node 2 alone, with room for one unread event: it boots (ElectionStarted),
    // wins (BecameLeader, LeaderElected), and the reader only looks afterwards.
    let handle = Builder::new()
        .event_capacity(1)
        .spawn(node(2, &members), network.endpoint(NodeId(2)))
        .unwrap();
    let events = handle.events();
    assert_eq!(handle.wait_for_leader(WAIT).unwrap().id, NodeId(2));
    // The leader is published just before the events of the same input: a round
    // trip through the driver makes sure those are out too.
    handle.stats().unwrap();
    assert_eq!(events.try_recv(), Err(RecvError::Lagged(2)));
    assert!(matches!(
        events.try_recv(),
        Ok(Some(Event::LeaderElected { .. }))
    ));
    assert_eq!(events.try_recv(), Ok(None));

    let status = handle.shutdown().unwrap();
    assert_eq!(
        status.role,
        Role::Follower,
        "it stepped down on the way out"
    );
    assert!(matches!(events.recv(), Ok(Event::SteppedDown { .. })));
    assert_eq!(events.recv(), Err(RecvError::Closed));
}

#[test]
fn dropping_the_handle_stops_and_joins_and_leaves_the_watch_readable() {
    let network = MemNetwork::new();
    let handle = bully_std::spawn(node(1, &[1]), network.endpoint(NodeId(1)));
    let watch = handle.leader_watch();
    let events = handle.events();
    assert_eq!(handle.wait_for_leader(WAIT).unwrap().id, NodeId(1));
    // A round trip through the driver: the election's events are out before
    // `later` subscribes.
    handle.stats().unwrap();
    let later = handle.events();
    drop(handle);
    // The threads are joined: the watch is final, the subscriptions are closed.
    assert!(watch.is_stopped());
    assert_eq!(watch.get(), None, "the single node stepped down");
    assert_eq!(watch.wait_for_leader(WAIT), Err(DriverError::Stopped));
    while events.recv().is_ok() {}
    assert_eq!(events.recv(), Err(RecvError::Closed));
    // The later subscription saw only the shutdown's step-down.
    assert!(matches!(later.recv(), Ok(Event::SteppedDown { .. })));
    assert_eq!(later.recv(), Err(RecvError::Closed));
}

#[test]
fn a_node_whose_peers_never_answer_still_shuts_down_promptly() {
    let network = MemNetwork::new();
    // Node 1 of {1, 2, 3}: 2 and 3 never join, so everything it sends is lost.
    let handle = bully_std::spawn(node(1, &[1, 2, 3]), network.endpoint(NodeId(1)));
    let leader = handle.wait_for_leader(WAIT).unwrap();
    assert_eq!(leader.id, NodeId(1));
    let status = handle.shutdown().unwrap();
    assert_eq!(status.send_errors, 0, "a lost message is not a send error");
    assert_eq!(status.node.sent[MessageKind::Resign], 2);
    assert!(network.stats().undeliverable >= 2);
    assert_eq!(network.stats().delivered, 0);
}

#[test]
fn spawn_persisting_hands_over_every_new_term_before_it_is_used() {
    let (saved, states) = std::sync::mpsc::channel();
    let mut cluster = MemCluster::stopped(MemNetwork::new(), &[1, 2], Config::default());
    cluster.start_with(2, |node, transport| {
        bully_std::spawn_persisting(node, transport, move |state| {
            let _ = saved.send(state);
        })
    });
    cluster.start(1);
    let leader = cluster.handle(1).wait_for_leader(WAIT).unwrap();
    assert_eq!(leader.id, NodeId(2));
    let last = cluster.take(2).shutdown().unwrap();
    let persisted: Vec<_> = states.try_iter().collect();
    assert!(!persisted.is_empty());
    assert!(persisted.windows(2).all(|w| w[0].term < w[1].term));
    assert_eq!(persisted.last().unwrap().term, last.term);
    assert!(last.term >= leader.term);
}

#[test]
fn an_abstaining_leader_is_replaced_and_is_not_elected_before_its_abstention_ends() {
    let cluster = MemCluster::new(&[1, 2, 3], config());
    let first = cluster.leader_is(1, 3, Term(0));
    let three = cluster.handle(3);
    // Long enough that the test cannot see it end: only the hand-over counts.
    let abstention = Duration::from_secs(3600);
    assert_eq!(three.abstain_for(abstention), Ok(true));
    assert_eq!(three.abstain_for(abstention), Ok(false), "not leading now");
    let second = cluster.leader_is(1, 2, first);
    // 2's heartbeats reach 3, which would take over if it did not abstain.
    std::thread::sleep(Config::default().leader_timeout());
    assert_eq!(
        three.leader().map(|l| (l.id, l.term)),
        Some((NodeId(2), second))
    );
    // A zero abstention ends it: 3 takes back.
    assert_eq!(three.abstain_for(Duration::ZERO), Ok(false));
    cluster.leader_is(1, 3, second);
}
