//! Soundarabai et al., "Improved Bully Election Algorithm for Distributed
//! Systems" (README.md, "Sources"): its Table 1 and its section 5.6 equations,
//! from the simulator.
//!
//! Table 1's setting: `N` live processes, the lowest initiates, the crashed former
//! coordinator is outside the set.

use bully_core::{Algorithm, Config, MessageKind, NodeId};
use bully_sim::scenario::{self, ElectionReport};

fn lowest_initiates(algorithm: Algorithm, n: u64) -> ElectionReport {
    let config = Config::default().with_algorithm(algorithm);
    scenario::one_initiator(&config, n, NodeId(1)).unwrap()
}

#[test]
fn table_1_classic_bully_24_99_224_399_624() {
    let measured: Vec<u64> = [5, 10, 15, 20, 25]
        .into_iter()
        .map(|n| lowest_initiates(Algorithm::Classic, n).total())
        .collect();
    assert_eq!(measured, [24, 99, 224, 399, 624]);
}

#[test]
fn table_1_modified_bully_13_28_43_58_73() {
    let measured: Vec<u64> = [5, 10, 15, 20, 25]
        .into_iter()
        .map(|n| lowest_initiates(Algorithm::Modified, n).total())
        .collect();
    assert_eq!(measured, [13, 28, 43, 58, 73]);
}

#[test]
fn classic_each_process_asks_all_above_it_and_the_highest_announces_n_squared_minus_1() {
    for n in [5, 10, 15, 20, 25] {
        let report = lowest_initiates(Algorithm::Classic, n);
        let pairs = n * (n - 1) / 2;
        assert_eq!(report.messages[MessageKind::Election], pairs, "n={n}");
        assert_eq!(report.messages[MessageKind::Answer], pairs, "n={n}");
        assert_eq!(report.messages[MessageKind::Coordinator], n - 1, "n={n}");
        assert_eq!(report.total(), n * n - 1, "equation (4)");
        assert_eq!(report.leader, Some(NodeId(n)));
        // n hears 1's Election after one message time and announces at once.
        assert_eq!(report.delays, 2.0);
    }
}

#[test]
fn modified_one_election_one_handover_one_announcement_3n_minus_2() {
    for n in [5, 10, 15, 20, 25] {
        let report = lowest_initiates(Algorithm::Modified, n);
        assert_eq!(report.messages[MessageKind::Election], n - 1, "n={n}");
        assert_eq!(report.messages[MessageKind::Answer], n - 1, "n={n}");
        assert_eq!(report.messages[MessageKind::Takeover], 1, "n={n}");
        assert_eq!(report.messages[MessageKind::Coordinator], n - 1, "n={n}");
        assert_eq!(report.total(), 3 * n - 2);
        assert_eq!(report.leader, Some(NodeId(n)));
        // Election, Answer, Takeover ("ElectedAsCoordinator"), Coordinator.
        assert_eq!(report.delays, 4.0);
    }
}

#[test]
fn the_ring_with_every_hop_acknowledged_4n_minus_2() {
    for n in [5, 10, 15, 20, 25] {
        let report = lowest_initiates(Algorithm::Ring, n);
        assert_eq!(report.total(), 4 * n - 2, "n={n}: {}", report.messages);
        assert_eq!(report.leader, Some(NodeId(n)));
        // The token's n hops, then the second pass's n - 1.
        let passes = (2 * n - 1) as f64;
        assert!(
            (report.delays - passes).abs() < 1e-9,
            "n={n}: {}",
            report.delays
        );
    }
}

/// Equation (3): `(N-P+1)(N-P) + N - 1` messages when process `P` detects the crash.
fn equation_3(n: u64, p: u64) -> u64 {
    (n - p + 1) * (n - p) + n - 1
}

#[test]
fn equation_3_holds_for_every_initiator_up_to_30_processes() {
    let config = Config::default();
    for n in 2..=30 {
        for p in 1..=n {
            let report = scenario::one_initiator(&config, n, NodeId(p)).unwrap();
            assert_eq!(report.total(), equation_3(n, p), "n={n} p={p}");
        }
    }
}

#[test]
fn modified_follows_figure_6_not_equation_1_elections_go_to_lower_processes_too() {
    let config = Config::default().with_algorithm(Algorithm::Modified);
    for n in 2..=30 {
        for p in 1..=n {
            let report = scenario::one_initiator(&config, n, NodeId(p)).unwrap();
            let equation_1 = 2 * (n - p) + n;
            if p < n {
                // Equation (1) plus the P-1 Elections to lower processes that
                // Figure 6 shows (4 -> 1, 2, 3).
                assert_eq!(report.total(), equation_1 + (p - 1), "n={n} p={p}");
                assert_eq!(report.total(), 3 * n - p - 1);
            } else {
                // The highest has nobody to ask and announces at once.
                assert_eq!(report.total(), n - 1, "n={n}");
            }
        }
    }
}
