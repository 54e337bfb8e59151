//! Instruction counts of the paths `bully-core/benches/node.rs` and
//! `bully-core/benches/wire.rs` time, one call each under callgrind.
//!
//! `cargo bench` in this directory (see README.md for the one-time setup).
//!
//! The scenarios are the criterion benches' own: classic Bully, the default
//! configuration, members `1..=N`, the node measured is `N - 1`, the leader `N`,
//! the lower member 1. A setup function (not counted) builds the node and brings it
//! to the state the message finds it in, its queues grown by its own earlier
//! outputs; the benchmark function handles the message and drains every transmit
//! and event and reads the deadline, as the run loop does, and hands the node back
//! so that dropping it is not counted either.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, Membership, Message, Node, NodeId, Role, Term};
use gungraun::{library_benchmark, library_benchmark_group, main};

/// A node in a given state and the message it is about to handle.
struct Input {
    node: Node,
    now: Instant,
    from: NodeId,
    message: Message,
}

fn node(n: u64, id: NodeId) -> Node {
    let membership = Membership::new((1..=n).map(NodeId)).expect("valid members");
    Node::with_membership(id, membership, Config::default()).expect("valid node")
}

fn drain(node: &mut Node) -> usize {
    let mut outputs = 0;
    while let Some(transmit) = node.poll_transmit() {
        black_box(transmit);
        outputs += 1;
    }
    while let Some(event) = node.poll_event() {
        black_box(event);
        outputs += 1;
    }
    black_box(node.poll_timeout());
    outputs
}

fn candidate(n: u64, start: Instant) -> Node {
    let mut node = node(n, NodeId(n - 1));
    node.start_election(start);
    drain(&mut node);
    assert_eq!(node.role(), Role::Candidate);
    node
}

fn awaiting_coordinator(n: u64, start: Instant) -> Node {
    let mut node = candidate(n, start);
    node.handle_message(start, NodeId(n), Message::Answer { term: Term(1) });
    drain(&mut node);
    node
}

fn follower(n: u64, start: Instant) -> Node {
    let mut node = awaiting_coordinator(n, start);
    node.handle_message(
        start,
        NodeId(n),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    drain(&mut node);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(n)));
    node
}

/// Boxed, so that moving it in and out of the benchmark function is not a copy of
/// the whole node.
fn input(node: Node, start: Instant, from: NodeId, message: Message) -> Box<Input> {
    Box::new(Input {
        node,
        now: start + Duration::from_millis(1),
        from,
        message,
    })
}

/// A follower of `N` hears an Election of a newer term from member 1.
fn election_setup(n: u64) -> Box<Input> {
    let start = Instant::now();
    let message = Message::Election { term: Term(2) };
    input(follower(n, start), start, NodeId(1), message)
}

/// A candidate hears the Answer of `N`.
fn answer_setup(n: u64) -> Box<Input> {
    let start = Instant::now();
    let message = Message::Answer { term: Term(1) };
    input(candidate(n, start), start, NodeId(n), message)
}

/// An answered candidate hears the Coordinator of `N`.
fn coordinator_setup(n: u64) -> Box<Input> {
    let start = Instant::now();
    let message = Message::Coordinator {
        term: Term(1),
        round: 0,
    };
    input(awaiting_coordinator(n, start), start, NodeId(n), message)
}

/// A follower of `N` hears its heartbeat.
fn heartbeat_setup(n: u64) -> Box<Input> {
    let start = Instant::now();
    let message = Message::Heartbeat {
        term: Term(1),
        round: 1,
    };
    input(follower(n, start), start, NodeId(n), message)
}

fn handle(mut input: Box<Input>) -> (Box<Input>, usize) {
    let message = black_box(input.message.clone());
    input.node.handle_message(input.now, input.from, message);
    let outputs = drain(&mut input.node);
    (input, outputs)
}

#[library_benchmark]
#[benches::n(args = [3, 5, 16, 64, 1024], setup = election_setup)]
fn election(input: Box<Input>) -> (Box<Input>, usize) {
    handle(input)
}

#[library_benchmark]
#[benches::n(args = [3, 5, 16, 64, 1024], setup = answer_setup)]
fn answer(input: Box<Input>) -> (Box<Input>, usize) {
    handle(input)
}

#[library_benchmark]
#[benches::n(args = [3, 5, 16, 64, 1024], setup = coordinator_setup)]
fn coordinator(input: Box<Input>) -> (Box<Input>, usize) {
    handle(input)
}

