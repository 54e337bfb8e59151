//! W1 over the in-process `ChannelNetwork`: work that `run_while_leader` runs on
//! each leader never overlaps another leadership's with a quorum, and does without
//! one.
//!
//! Five nodes on real threads; each runs a job in every leadership on a worker
//! thread of its own and logs the job's interval (one process, one clock) with the
//! leadership's fencing token. The leader, 5, is cut off from the other four while
//! its job runs, they elect 4, the cut heals and 5 takes over again, three times.
//! The assertions are about the order of intervals, not about how long anything
//! took.
//!
//! Not under `--cfg loom` (real threads and time, outside the model).
#![cfg(not(loom))]

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bully_core::{Config, FencingToken, Node, NodeId, Quorum};
use bully_std::{Builder, ChannelNetwork, Handle};

const WAIT: Duration = Duration::from_secs(30);
const MEMBERS: [NodeId; 5] = [NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)];

fn config(quorum: Quorum) -> Config {
    Config::default()
        .with_heartbeat_interval(Duration::from_millis(20))
        .with_leader_timeout(Duration::from_millis(200))
        .with_max_message_delay(Duration::from_millis(10))
        .with_max_processing_time(Duration::from_millis(5))
        .with_quorum(quorum)
}

/// One run of a job: which node, under which leadership, from when to when.
#[derive(Clone, Copy, Debug)]
struct Interval {
    host: NodeId,
    token: FencingToken,
    start: Instant,
    end: Option<Instant>,
}

impl Interval {
    fn overlaps(&self, other: &Interval) -> bool {
        let ends_after =
            |interval: &Interval, instant: Instant| interval.end.is_none_or(|end| end > instant);
        ends_after(self, other.start) && ends_after(other, self.start)
    }
}

type Log = Arc<Mutex<Vec<Interval>>>;

struct Cluster {
    network: ChannelNetwork,
    handles: Vec<Handle>,
    workers: Vec<JoinHandle<()>>,
    log: Log,
    started: Instant,
}

impl Cluster {
    fn start(quorum: Quorum) -> Cluster {
        let started = Instant::now();
        let network = ChannelNetwork::new();
        let log: Log = Arc::default();
        let mut handles = Vec::new();
        let mut workers = Vec::new();
        for id in MEMBERS {
            let node = Node::new(id, MEMBERS, config(quorum)).unwrap();
            // The job notices its flag within 5 ms; the margin leaves it far more,
            // for a loaded machine's scheduling.
            let handle = Builder::new()
                .lease_margin(Duration::from_millis(80))
                .spawn(node, network.endpoint(id))
                .unwrap();
            let watch = handle.leader_watch();
            let log = log.clone();
            workers.push(std::thread::spawn(move || {
                watch.run_while_leader(|leadership| {
                    let index = {
                        let mut log = log.lock().unwrap();
                        log.push(Interval {
                            host: id,
                            token: leadership.token(),
                            start: Instant::now(),
                            end: None,
                        });
                        log.len() - 1
                    };
                    // The job: steps of at most 5 ms while the leadership is current.
                    while leadership.is_current() {
                        leadership.wait_ended(Duration::from_millis(5));
                    }
                    log.lock().unwrap()[index].end = Some(Instant::now());
                });
            }));
            handles.push(handle);
        }
        Cluster {
            network,
            handles,
            workers,
            log,
            started,
        }
    }

    /// Waits until node `id` has started a job after `since`.
    fn until_works(&self, id: u64, since: Instant) {
        let deadline = Instant::now() + WAIT;
        while !self
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|interval| interval.host == NodeId(id) && interval.start >= since)
        {
            assert!(Instant::now() < deadline, "{id} never started its job");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Cuts 5 off, waits for 4's job, heals, waits for 5's job again, three times.
    fn partition_the_working_leader_three_times(self) -> Vec<Interval> {
        let rest = &MEMBERS[..4];
        let five = &MEMBERS[4..];
        self.until_works(5, self.started);
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(100));
            let cut = Instant::now();
            self.network.partition(five, rest);
            self.until_works(4, cut);
            std::thread::sleep(Duration::from_millis(150));
            let healed = Instant::now();
            self.network.repair(five, rest);
            self.until_works(5, healed);
        }
        for handle in self.handles {
            handle.shutdown().unwrap();
        }
        // Each worker's loop ends with its driver.
        for worker in self.workers {
            worker.join().unwrap();
        }
        let intervals = self.log.lock().unwrap().clone();
        assert!(intervals.iter().all(|interval| interval.end.is_some()));
        intervals
    }
}

fn overlapping_pairs(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
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

#[test]
fn with_a_quorum_jobs_of_two_leaderships_never_overlap() {
    let intervals = Cluster::start(Quorum::Majority).partition_the_working_leader_three_times();
    let found = overlapping_pairs(&intervals);
    assert!(found.is_empty(), "overlapping jobs: {found:#?}");
    // 5, then 4 and 5 again three times: seven leaderships at least.
    let tokens: std::collections::BTreeSet<_> = intervals.iter().map(|i| i.token).collect();
    assert!(tokens.len() >= 7, "{intervals:#?}");
}

#[test]
fn without_a_quorum_the_cut_off_leader_works_beside_the_new_one() {
    let intervals = Cluster::start(Quorum::None).partition_the_working_leader_three_times();
    let found = overlapping_pairs(&intervals);
    let five_beside_four = found
        .iter()
        .filter(|(a, b)| {
            let hosts = [a.host, b.host];
            hosts.contains(&NodeId(5)) && hosts.contains(&NodeId(4))
        })
        .count();
    assert!(five_beside_four >= 3, "{intervals:#?}");
    println!(
        "without a quorum: {} overlapping pairs of jobs over three cuts",
        found.len()
    );
}
