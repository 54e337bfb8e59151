//! W1 under turmoil: work done with `run_while_leader` never overlaps across
//! leaderships when the cluster has a quorum, and does when it has none.
//!
//! Five hosts run the real driver over turmoil's UDP (wire frames, HMAC). Every
//! host runs a job in each of its leaderships and logs the job's interval, in
//! turmoil's simulated time, with the leadership's fencing token. The leader, 5,
//! is cut off from the other four while its job runs; they elect 4, whose job
//! starts; then the partition heals and 5 takes over again. With a majority quorum,
//! 5's job is cancelled before 4's starts (5's lease margin runs out before any
//! follower may vote again), and 4's before 5's second one: no two intervals
//! overlap, on any seed. Without a quorum, 5 never learns it was cut off and keeps
//! working beside 4: the intervals overlap, on every seed.
//!
//! `BULLY_TURMOIL_SEEDS` seeds (16 by default, 64 in CI); `--nocapture` prints the
//! counts.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, FencingToken, Node, NodeId, Quorum};
use bully_tokio::UdpTransport;

mod sim_socket;
use sim_socket::SimSocket;

const PORT: u16 = 7000;
const N: u64 = 5;
const SECRET: &[u8] = b"turmoil test secret, 32 bytes!!!";

fn config(quorum: Quorum) -> Config {
    Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(150))
        .with_max_message_delay(Duration::from_millis(6))
        .with_max_processing_time(Duration::from_millis(2))
        .with_quorum(quorum)
}

fn host(id: u64) -> String {
    format!("n{id}")
}

fn members() -> Vec<NodeId> {
    (1..=N).map(NodeId).collect()
}

/// One run of a job: which host, under which leadership, from when to when (in
/// simulated time since the start; `end` is `None` while it runs).
#[derive(Clone, Copy, Debug)]
struct Interval {
    host: NodeId,
    token: FencingToken,
    start: Duration,
    end: Option<Duration>,
}

impl Interval {
    fn overlaps(&self, other: &Interval) -> bool {
        let ends_after =
            |interval: &Interval, instant: Duration| interval.end.is_none_or(|end| end > instant);
        ends_after(self, other.start) && ends_after(other, self.start)
    }
}

type Log = Arc<Mutex<Vec<Interval>>>;

/// Records the end of a job when its future is dropped, which is how
/// `run_while_leader` cancels it.
struct EndOnDrop {
    log: Log,
    index: usize,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        // Outside the simulation (the sim itself being dropped) there is no clock:
        // the job was still running when the test ended.
        if let Some(now) = turmoil::sim_elapsed() {
            self.log.lock().unwrap()[self.index].end = Some(now);
        }
    }
}

/// One host's software: a node over turmoil UDP, and a job in each leadership.
async fn run_node(
    id: NodeId,
    incarnation: Incarnation,
    quorum: Quorum,
    log: Log,
) -> turmoil::Result {
    let socket = turmoil::net::UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    let peers: Vec<(NodeId, SocketAddr)> = members()
        .into_iter()
        .map(|peer| (peer, SocketAddr::new(turmoil::lookup(host(peer.0)), PORT)))
        .collect();
    let auth = Auth::hmac(Key::new(KeyId(1), SECRET)?);
    let codec = Codec::new(ClusterId(5), id, incarnation, members(), auth)?;
    let transport = UdpTransport::new(SimSocket(socket), codec, peers);
    let node = Node::new(id, members(), config(quorum))?;
    let handle = bully_tokio::spawn(node, transport);
    handle
        .run_while_leader(move |leadership| {
            let log = log.clone();
            async move {
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(Interval {
                        host: id,
                        token: leadership.token(),
                        start: turmoil::sim_elapsed().expect("inside the simulation"),
                        end: None,
                    });
                    log.len() - 1
                };
                let _end = EndOnDrop { log, index };
                // The job: runs until its leadership's signal cancels it.
                std::future::pending::<()>().await
            }
        })
        .await;
    Ok(())
}

fn sim(seed: u64, quorum: Quorum, log: &Log) -> turmoil::Sim<'static> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(120))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .rng_seed(seed)
        .build();
    for id in 1..=N {
        let log = log.clone();
        let starts = Arc::new(AtomicU64::new(0));
        sim.host(host(id), move || {
            let log = log.clone();
            let incarnation = Incarnation(starts.fetch_add(1, Ordering::Relaxed) + 1);
            async move { run_node(NodeId(id), incarnation, quorum, log).await }
        });
    }
    sim
}

