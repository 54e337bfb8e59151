//! W1 under turmoil: work done in a leadership never overlaps another
//! leadership's when the cluster has a quorum, whatever the network does to the
//! leader, and does overlap without one.
//!
//! Five hosts run the real driver over turmoil's UDP (wire frames, HMAC), with the
//! default lease margin (`Config::default_lease_margin`: a quarter of the
//! leader's lease). Every host runs a job in each of its leaderships and logs the
//! job's interval, in turmoil's simulated time, with the leadership's fencing
//! token. Each story starts with 5 leading and working, does something to it, and
//! ends with 5 leading again; the stories:
//!
//! - cut off both ways, and back;
//! - 5 cannot hear the others (its acknowledgements never arrive), and back;
//! - 5 cannot be heard (its heartbeats never arrive), and back;
//! - a quarter of all datagrams lost, for ten seconds;
//! - 5 cut off while 2, 3 and 4 restart with fresh state (they forget whom they
//!   acknowledged), and back;
//! - 5 paused: every datagram to and from it held for half a second, then
//!   delivered late;
//! - 5 crashes, 4 takes over, and 5 returns with fresh state and takes it back
//!   from a job that needs 40 ms to stop (with a resign delay that covers it, the
//!   job calling `Handle::work_stopped` once it stopped).
//!
//! With a majority quorum, in every story, on every seed, no two leaderships'
//! jobs overlap, and a job never starts under a lower token than one before it.
//! Two controls show the check can fail: without a quorum, the cut-off leader
//! keeps working beside the new one; and the slow job's hand-over without the
//! resign delay overlaps the returning member's job.
//!
//! `BULLY_TURMOIL_SEEDS` seeds per story (16 by default, 64 in CI); `--nocapture`
//! prints the counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bully_core::wire::Incarnation;
use bully_core::{Config, Node, NodeId, Quorum};
use bully_sim::{Interval, WorkLog, check_w1, closest_hand_over, overlapping};

mod support;
use support::lossy::{Loss, LossySocket};
use support::turmoil::{TurmoilCluster, host, members, seeds, transport};

const N: u64 = 5;
/// The longest any story waits for a member to start working.
const PATIENCE: Duration = Duration::from_secs(10);

/// How every host of one cluster is set up.
#[derive(Clone, Copy, Debug)]
struct Setup {
    quorum: Quorum,
    /// `Config::with_resign_delay`.
    resign_delay: Duration,
    /// How long a job needs to stop once its leadership's signal fires (zero: it
    /// is cancelled at once, by `run_while_leader`).
    stop_time: Duration,
    /// `Config::with_staggered_start`.
    staggered_start: bool,
}

impl Setup {
    fn quorum(quorum: Quorum) -> Setup {
        Setup {
            quorum,
            resign_delay: Duration::ZERO,
            stop_time: Duration::ZERO,
            staggered_start: true,
        }
    }

    fn config(&self) -> Config {
        support::turmoil::config()
            .with_quorum(self.quorum)
            .with_resign_delay(self.resign_delay)
            .with_staggered_start(self.staggered_start)
    }
}

/// Everyone but 5.
const OTHERS: [u64; 4] = [1, 2, 3, 4];

/// Records the end of a job when its future is dropped: when it returns, or when
/// `run_while_leader` cancels it, or when its host crashes.
struct EndOnDrop {
    log: WorkLog,
    index: usize,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        // Outside the simulation (the sim itself being dropped) there is no clock:
        // the job was still running when the test ended.
        if let Some(now) = turmoil::sim_elapsed() {
            self.log.end(self.index, now);
        }
    }
}

fn sim_now() -> Duration {
    turmoil::sim_elapsed().expect("inside the simulation")
}

/// What one host's software shares with the test.
#[derive(Clone)]
struct Shared {
    setup: Setup,
    seed: u64,
    log: WorkLog,
    loss: Loss,
    dropped: Arc<AtomicU32>,
}

