//! Five nodes under turmoil: simulated hosts, a simulated UDP network and
//! simulated time, running the real driver and the real `UdpTransport` (wire
//! frames, HMAC, replay windows) over turmoil's sockets.
//!
//! Each scenario injects a fault, clears it, and measures in simulated time how
//! long until every live host names the same leader, against the bound `Config`
//! computes: `failover_bound` after a leader crash, `settle_bound` after any other
//! fault clears (from any state the fault left behind).
//!
//! Run with `--nocapture` to see the measured times.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, Leader, Node, NodeId};
use bully_tokio::UdpTransport;

mod sim_socket;
use sim_socket::SimSocket;

const PORT: u16 = 7000;
const N: u64 = 5;
const SECRET: &[u8] = b"turmoil test secret, 32 bytes!!!";

fn config() -> Config {
    // turmoil delivers within 1..=5 ms here; its 1 ms tick adds a millisecond of
    // processing granularity.
    Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(150))
        .with_max_message_delay(Duration::from_millis(6))
        .with_max_processing_time(Duration::from_millis(2))
}

fn host(id: u64) -> String {
    format!("n{id}")
}

fn members() -> Vec<NodeId> {
    (1..=N).map(NodeId).collect()
}

/// What each host's node names as leader, as the hosts report it.
type Board = Arc<Mutex<BTreeMap<NodeId, Option<Leader>>>>;

struct Cluster<'a> {
    sim: turmoil::Sim<'a>,
    board: Board,
    down: Vec<u64>,
}

impl<'a> Cluster<'a> {
    fn new(seed: u64) -> Cluster<'a> {
        let mut sim = turmoil::Builder::new()
            .simulation_duration(Duration::from_secs(120))
            .min_message_latency(Duration::from_millis(1))
            .max_message_latency(Duration::from_millis(5))
            .rng_seed(seed)
            .build();
        let board: Board = Arc::default();
        for id in 1..=N {
            let board = board.clone();
            // Each (re)start of the host is a new incarnation, so its peers do not
            // take its fresh sequence numbers for replays.
            let starts = Arc::new(AtomicU64::new(0));
            sim.host(host(id), move || {
                let board = board.clone();
                let incarnation = Incarnation(starts.fetch_add(1, Ordering::Relaxed) + 1);
                async move { run_node(NodeId(id), incarnation, board).await }
            });
        }
        Cluster {
            sim,
            board,
            down: Vec::new(),
        }
    }

    /// Steps the simulation until every live host names `expected`; returns the
    /// simulated time that took. Fails after `limit`.
    fn agree_on(&mut self, expected: u64, limit: Duration) -> Duration {
        let start = self.sim.elapsed();
        loop {
            if self.agreed(expected) {
                return self.sim.elapsed() - start;
            }
            let waited = self.sim.elapsed() - start;
            assert!(
                waited <= limit * 4,
                "no agreement on {expected} after {waited:?}: {:?}",
                self.board.lock().unwrap()
            );
            self.sim.step().unwrap();
        }
    }

    /// Every live host names `expected`, in the same term: one leadership, one
    /// fencing token.
    fn agreed(&self, expected: u64) -> bool {
        let board = self.board.lock().unwrap();
        let mut named = (1..=N)
            .filter(|id| !self.down.contains(id))
            .map(|id| board.get(&NodeId(id)).copied().flatten());
        let Some(Some(first)) = named.next() else {
            return false;
        };
        first.id == NodeId(expected) && named.all(|leader| leader == Some(first))
    }

    /// Restarts a running host's software at once (crash and restart in one step).
    fn bounce(&mut self, id: u64) {
        self.sim.bounce(host(id));
        self.board.lock().unwrap().remove(&NodeId(id));
    }

    fn run_for(&mut self, duration: Duration) {
        let until = self.sim.elapsed() + duration;
        while self.sim.elapsed() < until {
            self.sim.step().unwrap();
        }
    }

    fn crash(&mut self, id: u64) {
        self.sim.crash(host(id));
        self.board.lock().unwrap().remove(&NodeId(id));
        self.down.push(id);
    }

    fn restart(&mut self, id: u64) {
        self.sim.bounce(host(id));
        self.board.lock().unwrap().remove(&NodeId(id));
        self.down.retain(|&down| down != id);
    }
}

/// One host's software: a node over turmoil UDP, reporting its leader.
async fn run_node(id: NodeId, incarnation: Incarnation, board: Board) -> turmoil::Result {
    let socket = turmoil::net::UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    let peers: Vec<(NodeId, SocketAddr)> = members()
        .into_iter()
        .map(|peer| (peer, SocketAddr::new(turmoil::lookup(host(peer.0)), PORT)))
        .collect();
    let auth = Auth::hmac(Key::new(KeyId(1), SECRET)?);
    let codec = Codec::new(ClusterId(5), id, incarnation, members(), auth)?;
    let transport = UdpTransport::new(SimSocket(socket), codec, peers);
    let node = Node::new(id, members(), config())?;
    let handle = bully_tokio::spawn(node, transport);
    let mut leader = handle.leader_watch();
    loop {
        board
            .lock()
            .unwrap()
            .insert(id, *leader.borrow_and_update());
        if leader.changed().await.is_err() {
            return Ok(());
        }
    }
}

