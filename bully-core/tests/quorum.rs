//! The quorum gate: no split brain under any partition, and what it costs.
//!
//! `BULLY_QUORUM_SEEDS` sets how many seeded fault schedules the sweep runs per
//! algorithm (2,000 by default; CI runs 10,000; 100,000 for the claim).
#![cfg(feature = "sim")]

use std::time::Duration;

use bully_core::sim::Simulation;
use bully_core::sim::chaos::{FaultMix, random_schedule};
use bully_core::sim::scenario;
use bully_core::{Algorithm, Config, MessageKind, NodeId, Quorum, Role};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

fn quorum_seeds() -> u64 {
    std::env::var("BULLY_QUORUM_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(2_000)
}

fn majority(algorithm: Algorithm) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority)
}

#[test]
fn five_members_elect_the_highest_once_a_majority_acknowledges() {
    for algorithm in ALGORITHMS {
        let sim = scenario::settled(&majority(algorithm), 5, 1).unwrap();
        assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{algorithm:?}");
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn the_leader_cut_off_in_a_minority_steps_down_before_the_majority_elects() {
    for algorithm in ALGORITHMS {
        let config = majority(algorithm);
        let mut sim = scenario::settled(&config, 5, 2).unwrap();
        sim.reset_counts();
        // 4 and 5 on one side, 1, 2, 3 on the other.
        sim.partition(&[&[NodeId(4), NodeId(5)]]).unwrap();
        let lease = config.leader_lease();
        sim.run_for(lease + config.heartbeat_interval());
        assert_ne!(
            sim.node(NodeId(5)).unwrap().role(),
            Role::Leader,
            "{algorithm:?}: 5 gave up once its lease ran out"
        );
        sim.run_for(sim.settle_bound());
        assert_eq!(
            sim.leaders(),
            [NodeId(3)],
            "{algorithm:?}: only the majority side leads"
        );
        for id in [4, 5] {
            assert_eq!(
                sim.node(NodeId(id)).unwrap().leader(),
                None,
                "{algorithm:?}: {id} names no leader"
            );
        }
        assert_eq!(sim.overlapping_leaderships(), 0);
        assert!(
            sim.violations().is_empty(),
            "{algorithm:?}: {:?}",
            sim.violations()
        );

        let settle = sim.heal_and_settle();
        assert_eq!(
            settle.leader,
            Some(NodeId(5)),
            "{algorithm:?}: healed, 5 leads again"
        );
        assert!(settle.within_bound(), "{algorithm:?}: {settle:?}");
        assert!(
            sim.violations().is_empty(),
            "{algorithm:?}: {:?}",
            sim.violations()
        );
    }
}

#[test]
fn an_intersecting_partition_never_yields_two_leaders() {
    // Elasticsearch's split: 3 sees 1 and 5, but 1 and 5 do not see each other.
    for algorithm in ALGORITHMS {
        for (quorum, expect_overlap_free) in [(Quorum::Majority, true), (Quorum::None, false)] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum);
            let mut sim = scenario::settled(&config, 5, 3).unwrap();
            sim.cut_both(NodeId(1), NodeId(5)).unwrap();
            sim.cut_both(NodeId(2), NodeId(5)).unwrap();
            sim.run_for(sim.settle_bound() * 2);
            if expect_overlap_free {
                assert_eq!(sim.overlapping_leaderships(), 0, "{algorithm:?}");
                assert!(
                    sim.leaders().len() <= 1,
                    "{algorithm:?}: {:?}",
                    sim.leaders()
                );
                assert!(
                    sim.violations().is_empty(),
                    "{algorithm:?}: {:?}",
                    sim.violations()
                );
            }
        }
    }
}

/// The claim, over seeded schedules with every fault: partitions
/// (symmetric, one-way, intersecting), loss, duplication, jitter past the model,
/// crashes, restarts with and without state, wrong detector reports, elections
/// and step-downs on command; a quarter of them with a resign delay.
#[test]
fn no_two_members_ever_lead_at_once_under_any_fault_schedule() {
    let seeds = quorum_seeds();
    for algorithm in ALGORITHMS {
        let mut overlaps_without = 0;
        for seed in 0..seeds {
            // One schedule in four with a resign delay (bully-agent's setting):
            // a yielding leader frees its followers' promises only later.
            let config = if seed % 4 == 3 {
                majority(algorithm).with_resign_delay(Duration::from_millis(150))
            } else {
                majority(algorithm)
            };
            let n = 3 + seed % 5;
            let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
            let schedule = random_schedule(
                seed,
                &members,
                16,
                Duration::from_millis(400),
                &config,
                FaultMix::ALL,
            );
            let mut sim = Simulation::new(seed, members.iter().copied(), config.clone()).unwrap();
            sim.start_all();
            for action in &schedule {
                sim.apply(action).unwrap();
                assert!(
                    sim.violations().is_empty(),
                    "{algorithm:?} seed {seed} n {n}: {:?} after {action:?}\n{schedule:?}",
                    sim.violations()
                );
            }
            let settle = sim.heal_and_settle();
            assert!(
                sim.violations().is_empty(),
                "{algorithm:?} seed {seed}: {:?}",
                sim.violations()
            );
            // L1: the highest live member leads if a majority is up; otherwise
            // nobody does.
            let live = members.iter().filter(|&&id| sim.is_up(id)).count() as u64;
            let expected = if live > n / 2 {
                sim.highest_live()
            } else {
                None
            };
            assert_eq!(
                settle.leader, expected,
                "{algorithm:?} seed {seed} n {n}: L1\n{schedule:?}"
            );
            if expected.is_none() {
                assert!(
                    sim.leaders().is_empty(),
                    "{algorithm:?} seed {seed}: a minority led"
                );
            } else {
                assert!(
                    settle.within_bound(),
                    "{algorithm:?} seed {seed} n {n}: L2 {settle:?}\n{schedule:?}"
                );
            }
            // The same schedule without a quorum, to show what the gate prevents.
            let plain = config.clone().with_quorum(Quorum::None);
            let mut sim = Simulation::new(seed, members.iter().copied(), plain).unwrap();
            sim.start_all();
            for action in &schedule {
                sim.apply(action).unwrap();
            }
            overlaps_without += sim.overlapping_leaderships();
        }
        eprintln!(
            "{algorithm:?}: {seeds} schedules, 0 overlapping leaderships with a majority quorum; \
             {overlaps_without} without one"
        );
    }
}

#[test]
fn the_gate_costs_an_ack_per_member_and_two_message_delays() {
    for algorithm in ALGORITHMS {
        let n = 10;
        let plain =
            scenario::one_initiator(&Config::default().with_algorithm(algorithm), n, NodeId(1))
                .unwrap();
        let gated = scenario::one_initiator(&majority(algorithm), n, NodeId(1)).unwrap();
        assert_eq!(gated.leader, Some(NodeId(n)));
        let acks = gated.messages[MessageKind::Ack];
        assert!(
            acks >= n - 1,
            "{algorithm:?}: every member acknowledges: {}",
            gated.messages
        );
        eprintln!(
            "{algorithm:?} n={n}: {} messages, {:.1} delays without a quorum; {} messages ({}), {:.1} delays with a majority",
            plain.total(),
            plain.delays,
            gated.total(),
            gated.messages,
            gated.delays
        );
        assert!(
            gated.delays >= plain.delays + 2.0,
            "{algorithm:?}: acknowledgements, then confirmation"
        );
    }
}