/// One host's software: a node over (lossy) turmoil UDP, and a job in each
/// permit.
async fn run_node(id: NodeId, incarnation: Incarnation, shared: Shared) -> turmoil::Result {
    let rng = shared.seed ^ (id.0 << 32) ^ incarnation.0;
    let lossy = |socket| LossySocket::new(socket, shared.loss.clone(), rng, shared.dropped.clone());
    let transport = transport(id, incarnation, N, lossy).await?;
    let node = Node::new(id, members(N), shared.setup.config())?;
    // No lease margin given: the default, a quarter of the leader's lease.
    let handle = bully_tokio::spawn(node, transport);
    let log = shared.log;
    if shared.setup.stop_time.is_zero() {
        handle
            .run_while_leader(move |leadership| {
                let log = log.clone();
                async move {
                    let index = log.start(id, leadership.token(), sim_now());
                    let _end = EndOnDrop { log, index };
                    // The job: runs until its leadership's signal cancels it.
                    std::future::pending::<()>().await
                }
            })
            .await;
    } else {
        // A job that needs time to stop once told (a child process's grace
        // period): it cannot simply be dropped, so it runs on the leadership
        // itself and says when it has stopped.
        while let Ok(leadership) = handle.permit(Duration::MAX).await {
            let index = log.start(id, leadership.token(), sim_now());
            let end = EndOnDrop {
                log: log.clone(),
                index,
            };
            leadership.ended().await;
            tokio::time::sleep(shared.setup.stop_time).await;
            drop(end);
            handle.work_stopped().await?;
        }
    }
    Ok(())
}

/// Five hosts under one seed, the work log, and the controls the stories use.
struct Cluster {
    net: TurmoilCluster,
    log: WorkLog,
    loss: Loss,
    dropped: Arc<AtomicU32>,
    seed: u64,
}

impl Cluster {
    fn new(seed: u64, setup: Setup) -> Cluster {
        let shared = Shared {
            setup,
            seed,
            log: WorkLog::default(),
            loss: Loss::default(),
            dropped: Arc::default(),
        };
        // Each (re)start of the host is a new incarnation with fresh state: a
        // new `Node`, no durable state.
        let software = {
            let shared = shared.clone();
            move |id, incarnation| run_node(id, incarnation, shared.clone())
        };
        Cluster {
            net: TurmoilCluster::new(seed, N, software),
            log: shared.log,
            loss: shared.loss,
            dropped: shared.dropped,
            seed,
        }
    }

    fn now(&self) -> Duration {
        self.net.now()
    }

    fn run_for(&mut self, duration: Duration) {
        self.net.run_for(duration);
    }

    /// Steps until a host that `who` accepts starts a job at or after `since`;
    /// returns that host.
    fn until_works(&mut self, who: impl Fn(NodeId) -> bool, since: Duration) -> NodeId {
        let limit = self.now() + PATIENCE;
        loop {
            if let Some(host) = self.log.started_since(&who, since) {
                return host;
            }
            assert!(
                self.now() < limit,
                "seed {}: nobody expected started a job within {PATIENCE:?} after {since:?}: {:#?}",
                self.seed,
                self.log.intervals()
            );
            self.net.step();
        }
    }

    /// Boots, waits for 5's first job, and lets it run for a while, so the fault
    /// lands at an arbitrary point of its heartbeat rounds.
    fn five_working(&mut self) {
        self.until_works(|id| id == NodeId(5), Duration::ZERO);
        self.run_for(Duration::from_millis(100 + self.seed * 37 % 200));
    }

    /// After the fault: someone other than 5 works; then, the fault undone by
    /// `heal`, 5 takes the leadership back and works.
    fn another_works_then_five_again(&mut self, fault_at: Duration, heal: impl FnOnce(&Self)) {
        self.until_works(|id| id != NodeId(5), fault_at);
        self.run_for(Duration::from_millis(500));
        heal(self);
        let healed_at = self.now();
        self.until_works(|id| id == NodeId(5), healed_at);
        self.run_for(Duration::from_millis(300));
    }

    fn intervals(&self) -> Vec<Interval> {
        self.log.intervals()
    }
}

/// 5 cut off from the other four, both ways, and back.
fn cut_off(cluster: &mut Cluster) {
    cluster.five_working();
    cluster.net.cut(&[5], &OTHERS);
    let cut_at = cluster.now();
    cluster.another_works_then_five_again(cut_at, |c| c.net.repair(&[5], &OTHERS));
}

