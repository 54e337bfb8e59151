//! W1 over the in-process `MemNetwork`: work that `run_while_leader` runs on
//! each leader never overlaps another leadership's with a quorum, whatever the
//! network does to the leader, and does without one.
//!
//! Five nodes on real threads, with the default lease margin
//! (`Config::default_lease_margin`: a quarter of the leader's lease, here 72 ms).
//! Each runs a job in every leadership on a worker thread of its own and logs
//! the job's interval (one process, one clock) with the leadership's fencing
//! token; the job tells its node when it has stopped (`Handle::work_stopped`),
//! which a resign delay waits for before a leader that yields frees its
//! followers' votes. Each story starts with 5 leading and working, does
//! something to it, and ends with 5 leading again:
//!
//! - cut off both ways, and back, three times;
//! - 5 cannot hear the others (their acknowledgements are lost), and back;
//! - 5 cannot be heard (its heartbeats are lost), and back;
//! - a quarter of all messages lost, 5 cut off and back twice meanwhile;
//! - 5 cut off while 2, 3 and 4 restart with fresh state, and back;
//! - 5 paused: every message to and from it held for 600 ms, then delivered
//!   late;
//! - 5 crashes, 4 takes over, and 5 returns with fresh state and takes it back
//!   from a job that needs 50 ms to stop.
//!
//! The assertions are about the order of intervals, never about how long
//! anything took. The control: without a quorum the cut-off leader works beside
//! the new one.
//!
//! Not under `--cfg loom` (real threads and time, outside the model).
#![cfg(not(loom))]

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bully_core::{Config, Node, NodeId, Quorum};
use bully_std::{Builder, Handle, MemNetwork};

mod support;
use bully_sim::{Interval, WorkLog, check_w1, closest_hand_over, overlapping};
use support::faulty::{Faults, FaultyTransport};

const WAIT: Duration = Duration::from_secs(30);
const MEMBERS: [NodeId; 5] = [NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)];
const FIVE: &[NodeId] = &[NodeId(5)];
const OTHERS: &[NodeId] = &[NodeId(1), NodeId(2), NodeId(3), NodeId(4)];

/// How every node of one cluster is set up.
#[derive(Clone, Copy, Debug)]
struct Setup {
    quorum: Quorum,
    /// `Config::with_staggered_start`.
    staggered_start: bool,
    /// How long a job needs to stop once its flag is raised.
    stop_time: Duration,
}

impl Setup {
    fn quorum(quorum: Quorum) -> Setup {
        Setup {
            quorum,
            staggered_start: true,
            stop_time: Duration::ZERO,
        }
    }

    fn config(&self) -> Config {
        Config::default()
            .with_heartbeat_interval(Duration::from_millis(50))
            .with_leader_timeout(Duration::from_millis(300))
            .with_max_message_delay(Duration::from_millis(10))
            .with_max_processing_time(Duration::from_millis(5))
            .with_quorum(self.quorum)
            // A leader that yields tells its followers only once its job has
            // stopped (the job calls `work_stopped`), or after this long.
            .with_resign_delay(Duration::from_millis(150))
            .with_staggered_start(self.staggered_start)
    }
}

/// One running node and the thread that runs its jobs.
struct Member {
    handle: Arc<Handle>,
    worker: JoinHandle<()>,
}

