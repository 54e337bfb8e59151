//! The steady state (a follower hearing its leader's heartbeat and having nothing
//! else to do, a leader sending its heartbeat round) allocates nothing, and
//! neither does any message the per-message benchmarks (`benches/node.rs`) time:
//! Election, Answer, Coordinator and Heartbeat at a member whose queues are warm.
//!
//! A counting global allocator (`stats_alloc`) wraps the system one; the test
//! asserts counts, not timings.

mod main_thread;

use std::alloc::System;
use std::time::{Duration, Instant};

use bully_core::{Config, Event, Message, Node, NodeId, Role, Term, Transmit};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn drain(node: &mut Node) -> (Vec<Transmit>, Vec<Event>) {
    let mut transmits = Vec::new();
    while let Some(transmit) = node.poll_transmit() {
        transmits.push(transmit);
    }
    let mut events = Vec::new();
    while let Some(event) = node.poll_event() {
        events.push(event);
    }
    (transmits, events)
}

/// The counting allocator is process-wide, so this binary has no libtest
/// harness (`harness = false` in Cargo.toml): each case runs on the main
/// thread with no other thread alive (tests/main_thread).
fn main() {
    main_thread::run(&[
        (
            "heartbeats_in_and_out_allocate_nothing_once_warm",
            heartbeats_in_and_out_allocate_nothing_once_warm,
        ),
        (
            "an_elections_messages_allocate_nothing_once_warm",
            an_elections_messages_allocate_nothing_once_warm,
        ),
    ]);
}

fn heartbeats_in_and_out_allocate_nothing_once_warm() {
    let members: Vec<NodeId> = (1..=64).map(NodeId).collect();
    // The leader elects as soon as it starts (no staggered start's listening).
    let config = Config::default().with_staggered_start(false);
    let start = Instant::now();
    let mut leader = Node::new(NodeId(64), members.iter().copied(), config.clone()).unwrap();
    let mut follower = Node::new(NodeId(10), members.iter().copied(), config.clone()).unwrap();
    leader.start(start);
    assert_eq!(leader.role(), Role::Leader);
    let (announcement, _) = drain(&mut leader);
    let coordinator = announcement
        .into_iter()
        .find(|transmit| transmit.to == NodeId(10))
        .unwrap();
    follower.handle_message(start, NodeId(64), coordinator.message);
    drain(&mut follower);

    // Warm up: one heartbeat round grows the transmit queue to its working size.
    let mut now = start + config.heartbeat_interval();
    leader.handle_timeout(now);
    while leader.poll_transmit().is_some() {}

    let heartbeat = Message::Heartbeat {
        term: leader.term(),
        round: 1,
    };
    let region = Region::new(GLOBAL);
    for _ in 0..1_000 {
        now += config.heartbeat_interval();
        // The leader's round: 63 heartbeats queued and drained.
        leader.handle_timeout(now);
        let mut sent = 0;
        while let Some(transmit) = leader.poll_transmit() {
            sent += 1;
            std::hint::black_box(transmit);
        }
        assert_eq!(sent, 63);
        // The follower: a heartbeat in, nothing to do.
        follower.handle_message(now, NodeId(64), heartbeat.clone());
        assert!(follower.poll_transmit().is_none());
        assert!(follower.poll_event().is_none());
        std::hint::black_box(follower.poll_timeout());
    }
    let change = region.change();
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "heap traffic in 1,000 heartbeat rounds: {change:?}"
    );
    assert_eq!(follower.leader().map(|l| l.id), Some(NodeId(64)));
    assert!(follower.poll_timeout().unwrap() > now - Duration::from_millis(1));
}

/// The benchmarks' member 63 of 64 goes through one election after another: a
/// lower member's Election of a new term (it answers, drops its leader and asks
/// 64), 64's Answer, 64's Coordinator, 64's heartbeat.
fn an_elections_messages_allocate_nothing_once_warm() {
    let members: Vec<NodeId> = (1..=64).map(NodeId).collect();
    let (lower, member, leader) = (NodeId(1), NodeId(63), NodeId(64));
    let mut node = Node::new(member, members, Config::default()).unwrap();
    let mut now = Instant::now();
    let election = |node: &mut Node, now: Instant, term: u64| {
        let term = Term(term);
        let steps = [
            (lower, Message::Election { term }, 4),
            (leader, Message::Answer { term }, 0),
            (leader, Message::Coordinator { term, round: 0 }, 1),
            (leader, Message::Heartbeat { term, round: 1 }, 0),
        ];
        for (from, message, outputs) in steps {
            node.handle_message(now, from, message);
            let mut produced = 0;
            while let Some(transmit) = node.poll_transmit() {
                produced += 1;
                std::hint::black_box(transmit);
            }
            while let Some(event) = node.poll_event() {
                produced += 1;
                std::hint::black_box(event);
            }
            std::hint::black_box(node.poll_timeout());
            assert_eq!(produced, outputs, "at term {term}");
        }
    };
    // It follows 64, then one election grows its queues to their working size.
    node.handle_message(
        now,
        leader,
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    while node.poll_event().is_some() {}
    election(&mut node, now, 2);

    let region = Region::new(GLOBAL);
    for term in 3..=1_001 {
        now += Duration::from_millis(1);
        election(&mut node, now, term);
    }
    let change = region.change();
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "heap traffic in 999 elections' messages: {change:?}"
    );
    assert_eq!(
        node.leader().map(|l| (l.id, l.term)),
        Some((leader, Term(1_001)))
    );
}