/// 5 hears nothing from the others; they hear its heartbeats, but their
/// acknowledgements are lost, so its lease is never renewed.
fn cannot_hear(cluster: &mut Cluster) {
    cluster.five_working();
    cluster.net.cut_oneway(&OTHERS, &[5]);
    let cut_at = cluster.now();
    cluster.another_works_then_five_again(cut_at, |c| c.net.repair_oneway(&OTHERS, &[5]));
}

/// The others hear nothing from 5; it hears them.
fn cannot_be_heard(cluster: &mut Cluster) {
    cluster.five_working();
    cluster.net.cut_oneway(&[5], &OTHERS);
    let cut_at = cluster.now();
    cluster.another_works_then_five_again(cut_at, |c| c.net.repair_oneway(&[5], &OTHERS));
}

/// A quarter of every host's datagrams lost, on every link: 5 cut off and back
/// three times (so that claims, acknowledgements and resignations are lost
/// too), then five seconds of loss alone; then no loss.
fn lossy(cluster: &mut Cluster) {
    cluster.five_working();
    cluster.loss.set(250);
    for _ in 0..3 {
        cut_off(cluster);
    }
    cluster.run_for(Duration::from_secs(5));
    cluster.loss.set(0);
    // Enough for any leadership change under way to finish and 5 to lead.
    cluster.run_for(Duration::from_secs(2));
    let intervals = cluster.intervals();
    let last = intervals.iter().max_by_key(|i| i.start).copied();
    assert!(
        last.is_some_and(|last| last.host == NodeId(5) && last.end.is_none()),
        "seed {}: after the loss 5 should be working: {intervals:#?}",
        cluster.seed
    );
    assert!(
        cluster.dropped.load(Ordering::Relaxed) > 0,
        "the loss dropped nothing"
    );
}

/// 5 cut off while 2, 3 and 4 restart with fresh state at the same instant:
/// they no longer remember acknowledging 5, and (the start not staggered) 4
/// stands at once, so only the promise a fresh node makes on start (to vote for
/// nobody for a follower lease) keeps 2 and 3 from electing it while 5's job
/// still runs.
fn restart_without_state(cluster: &mut Cluster) {
    cluster.five_working();
    cluster.net.cut(&[5], &OTHERS);
    for id in [2, 3, 4] {
        cluster.net.restart(id);
    }
    let cut_at = cluster.now();
    cluster.another_works_then_five_again(cut_at, |c| c.net.repair(&[5], &OTHERS));
}

/// 5 paused, as the network sees it: every datagram to and from it held for half
/// a second (its lease runs out meanwhile), then all delivered, late.
fn paused(cluster: &mut Cluster) {
    cluster.five_working();
    for other in OTHERS {
        cluster.net.sim.hold(host(5), host(other));
    }
    let held_at = cluster.now();
    cluster.until_works(|id| id != NodeId(5), held_at);
    cluster.run_for(Duration::from_millis(500).saturating_sub(cluster.now() - held_at));
    for other in OTHERS {
        cluster.net.sim.release(host(5), host(other));
    }
    let released_at = cluster.now();
    cluster.until_works(|id| id == NodeId(5), released_at);
    cluster.run_for(Duration::from_millis(300));
}

/// 5 crashes; 4 takes over; 5 returns with fresh state and takes the leadership
/// back from 4.
fn hand_over_to_returning_five(cluster: &mut Cluster) {
    cluster.five_working();
    cluster.net.crash(5);
    let crashed_at = cluster.now();
    cluster.until_works(|id| id == NodeId(4), crashed_at);
    cluster.run_for(Duration::from_millis(300));
    cluster.net.restart(5);
    let back_at = cluster.now();
    cluster.until_works(|id| id == NodeId(5), back_at);
    cluster.run_for(Duration::from_millis(300));
}

