//! The core's cost per handled message: `handle_message`, then draining every
//! transmit and event and reading the next deadline, as the run loop does.
//!
//! `cargo bench -p bully-core --bench node`
//!
//! Each cluster is `1..=N` running classic Bully with the default configuration;
//! the node measured is member `N - 1`, the leader is `N`, and the lower member is
//! 1. The four messages follow one another in an election and its aftermath:
//!
//! - **Election**: a follower of `N` hears an Election of a newer term from 1 (the
//!   leader is gone): it answers 1, loses its leader and asks the one member above
//!   it. Outputs: 2 transmits, 2 events.
//! - **Answer**: that candidate hears `N`'s Answer and waits for its Coordinator.
//!   No output.
//! - **Coordinator**: it hears `N`'s Coordinator and follows. Outputs: 1 event.
//! - **Heartbeat**: the follower hears its leader's heartbeat (the steady state).
//!   No output.
//!
//! The first three change the node's state, so each iteration gets a node brought
//! to that state in an untimed setup (`iter_batched_ref`), with its queues already
//! grown by the setup's own outputs, as a running node's are; the heartbeat leaves
//! the state as it found it and runs on one node.
//!
//! **Heartbeat round** is the leader's side of the steady state at each `N`: its
//! heartbeat timer fires and it queues `N - 1` heartbeats, all drained; criterion's
//! throughput line gives the cost per transmit.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bully_core::{Config, Membership, Message, Node, NodeId, Role, Term};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};

/// Cluster sizes.
const SIZES: [u64; 5] = [3, 5, 16, 64, 1024];

/// Nodes set up per timed batch: few enough that the batch (about 2 KB of state
/// per node) is still in the 32 KB L1 cache when it is timed, as a running
/// node's state is; the clock read around the batch adds a few nanoseconds per
/// message.
const BATCH: u64 = 16;

/// One cluster size: the shared member list and the instant everything starts.
struct Cluster {
    n: u64,
    membership: Membership,
    config: Config,
    start: Instant,
}

impl Cluster {
    fn new(n: u64) -> Cluster {
        Cluster {
            n,
            membership: Membership::new((1..=n).map(NodeId)).expect("valid members"),
            config: Config::default(),
            start: Instant::now(),
        }
    }

    fn leader(&self) -> NodeId {
        NodeId(self.n)
    }

    fn measured(&self) -> NodeId {
        NodeId(self.n - 1)
    }

    fn node(&self, id: NodeId) -> Node {
        Node::with_membership(id, self.membership.clone(), self.config.clone()).expect("valid node")
    }

    /// Member `N - 1` as a candidate in term 1: it asked `N`.
    fn candidate(&self) -> Node {
        let mut node = self.node(self.measured());
        node.start_election(self.start);
        drain(&mut node);
        assert_eq!(node.role(), Role::Candidate);
        node
    }

    /// The candidate once `N` answered: waiting for the Coordinator.
    fn awaiting_coordinator(&self) -> Node {
        let mut node = self.candidate();
        node.handle_message(self.start, self.leader(), Message::Answer { term: Term(1) });
        drain(&mut node);
        node
    }

    /// The follower of `N` in term 1.
    fn follower(&self) -> Node {
        let mut node = self.awaiting_coordinator();
        node.handle_message(
            self.start,
            self.leader(),
            Message::Coordinator {
                term: Term(1),
                round: 0,
            },
        );
        drain(&mut node);
        assert_eq!(node.leader().map(|leader| leader.id), Some(self.leader()));
        node
    }
}

/// The run loop's output side: every transmit, then every event, then the
/// deadline. Returns how many outputs there were.
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

fn handle(node: &mut Node, now: Instant, from: NodeId, message: Message) -> usize {
    node.handle_message(now, from, black_box(message));
    drain(node)
}

fn per_message(c: &mut Criterion) {
    let mut group = c.benchmark_group("handle_message");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let cluster = Cluster::new(n);
        let now = cluster.start + Duration::from_millis(1);
        let (lower, leader) = (NodeId(1), cluster.leader());

        let election = Message::Election { term: Term(2) };
        assert_eq!(
            handle(&mut cluster.follower(), now, lower, election.clone()),
            4
        );
        group.bench_with_input(BenchmarkId::new("Election", n), &cluster, |b, cluster| {
            b.iter_batched_ref(
                || cluster.follower(),
                |node| handle(node, now, lower, election.clone()),
                BatchSize::NumIterations(BATCH),
            )
        });

        let answer = Message::Answer { term: Term(1) };
        group.bench_with_input(BenchmarkId::new("Answer", n), &cluster, |b, cluster| {
            b.iter_batched_ref(
                || cluster.candidate(),
                |node| handle(node, now, leader, answer.clone()),
                BatchSize::NumIterations(BATCH),
            )
        });

        let coordinator = Message::Coordinator {
            term: Term(1),
            round: 0,
        };
        group.bench_with_input(
            BenchmarkId::new("Coordinator", n),
            &cluster,
            |b, cluster| {
                b.iter_batched_ref(
                    || cluster.awaiting_coordinator(),
                    |node| handle(node, now, leader, coordinator.clone()),
                    BatchSize::NumIterations(BATCH),
                )
            },
        );

        let heartbeat = Message::Heartbeat {
            term: Term(1),
            round: 1,
        };
        let mut node = cluster.follower();
        group.bench_function(BenchmarkId::new("Heartbeat", n), |b| {
            b.iter(|| handle(&mut node, now, leader, heartbeat.clone()))
        });
    }
    group.finish();
}

fn heartbeat_round(c: &mut Criterion) {
    let mut group = c.benchmark_group("heartbeat_round");
    for n in SIZES {
        let cluster = Cluster::new(n);
        let mut leader = cluster.node(cluster.leader());
        // `start` would listen first (staggered start); the highest member that
        // stands wins at once.
        leader.start_election(cluster.start);
        drain(&mut leader);
        assert_eq!(leader.role(), Role::Leader);
        let interval = cluster.config.heartbeat_interval();
        let mut now = cluster.start;
        group.throughput(Throughput::Elements(n - 1));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                now += interval;
                leader.handle_timeout(now);
                drain(&mut leader)
            })
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    per_message(&mut criterion);
    heartbeat_round(&mut criterion);
    criterion.final_summary();
}