#[library_benchmark]
#[benches::n(args = [3, 5, 16, 64, 1024], setup = heartbeat_setup)]
fn heartbeat(input: Box<Input>) -> (Box<Input>, usize) {
    handle(input)
}

/// The leader `N`, one round into its leadership (its queues grown), at the
/// instant its next heartbeat is due.
fn leader_setup(n: u64) -> (Box<Node>, Instant) {
    let start = Instant::now();
    let mut leader = node(n, NodeId(n));
    leader.start(start);
    drain(&mut leader);
    let interval = Config::default().heartbeat_interval();
    leader.handle_timeout(start + interval);
    drain(&mut leader);
    (Box::new(leader), start + interval * 2)
}

#[library_benchmark]
#[benches::n(args = [3, 5, 16, 64, 1024], setup = leader_setup)]
fn heartbeat_round((mut leader, now): (Box<Node>, Instant)) -> (Box<Node>, usize) {
    leader.handle_timeout(now);
    let outputs = drain(&mut leader);
    (leader, outputs)
}

library_benchmark_group!(
    name = handle_message,
    benchmarks = [election, answer, coordinator, heartbeat, heartbeat_round]
);

const MEMBERS: [NodeId; 5] = [NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)];

fn codec(id: u64) -> Codec {
    let key = Key::new(KeyId(1), b"a benchmark secret of 32 bytes!!").expect("long enough");
    Codec::new(
        ClusterId(1),
        NodeId(id),
        Incarnation(1),
        MEMBERS,
        Auth::hmac(key),
    )
    .expect("valid setup")
}

/// The message of each kind `benches/wire.rs` measures.
fn message(kind: &str) -> Message {
    let term = Term(1_000);
    let active = MEMBERS.to_vec();
    match kind {
        "Election" => Message::Election { term },
        "Answer" => Message::Answer { term },
        "Coordinator" => Message::Coordinator { term, round: 0 },
        "Heartbeat" => Message::Heartbeat { term, round: 1 },
        "Ack" => Message::Ack { term, round: 1 },
        "Resign" => Message::Resign {
            term,
            successor: None,
        },
        "Takeover" => Message::Takeover { term },
        "RingElection" => Message::RingElection {
            term,
            initiator: NodeId(2),
            active,
        },
        "RingCoordinator" => Message::RingCoordinator {
            term,
            leader: NodeId(5),
            initiator: NodeId(2),
            active,
        },
        other => panic!("no message kind {other}"),
    }
}

/// A sender whose frame buffer has already held one frame, and the message.
fn encode_setup(kind: &str) -> Box<(Codec, Message, Vec<u8>)> {
    let mut sender = codec(5);
    let message = message(kind);
    let mut frame = Vec::with_capacity(256);
    sender
        .encode(NodeId(1), &message, &mut frame)
        .expect("encodes");
    Box::new((sender, message, frame))
}

/// A fresh receiver and a frame it has not seen.
fn decode_setup(kind: &str) -> Box<(Codec, Vec<u8>)> {
    let mut frame = Vec::new();
    codec(5)
        .encode(NodeId(1), &message(kind), &mut frame)
        .expect("encodes");
    Box::new((codec(1), frame))
}

#[library_benchmark]
#[benches::kind(
    args = ["Election", "Answer", "Coordinator", "Heartbeat", "Ack", "Resign", "Takeover", "RingElection", "RingCoordinator"],
    setup = encode_setup
)]
fn encode_authenticate(
    mut input: Box<(Codec, Message, Vec<u8>)>,
) -> Box<(Codec, Message, Vec<u8>)> {
    let (sender, message, frame) = &mut *input;
    sender
        .encode(NodeId(1), black_box(&*message), frame)
        .expect("encodes");
    input
}

#[library_benchmark]
#[benches::kind(
    args = ["Election", "Answer", "Coordinator", "Heartbeat", "Ack", "Resign", "Takeover", "RingElection", "RingCoordinator"],
    setup = decode_setup
)]
fn verify_decode(mut input: Box<(Codec, Vec<u8>)>) -> (Box<(Codec, Vec<u8>)>, Message) {
    let (receiver, frame) = &mut *input;
    let (_, message) = receiver.decode(black_box(&frame[..])).expect("accepted");
    (input, message)
}

library_benchmark_group!(
    name = wire,
    benchmarks = [encode_authenticate, verify_decode]
);

main!(library_benchmark_groups = handle_message, wire);
