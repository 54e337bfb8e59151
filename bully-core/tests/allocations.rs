//! The steady state (a follower hearing its leader's heartbeat and having nothing
//! else to do, a leader sending its heartbeat round) allocates nothing.
//!
//! A counting global allocator (`stats_alloc`) wraps the system one; the test
//! asserts counts, not timings.

use std::alloc::System;
use std::time::{Duration, Instant};

use bully_core::{Config, Event, Message, Node, NodeId, Role, Transmit};
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

#[test]
fn heartbeats_in_and_out_allocate_nothing_once_warm() {
    let members: Vec<NodeId> = (1..=64).map(NodeId).collect();
    let config = Config::default();
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