/// Runs `story` on every seed with `setup`, and checks W1 on each: at least
/// `leaderships` distinct leaderships worked, none overlapping another.
fn w1_holds(name: &str, setup: Setup, leaderships: usize, story: fn(&mut Cluster)) {
    let mut jobs = 0;
    let mut tokens = 0;
    // The closest hand-overs from 5 to another (its lease ran out, or it
    // resigned) and back (another yielded to 5).
    let mut away = None::<Duration>;
    let mut back = None::<Duration>;
    let mut dropped = 0;
    for seed in 1..=seeds() {
        let mut cluster = Cluster::new(seed, setup);
        story(&mut cluster);
        let intervals = cluster.intervals();
        if let Err(violation) = check_w1(&intervals, leaderships) {
            panic!("{name}, seed {seed}: {violation}\nwhole log: {intervals:#?}");
        }
        jobs += intervals.len();
        tokens += intervals
            .iter()
            .map(|i| i.token)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let five = |id: NodeId| id == NodeId(5);
        let closer = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        away = closer(away, closest_hand_over(&intervals, five, |id| !five(id)));
        back = closer(back, closest_hand_over(&intervals, |id| !five(id), five));
        dropped += cluster.dropped.load(Ordering::Relaxed);
    }
    println!(
        "{name}: {} seeds, {jobs} jobs in {tokens} leaderships, 0 overlapping; \
         closest hand-over from 5 {away:?}, back to 5 {back:?}; {dropped} datagrams lost",
        seeds()
    );
}

#[test]
fn the_leader_cut_off_both_ways_stops_before_another_starts() {
    w1_holds("cut off", Setup::quorum(Quorum::Majority), 3, cut_off);
}

#[test]
fn a_leader_that_cannot_hear_the_others_stops_before_another_starts() {
    w1_holds(
        "cannot hear",
        Setup::quorum(Quorum::Majority),
        3,
        cannot_hear,
    );
}

#[test]
fn a_leader_that_cannot_be_heard_stops_before_another_starts() {
    w1_holds(
        "cannot be heard",
        Setup::quorum(Quorum::Majority),
        3,
        cannot_be_heard,
    );
}

#[test]
fn under_a_quarter_loss_jobs_of_two_leaderships_never_overlap() {
    w1_holds("25 % loss", Setup::quorum(Quorum::Majority), 7, lossy);
}

#[test]
fn members_restarted_without_state_do_not_elect_beside_a_working_leader() {
    let setup = Setup {
        staggered_start: false,
        ..Setup::quorum(Quorum::Majority)
    };
    w1_holds("restart without state", setup, 3, restart_without_state);
}

#[test]
fn a_paused_leader_stops_before_another_starts_and_its_late_messages_change_nothing() {
    w1_holds("paused", Setup::quorum(Quorum::Majority), 3, paused);
}

/// 4's job needs 40 ms to stop; the resign delay gives it 100 ms, and the job
/// says when it has stopped.
const SLOW_STOP: Setup = Setup {
    quorum: Quorum::Majority,
    resign_delay: Duration::from_millis(100),
    stop_time: Duration::from_millis(40),
    staggered_start: true,
};

#[test]
fn a_returning_higher_member_takes_over_only_after_the_old_job_stopped() {
    w1_holds(
        "hand-over to a returning 5",
        SLOW_STOP,
        3,
        hand_over_to_returning_five,
    );
}

#[test]
fn without_the_resign_delay_a_slow_job_overlaps_the_returning_members() {
    // The control for the story above: the same job, no resign delay. 4 resigns
    // the moment 5 claims, and 5 is elected within a round trip, while 4's job
    // still has most of its 40 ms to go.
    let setup = Setup {
        resign_delay: Duration::ZERO,
        ..SLOW_STOP
    };
    for seed in 1..=seeds() {
        let mut cluster = Cluster::new(seed, setup);
        hand_over_to_returning_five(&mut cluster);
        let intervals = cluster.intervals();
        let found = overlapping(&intervals);
        assert!(
            found.iter().any(|(a, b)| {
                let hosts = [a.host, b.host];
                hosts.contains(&NodeId(5)) && hosts.contains(&NodeId(4))
            }),
            "seed {seed}: expected 4's slow job to overlap 5's: {intervals:#?}"
        );
    }
}

#[test]
fn without_a_quorum_the_cut_off_leader_keeps_working_beside_the_new_one() {
    let mut overlapping_pairs = 0;
    let mut overlapping_time = Duration::ZERO;
    for seed in 1..=seeds() {
        let mut cluster = Cluster::new(seed, Setup::quorum(Quorum::None));
        cut_off(&mut cluster);
        let intervals = cluster.intervals();
        let found = overlapping(&intervals);
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
