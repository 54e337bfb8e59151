//! The course exercise "Bully Algorithm Dance" (README.md, "Sources"): its
//! experiments 1 to 5 with six dancers, for many throws of the die.

use bully_core::{Config, MessageKind, NodeId};
use bully_sim::{Simulation, TraceEntry, scenario};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

const THROWS: u64 = 20;

/// The dance's model: every dancer that stands up holds an election at once (the
/// staggered start would have the shorter ones wait to see the tallest's crown).
fn dance_model() -> Config {
    Config::default().with_staggered_start(false)
}

#[test]
fn experiment_1_one_dancer_at_a_time_every_new_tallest_takes_the_crown() {
    for seed in 0..THROWS {
        let run = scenario::dance_experiment(&dance_model(), 1, seed).unwrap();
        // The run says in which order the dancers stood up.
        let order = &run.order;
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, scenario::members(6).collect::<Vec<_>>());
        let prefix_maxima = order
            .iter()
            .scan(NodeId(0), |max, &id| {
                let new = id > *max;
                *max = (*max).max(id);
                Some(new)
            })
            .filter(|&new| new)
            .count() as u64;

        let report = run.report;
        assert_eq!(report.leader, Some(NodeId(6)), "order {order:?}");
        assert_eq!(
            report.leader_changes, prefix_maxima,
            "order {order:?}: the crown moves exactly when a taller dancer stands"
        );
    }
}

#[test]
fn a_seated_dancer_answers_nothing_so_the_tallest_standing_one_is_crowned() {
    // Six dancers, of whom only 1, 2 and 3 stand up: 4, 5 and 6 were never
    // started, so 3's challenge to them goes unanswered and 3 is crowned.
    let mut sim = Simulation::new(4, scenario::members(6), Config::default()).unwrap();
    sim.enable_trace();
    for id in 1..=3 {
        sim.start(NodeId(id)).unwrap();
    }
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
    assert_eq!(sim.highest_live(), Some(NodeId(3)));
    for id in 4..=6 {
        assert!(!sim.is_up(NodeId(id)));
        assert_eq!(sim.node(NodeId(id)).unwrap().stats().sent.total(), 0);
    }
    let lost = sim
        .trace()
        .iter()
        .filter(|record| matches!(record.entry, TraceEntry::Undeliverable { .. }))
        .count();
    assert!(lost > 0, "nothing was sent to the seated dancers");

    // 6 stands up: the tallest, it takes the crown.
    sim.start(NodeId(6)).unwrap();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(6)));
}

#[test]
fn experiment_2_all_at_once_dancer_6_is_crowned_once() {
    let report = scenario::dance_experiment(&dance_model(), 2, 0)
        .unwrap()
        .report;
    assert_eq!(report.leader, Some(NodeId(6)));
    assert_eq!(report.leader_changes, 1);
    // Every dancer asks all taller ones (15 Votes), each is answered (15 OKs), and
    // 6 crowns itself for the other 5 to see.
    assert_eq!(report.messages[MessageKind::Election], 15);
    assert_eq!(report.messages[MessageKind::Answer], 15);
    assert_eq!(report.messages[MessageKind::Coordinator], 5);
}

#[test]
fn experiment_3_leader_sits_down_and_one_dancer_notices() {
    for seed in 0..THROWS {
        let report = scenario::dance_experiment(&dance_model(), 3, seed)
            .unwrap()
            .report;
        assert_eq!(report.leader, Some(NodeId(5)), "seed {seed}");
        assert_eq!(report.leader_changes, 1, "seed {seed}");
        // At most the worst case (dancer 1 notices), at least the best (5 notices).
        assert!(
            (4..=28).contains(&report.total()),
            "seed {seed}: {}",
            report.messages
        );
    }
}

#[test]
fn experiment_4_leader_sits_down_and_two_dancers_notice_at_once() {
    for seed in 0..THROWS {
        let report = scenario::dance_experiment(&dance_model(), 4, seed)
            .unwrap()
            .report;
        assert_eq!(report.leader, Some(NodeId(5)), "seed {seed}");
        assert_eq!(
            report.leader_changes, 1,
            "two elections, one crown: seed {seed}"
        );
    }
}

#[test]
fn experiment_5_leader_and_another_sit_down_and_one_notices() {
    for seed in 0..THROWS {
        let report = scenario::dance_experiment(&dance_model(), 5, seed)
            .unwrap()
            .report;
        let mut die = ChaCha8Rng::seed_from_u64(seed);
        let mut others: Vec<NodeId> = scenario::members(5).collect();
        others.shuffle(&mut die);
        let expected = if others[0] == NodeId(5) {
            NodeId(4)
        } else {
            NodeId(5)
        };
        assert_eq!(
            report.leader,
            Some(expected),
            "seed {seed}: {} sat down too",
            others[0]
        );
        assert_eq!(report.leader_changes, 1, "seed {seed}");
    }
}

#[test]
fn the_dance_scripts_no_experiment_6() {
    assert!(scenario::dance_experiment(&dance_model(), 6, 0).is_err());
}