impl Member {
    /// Waits for the worker's momentary hold on the handle (it tells the node its
    /// job stopped) to end, and returns the handle.
    fn take(self) -> (Handle, JoinHandle<()>) {
        let deadline = Instant::now() + WAIT;
        let mut handle = self.handle;
        loop {
            match Arc::try_unwrap(handle) {
                Ok(handle) => return (handle, self.worker),
                Err(shared) => {
                    assert!(Instant::now() < deadline, "the worker keeps its handle");
                    handle = shared;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

struct Cluster {
    setup: Setup,
    network: MemNetwork,
    faults: Faults,
    /// Indexed by id - 1; `None` while crashed.
    members: Vec<Option<Member>>,
    log: WorkLog,
    started: Instant,
    /// Starts so far, to seed each transport's losses differently.
    starts: u64,
}

impl Cluster {
    fn start(setup: Setup) -> Cluster {
        let mut cluster = Cluster {
            setup,
            network: MemNetwork::new(),
            faults: Faults::default(),
            members: MEMBERS.iter().map(|_| None).collect(),
            log: WorkLog::default(),
            started: Instant::now(),
            starts: 0,
        };
        for id in MEMBERS {
            cluster.spawn(id);
        }
        cluster
    }

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Starts node `id` with fresh state (a new `Node`, a new mailbox) and a
    /// worker that runs a job in each of its leaderships.
    fn spawn(&mut self, id: NodeId) {
        self.starts += 1;
        let node = Node::new(id, MEMBERS, self.setup.config()).unwrap();
        let transport =
            FaultyTransport::new(self.network.endpoint(id), self.faults.clone(), self.starts);
        // No lease margin given: the default, a quarter of the leader's lease.
        let handle = Builder::new()
            .poll_interval(Duration::from_millis(10))
            .spawn(node, transport)
            .unwrap();
        let handle = Arc::new(handle);
        let weak: Weak<Handle> = Arc::downgrade(&handle);
        let watch = handle.leader_watch();
        let log = self.log.clone();
        let started = self.started;
        let stop_time = self.setup.stop_time;
        let worker = std::thread::spawn(move || {
            watch.run_while_leader(|leadership| {
                let index = log.start(id, leadership.token(), started.elapsed());
                // The job: steps of at most 5 ms while the leadership is current.
                while leadership.is_current() {
                    leadership.wait_ended(Duration::from_millis(5));
                }
                std::thread::sleep(stop_time);
                log.end(index, started.elapsed());
                if let Some(handle) = weak.upgrade() {
                    // Ends the resign delay: the followers may vote again.
                    let _ = handle.work_stopped();
                }
            });
        });
        self.members[index(id)] = Some(Member { handle, worker });
    }

    /// Stops node `id` at once, telling no one (to the others, a crash); its
    /// job ends with its driver.
    fn crash(&mut self, id: NodeId) {
        let member = self.members[index(id)].take().expect("crash a live node");
        let (handle, worker) = member.take();
        handle.abort();
        worker.join().unwrap();
    }

    /// Waits until a node that `who` accepts starts a job at or after `since`;
    /// returns that node.
    fn until_works(&self, who: impl Fn(NodeId) -> bool, since: Duration) -> NodeId {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(host) = self.log.started_since(&who, since) {
                return host;
            }
            assert!(
                Instant::now() < deadline,
                "nobody expected started a job after {since:?}: {:#?}",
                self.log.intervals()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn five_working(&self) {
        self.until_works(|id| id == NodeId(5), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(100));
    }

    /// After the fault: someone other than 5 works; then, the fault undone by
    /// `heal`, 5 takes the leadership back and works.
    fn another_works_then_five_again(&mut self, fault_at: Duration, heal: impl FnOnce(&mut Self)) {
        self.until_works(|id| id != NodeId(5), fault_at);
        std::thread::sleep(Duration::from_millis(200));
        heal(self);
        let healed_at = self.now();
        self.until_works(|id| id == NodeId(5), healed_at);
        std::thread::sleep(Duration::from_millis(100));
    }

    /// Shuts every node down, joins every worker, and returns every job's
    /// interval (all of them ended).
    fn finish(self) -> Vec<Interval> {
        for member in self.members.into_iter().flatten() {
            let (handle, worker) = member.take();
            handle.shutdown().unwrap();
            // Each worker's loop ends with its driver.
            worker.join().unwrap();
        }
        let intervals = self.log.intervals();
        assert!(intervals.iter().all(|interval| interval.end.is_some()));
        intervals
    }
}

fn index(id: NodeId) -> usize {
    usize::try_from(id.0 - 1).unwrap()
}

/// 5 cut off from the other four, both ways, and back.
fn cut_off(cluster: &mut Cluster) {
    cluster.network.partition(FIVE, OTHERS);
    let cut_at = cluster.now();
    cluster.another_works_then_five_again(cut_at, |c| c.network.repair(FIVE, OTHERS));
}

/// Runs `story` on a fresh cluster, checks W1, and prints what happened.
fn w1_holds(name: &str, setup: Setup, leaderships: usize, story: fn(&mut Cluster)) {
    let mut cluster = Cluster::start(setup);
    cluster.five_working();
    story(&mut cluster);
    let faults = cluster.faults.clone();
    let intervals = cluster.finish();
    if let Err(violation) = check_w1(&intervals, leaderships) {
        panic!("{name}: {violation}\nwhole log: {intervals:#?}");
    }
    let five = |id: NodeId| id == NodeId(5);
    println!(
        "{name}: {} jobs, 0 overlapping; closest hand-over from 5 {:?}, back to 5 {:?}; \
         {} messages lost, {} held",
        intervals.len(),
        closest_hand_over(&intervals, five, |id| !five(id)),
        closest_hand_over(&intervals, |id| !five(id), five),
        faults.lost(),
        faults.held(),
    );
}

#[test]
fn the_leader_cut_off_three_times_stops_before_another_starts() {
    w1_holds("cut off", Setup::quorum(Quorum::Majority), 7, |cluster| {
        for _ in 0..3 {
            cut_off(cluster);
        }
    });
}

#[test]
fn a_leader_that_cannot_hear_the_others_stops_before_another_starts() {
    w1_holds(
        "cannot hear",
        Setup::quorum(Quorum::Majority),
        3,
        |cluster| {
            cluster.network.partition_oneway(OTHERS, FIVE);
            let cut_at = cluster.now();
            cluster.another_works_then_five_again(cut_at, |c| c.network.repair(OTHERS, FIVE));
        },
    );
}

#[test]
fn a_leader_that_cannot_be_heard_stops_before_another_starts() {
    w1_holds(
        "cannot be heard",
        Setup::quorum(Quorum::Majority),
        3,
        |cluster| {
            cluster.network.partition_oneway(FIVE, OTHERS);
            let cut_at = cluster.now();
            cluster.another_works_then_five_again(cut_at, |c| c.network.repair(FIVE, OTHERS));
        },
    );
}

#[test]
fn under_a_quarter_loss_jobs_of_two_leaderships_never_overlap() {
    w1_holds("25 % loss", Setup::quorum(Quorum::Majority), 5, |cluster| {
        cluster.faults.set_loss(250);
        for _ in 0..2 {
            cut_off(cluster);
        }
        std::thread::sleep(Duration::from_secs(1));
        cluster.faults.set_loss(0);
        // 5 leads and works once the loss stops (at once, or after a change
        // under way finishes).
        let deadline = Instant::now() + WAIT;
        while !cluster
            .log
            .intervals()
            .iter()
            .max_by_key(|i| i.start)
            .is_some_and(|last| last.host == NodeId(5) && last.end.is_none())
        {
            assert!(Instant::now() < deadline, "5 does not work after the loss");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(cluster.faults.lost() > 0, "the loss dropped nothing");
    });
}

#[test]
fn members_restarted_without_state_do_not_elect_beside_a_working_leader() {
    // The start not staggered: the restarted 4 stands at once, and only the
    // promise a fresh node makes on start (to vote for nobody for a follower
    // lease) keeps 2 and 3, which forgot acknowledging 5, from electing it.
    let setup = Setup {
        staggered_start: false,
        ..Setup::quorum(Quorum::Majority)
    };
    w1_holds("restart without state", setup, 3, |cluster| {
        cluster.network.partition(FIVE, OTHERS);
        for id in [NodeId(2), NodeId(3), NodeId(4)] {
            cluster.crash(id);
            cluster.spawn(id);
        }
        let cut_at = cluster.now();
        cluster.another_works_then_five_again(cut_at, |c| c.network.repair(FIVE, OTHERS));
    });
}

#[test]
fn a_paused_leader_stops_before_another_starts_and_its_late_messages_change_nothing() {
    w1_holds("paused", Setup::quorum(Quorum::Majority), 3, |cluster| {
        cluster.faults.freeze(NodeId(5));
        let frozen_at = cluster.now();
        cluster.until_works(|id| id != NodeId(5), frozen_at);
        let pause = Duration::from_millis(600);
        std::thread::sleep(pause.saturating_sub(cluster.now() - frozen_at));
        cluster.faults.thaw(NodeId(5));
        let thawed_at = cluster.now();
        cluster.until_works(|id| id == NodeId(5), thawed_at);
        std::thread::sleep(Duration::from_millis(100));
        assert!(cluster.faults.held() > 0, "the freeze held nothing");
    });
}

#[test]
fn a_returning_higher_member_takes_over_only_after_the_old_job_stopped() {
    let setup = Setup {
        stop_time: Duration::from_millis(50),
        ..Setup::quorum(Quorum::Majority)
    };
    w1_holds("hand-over to a returning 5", setup, 3, |cluster| {
        cluster.crash(NodeId(5));
        let crashed_at = cluster.now();
        cluster.until_works(|id| id == NodeId(4), crashed_at);
        std::thread::sleep(Duration::from_millis(200));
        cluster.spawn(NodeId(5));
        let back_at = cluster.now();
        cluster.until_works(|id| id == NodeId(5), back_at);
        std::thread::sleep(Duration::from_millis(100));
    });
}

#[test]
fn without_a_quorum_the_cut_off_leader_works_beside_the_new_one() {
    let mut cluster = Cluster::start(Setup::quorum(Quorum::None));
    cluster.five_working();
    for _ in 0..3 {
        cut_off(&mut cluster);
    }
    let intervals = cluster.finish();
    let found = overlapping(&intervals);
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