/// How many simulator seeds each scenario runs (`BULLY_TURMOIL_SEEDS`, default 16).
fn seeds() -> impl Iterator<Item = u64> {
    let n = std::env::var("BULLY_TURMOIL_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);
    1..=n
}

/// Times to agreement per scenario, over every seed, each checked against its
/// bound as it is recorded.
#[derive(Default)]
struct Results(BTreeMap<&'static str, (Vec<Duration>, Duration)>);

impl Results {
    fn record(&mut self, seed: u64, scenario: &'static str, took: Duration, bound: Duration) {
        assert!(
            took <= bound,
            "{scenario} (seed {seed}): agreement took {took:?}, bound {bound:?}"
        );
        let entry = self.0.entry(scenario).or_insert((Vec::new(), bound));
        entry.0.push(took);
    }

    fn print(mut self) {
        for (scenario, (times, bound)) in &mut self.0 {
            times.sort();
            println!(
                "{scenario}: {} seeds, agreement after median {:?}, max {:?} of simulated time (bound {bound:?})",
                times.len(),
                times[times.len() / 2],
                times[times.len() - 1],
            );
        }
    }
}

fn settle_bound() -> Duration {
    config().settle_bound(N as usize)
}

#[test]
fn five_hosts_boot_and_elect_the_highest() {
    let mut results = Results::default();
    for seed in seeds() {
        let mut cluster = Cluster::new(seed);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "boot", took, settle_bound());
    }
    results.print();
}

#[test]
fn a_partition_elects_a_leader_per_side_and_the_heal_reunites_them() {
    let mut results = Results::default();
    for seed in seeds() {
        let mut cluster = Cluster::new(seed);
        cluster.agree_on(5, settle_bound());

        // {1,2,3} | {4,5}: 1, 2 and 3 lose 5 and elect 3 among themselves.
        for low in 1..=3 {
            for high in 4..=5 {
                cluster.sim.partition(host(low), host(high));
            }
        }
        cluster.run_for(Duration::from_secs(2));
        {
            let board = cluster.board.lock().unwrap();
            for id in 1..=3 {
                assert_eq!(
                    board[&NodeId(id)].map(|l| l.id),
                    Some(NodeId(3)),
                    "{board:?}"
                );
            }
            for id in 4..=5 {
                assert_eq!(
                    board[&NodeId(id)].map(|l| l.id),
                    Some(NodeId(5)),
                    "{board:?}"
                );
            }
        }

        for low in 1..=3 {
            for high in 4..=5 {
                cluster.sim.repair(host(low), host(high));
            }
        }
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "partition {1,2,3}|{4,5} healed", took, settle_bound());
    }
    results.print();
}

#[test]
fn an_intersecting_partition_heals_to_one_leader() {
    let mut results = Results::default();
    for seed in seeds() {
        let mut cluster = Cluster::new(seed);
        cluster.agree_on(5, settle_bound());

        // {1,2,3} and {3,4,5} overlap in 3: 1 and 2 cannot reach 4 or 5, but 3
        // reaches everyone. Whatever happens meanwhile, the heal must settle.
        for low in 1..=2 {
            for high in 4..=5 {
                cluster.sim.partition(host(low), host(high));
            }
        }
        cluster.run_for(Duration::from_secs(2));
        for low in 1..=2 {
            for high in 4..=5 {
                cluster.sim.repair(host(low), host(high));
            }
        }
        let took = cluster.agree_on(5, settle_bound());
        results.record(
            seed,
            "intersecting partition {1,2,3}/{3,4,5} healed",
            took,
            settle_bound(),
        );
    }
    results.print();
}

#[test]
fn a_crashed_leader_is_replaced_within_the_failover_bound_and_retakes_on_restart() {
    let mut results = Results::default();
    for seed in seeds() {
        let mut cluster = Cluster::new(seed);
        cluster.agree_on(5, settle_bound());
        // Let a few heartbeats pass, so the crash lands at an arbitrary point.
        cluster.run_for(Duration::from_millis(200 + seed * 13 % 50));

        cluster.crash(5);
        let failover = config().failover_bound(N as usize);
        let took = cluster.agree_on(4, failover);
        results.record(seed, "leader 5 crashed", took, failover);

        cluster.run_for(Duration::from_millis(500));
        cluster.restart(5);
        let took = cluster.agree_on(5, settle_bound());
        results.record(
            seed,
            "5 restarted (preemption Always)",
            took,
            settle_bound(),
        );
    }
    results.print();
}

#[test]
fn a_bounced_leader_takes_its_place_back() {
    let mut results = Results::default();
    for seed in seeds() {
        let mut cluster = Cluster::new(seed);
        cluster.agree_on(5, settle_bound());
        cluster.run_for(Duration::from_millis(100 + seed * 17 % 50));

        // A crash and an immediate restart: the others may not even notice it was
        // gone; its new incarnation must still be heard, not refused as a replay.
        cluster.bounce(5);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "leader 5 bounced", took, settle_bound());

        cluster.bounce(2);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "follower 2 bounced", took, settle_bound());
    }
    results.print();
}