/// Steps until host `id` has started a job after `since` (simulated time).
fn until_works(sim: &mut turmoil::Sim<'_>, log: &Log, id: u64, since: Duration) {
    let limit = sim.elapsed() + Duration::from_secs(10);
    while !log
        .lock()
        .unwrap()
        .iter()
        .any(|interval| interval.host == NodeId(id) && interval.start >= since)
    {
        assert!(sim.elapsed() < limit, "{id} never started its job");
        sim.step().unwrap();
    }
}

fn run_for(sim: &mut turmoil::Sim<'_>, duration: Duration) {
    let until = sim.elapsed() + duration;
    while sim.elapsed() < until {
        sim.step().unwrap();
    }
}

fn split_five_from_the_rest(sim: &mut turmoil::Sim<'_>, cut: bool) {
    for low in 1..N {
        if cut {
            sim.partition(host(low), host(N));
        } else {
            sim.repair(host(low), host(N));
        }
    }
}

/// One seed's story; returns every job interval.
fn partition_the_working_leader(seed: u64, quorum: Quorum) -> Vec<Interval> {
    let log: Log = Arc::default();
    let mut sim = sim(seed, quorum, &log);
    until_works(&mut sim, &log, 5, Duration::ZERO);
    // Let 5's job run for a while, so the cut lands at an arbitrary point.
    run_for(&mut sim, Duration::from_millis(100 + seed * 37 % 200));

    split_five_from_the_rest(&mut sim, true);
    let cut_at = sim.elapsed();
    until_works(&mut sim, &log, 4, cut_at);
    run_for(&mut sim, Duration::from_millis(500));

    split_five_from_the_rest(&mut sim, false);
    let healed_at = sim.elapsed();
    until_works(&mut sim, &log, 5, healed_at);
    run_for(&mut sim, Duration::from_millis(300));

    // (Edition 2024: the guard is dropped before `sim`, whose hosts' jobs lock
    // the log as they are dropped.)
    log.lock().unwrap().clone()
}

/// Pairs of job intervals that overlap in time, with how long each overlap lasted.
fn overlaps(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
    let mut found = Vec::new();
    for (i, a) in intervals.iter().enumerate() {
        for b in &intervals[i + 1..] {
            if a.overlaps(b) {
                found.push((*a, *b));
            }
        }
    }
    found
}

fn seeds() -> u64 {
    std::env::var("BULLY_TURMOIL_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16)
}

#[test]
fn with_a_quorum_the_old_leaders_job_stops_before_the_new_leaders_starts() {
    let mut jobs = 0;
    let mut closest = Duration::MAX;
    for seed in 1..=seeds() {
        let intervals = partition_the_working_leader(seed, Quorum::Majority);
        // The smallest gap between one host's job ending and another's starting.
        for a in &intervals {
            for b in intervals.iter().filter(|b| b.host != a.host) {
                if let Some(end) = a.end.filter(|&end| end <= b.start) {
                    closest = closest.min(b.start - end);
                }
            }
        }
        let found = overlaps(&intervals);
        assert!(
            found.is_empty(),
            "seed {seed}: jobs of two leaderships overlap: {found:#?}"
        );
        // 5, then 4, then 5 again: at least three leaderships worked.
        let tokens: std::collections::BTreeSet<_> = intervals.iter().map(|i| i.token).collect();
        assert!(tokens.len() >= 3, "seed {seed}: {intervals:#?}");
        jobs += intervals.len();
    }
    println!(
        "with a majority quorum: {} seeds, {jobs} job intervals, 0 overlapping pairs; \
         the closest hand-over left {closest:?} between one job's end and the next's start",
        seeds()
    );
}

#[test]
fn without_a_quorum_the_cut_off_leader_keeps_working_beside_the_new_one() {
    let mut overlapping_pairs = 0;
    let mut overlapping_time = Duration::ZERO;
    for seed in 1..=seeds() {
        let intervals = partition_the_working_leader(seed, Quorum::None);
        let found = overlaps(&intervals);
        // 5 keeps leading alone on its side: its job runs on through 4's.
        assert!(
            found.iter().any(|(a, b)| {
                let hosts = [a.host, b.host];
                hosts.contains(&NodeId(5)) && hosts.contains(&NodeId(4))
            }),
            "seed {seed}: expected 5's and 4's jobs to overlap: {intervals:#?}"
        );
        overlapping_pairs += found.len();
        for (a, b) in &found {
            let start = a.start.max(b.start);
            let end = match (a.end, b.end) {
                (Some(x), Some(y)) => x.min(y),
                (x, y) => x.or(y).expect("two unfinished jobs on one side each"),
            };
            overlapping_time += end - start;
        }
    }
    println!(
        "without a quorum: {} seeds, {overlapping_pairs} overlapping pairs, {overlapping_time:?} of overlap in all",
        seeds()
    );
}
