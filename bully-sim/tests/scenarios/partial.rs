//! Partial partitions with a quorum (`bully_sim::partial`): the highest member that
//! reaches a quorum leads, nobody inflates terms, and two leaders never overlap.
//! Seeds per scenario: `BULLY_PARTIAL_SEEDS` (4; `simulate partial` prints the
//! full figures).

use std::time::Duration;

use crate::support::{ALGORITHMS, shortest_leader_timeout};
use bully_core::{Algorithm, Config, NodeId, Quorum};
use bully_sim::partial::{PartialRun, Placement, Scenario, placements};

fn seeds() -> u64 {
    std::env::var("BULLY_PARTIAL_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(4)
}

/// The timings the partitions run under, each with the staggered detection on
/// and off: the defaults, and Omni-Paxos's traffic at five members (heartbeats
/// every 20 ms, the shortest leader timeout accepted), where a lease is only
/// two round trips long and a higher member's probe on the first heartbeat of
/// a leadership it voted for let that lease lapse: with the staggered
/// detection off nobody led in the constrained partition, terms climbing.
fn timings(algorithm: Algorithm) -> Vec<(&'static str, Config)> {
    let default = Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority);
    let quick = default
        .clone()
        .with_heartbeat_interval(Duration::from_millis(20));
    let quick = quick
        .clone()
        .with_leader_timeout(shortest_leader_timeout(&quick));
    let mut timings = Vec::new();
    for (name, config) in [("default", default), ("at BLE's traffic", quick)] {
        timings.push((name, config.clone()));
        timings.push((name, config.with_stagger_detection(false)));
    }
    timings
}

#[test]
fn with_a_quorum_the_highest_quorum_connected_member_leads_through_every_partial_partition() {
    for algorithm in ALGORITHMS {
        for (timing, config) in timings(algorithm) {
            for scenario in Scenario::ALL {
                for placement in placements(scenario) {
                    for seed in 1..=seeds() {
                        let run = PartialRun::new(scenario, placement);
                        let report = run.run(&config, seed).unwrap();
                        let what = format!(
                            "{algorithm:?} {timing}, staggered detection {} {} hub {} seed {seed}: {report:?}",
                            config.stagger_detection(),
                            scenario.name(),
                            placement.name()
                        );
                        assert!(report.expected.is_some(), "{what}");
                        assert_eq!(report.final_leader, report.expected, "{what}");
                        // The goal: a stable leader within 1 s of the cut (in
                        // every seed, not only the median), 95 % of the window with one,
                        // terms +3 at most, one agreed leader within the failover bound
                        // after the heal.
                        // The ring's token skips a cut link only after an answer
                        // timeout at each dead hop: it is held to 2 s and 90 %.
                        let (stable_goal, availability_goal) = match algorithm {
                            Algorithm::Ring => (Duration::from_secs(2), 0.90),
                            _ => (Duration::from_secs(1), 0.95),
                        };
                        let stable = report.time_to_stable.expect("a stable leader");
                        assert!(stable <= stable_goal, "{what}");
                        assert!(report.availability >= availability_goal, "{what}");
                        assert!(report.term_growth <= 3, "{what}");
                        let bound = config.failover_bound(scenario.members() as usize);
                        let healed = report.after_heal.expect("agreement after the heal");
                        assert!(
                            healed <= bound,
                            "{what}: healed in {healed:?}, bound {bound:?}"
                        );
                        assert_eq!(report.overlapping_leaderships, 0, "{what}");
                        assert_eq!(report.same_term_leaders, 0, "{what}");
                        assert_eq!(report.violations, 0, "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_member_cut_off_from_the_leader_alone_does_not_disturb_it() {
    // The short chain: 3 leads, 1 hears only 2. 1's probes find 2 still
    // following 3, so it stands in no election and moves no term.
    let config = Config::default().with_quorum(Quorum::Majority);
    let report = PartialRun::new(Scenario::Chained3, Placement::Highest)
        .run(&config, 1)
        .unwrap();
    assert_eq!(report.final_leader.map(|id| id.0), Some(3));
    assert_eq!(report.term_growth, 0, "{report:?}");
    assert_eq!(report.time_to_stable, Some(Duration::ZERO), "{report:?}");
    assert!(report.availability > 0.999, "{report:?}");
}

#[test]
fn a_member_that_voted_for_the_hub_takes_over_once_the_partition_heals() {
    // 5 has crashed; 2, 3 and 4 reach only 1, the hub, which leads with their
    // votes (each found by its own probe that it was cut off). 4, the highest
    // live member, follows the leadership it voted for from its first
    // heartbeat, but asks again about taking over a leader timeout later:
    // once the links heal it leads, as L1 says, within the settle bound.
    let n = NodeId;
    for algorithm in ALGORITHMS {
        for (timing, config) in timings(algorithm) {
            let what = format!(
                "{algorithm:?} {timing}, staggered detection {}",
                config.stagger_detection()
            );
            let mut sim = bully_sim::scenario::settled(&config, 5, 7).unwrap();
            sim.crash(n(5)).unwrap();
            for (a, b) in [(2, 3), (2, 4), (3, 4)] {
                sim.cut_both(n(a), n(b)).unwrap();
            }
            let bound = sim.settle_bound();
            assert!(
                sim.run_until_true(bound * 2, |sim| sim.agreed_leader() == Some(n(1))),
                "{what}: the hub leads, {:?}",
                sim.leaders()
            );
            sim.heal();
            assert!(
                sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(n(4))),
                "{what}: 4 takes over after the heal, {:?}",
                sim.leaders()
            );
            assert!(
                sim.violations().is_empty(),
                "{what}: {:?}",
                sim.violations()
            );
        }
    }
}
