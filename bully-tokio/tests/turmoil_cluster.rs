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
use std::time::Duration;

use bully_core::NodeId;

mod support;
use support::turmoil::{TurmoilCluster, config, seeds};

const N: u64 = 5;

/// Five hosts reporting their leaders, with the turmoil stories' timings.
fn cluster(seed: u64) -> TurmoilCluster {
    TurmoilCluster::reporting(seed, N, config())
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
    for seed in 1..=seeds() {
        let mut cluster = cluster(seed);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "boot", took, settle_bound());
    }
    results.print();
}

#[test]
fn a_partition_elects_a_leader_per_side_and_the_heal_reunites_them() {
    let mut results = Results::default();
    for seed in 1..=seeds() {
        let mut cluster = cluster(seed);
        cluster.agree_on(5, settle_bound());

        // {1,2,3} | {4,5}: 1, 2 and 3 lose 5 and elect 3 among themselves.
        cluster.cut(&[1, 2, 3], &[4, 5]);
        cluster.run_for(Duration::from_secs(2));
        {
            let board = cluster.board.lock().unwrap();
            for id in 1..=3 {
                assert_eq!(
                    board[&NodeId(id)].leader.map(|l| l.id),
                    Some(NodeId(3)),
                    "{board:?}"
                );
            }
            for id in 4..=5 {
                assert_eq!(
                    board[&NodeId(id)].leader.map(|l| l.id),
                    Some(NodeId(5)),
                    "{board:?}"
                );
            }
        }

        cluster.repair(&[1, 2, 3], &[4, 5]);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "partition {1,2,3}|{4,5} healed", took, settle_bound());
    }
    results.print();
}

#[test]
fn an_intersecting_partition_heals_to_one_leader() {
    let mut results = Results::default();
    for seed in 1..=seeds() {
        let mut cluster = cluster(seed);
        cluster.agree_on(5, settle_bound());

        // {1,2,3} and {3,4,5} overlap in 3: 1 and 2 cannot reach 4 or 5, but 3
        // reaches everyone. Whatever happens meanwhile, the heal must settle.
        cluster.cut(&[1, 2], &[4, 5]);
        cluster.run_for(Duration::from_secs(2));
        cluster.repair(&[1, 2], &[4, 5]);
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
    for seed in 1..=seeds() {
        let mut cluster = cluster(seed);
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
    for seed in 1..=seeds() {
        let mut cluster = cluster(seed);
        cluster.agree_on(5, settle_bound());
        cluster.run_for(Duration::from_millis(100 + seed * 17 % 50));

        // A crash and an immediate restart: the others may not even notice it was
        // gone; its new incarnation must still be heard, not refused as a replay.
        cluster.restart(5);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "leader 5 bounced", took, settle_bound());

        cluster.restart(2);
        let took = cluster.agree_on(5, settle_bound());
        results.record(seed, "follower 2 bounced", took, settle_bound());
    }
    results.print();
}
