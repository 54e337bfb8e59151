//! `simulate cases`, `failover` and `experiments`: the best and worst cases of the
//! lecture notes "Election Algorithm in Distributed Systems", failover by timeout
//! with and without staggering, and the experiments of the course exercise "Bully
//! Algorithm Dance", for every algorithm.

use bully_core::{Algorithm, MessageKind, NodeId};
use bully_examples::measure::{self, Case};
use bully_examples::report;
use bully_sim::paper;

mod common;
use common::simulate;

#[test]
fn best_case_the_second_highest_notices_n_minus_2_messages_in_one_message_time() {
    let rows = measure::cases(&[5, 10, 25]).unwrap();
    for row in rows.iter().filter(|row| row.case == Case::Best) {
        let n = row.n;
        assert_eq!(row.report.leader, Some(NodeId(n - 1)));
        match row.algorithm {
            Algorithm::Classic | Algorithm::Modified => {
                assert_eq!(row.report.total(), paper::best_case_messages(n), "n={n}");
                assert_eq!(row.report.messages[MessageKind::Coordinator], n - 2);
                assert_eq!(row.report.delays, paper::BEST_CASE_DELAYS);
            }
            _ => {
                // The ring cannot: its token goes round the n-1 live processes
                // and the second pass tells them, every hop acknowledged.
                assert_eq!(row.report.total(), paper::ring_implementation(n - 1));
                assert!(row.report.delays > paper::BEST_CASE_DELAYS);
            }
        }
    }
}

#[test]
fn worst_case_the_lowest_notices() {
    let rows = measure::cases(&[5, 10, 25]).unwrap();
    // The sources' model the cases run in: exact clocks.
    let config = measure::config(Algorithm::Classic);
    let answer_wait =
        config.answer_timeout().as_secs_f64() / config.max_message_delay().as_secs_f64();
    for row in rows.iter().filter(|row| row.case == Case::Worst) {
        let n = row.n;
        assert_eq!(row.report.leader, Some(NodeId(n - 1)), "{row:?}");
        match row.algorithm {
            Algorithm::Classic => {
                // O(N^2): everyone above 1 runs an election, each asking the
                // crashed n too.
                assert_eq!(row.report.total(), paper::classic_worst_case(n));
                // 1's Election reaches n-1, n-1 waits out n's silence, and its
                // Coordinator arrives: 4.5 message times, "approximately 5".
                assert_eq!(row.report.delays, 2.0 + answer_wait);
                assert!(row.report.delays <= paper::WORST_CASE_DELAYS);
            }
            Algorithm::Modified => {
                // Equation (6) for the n-1 live processes: its "1 + 1" are the
                // handover and the check with the crashed coordinator.
                assert_eq!(row.report.total(), paper::equation_6(n - 1));
                assert_eq!(row.report.messages[MessageKind::Takeover], 1);
                // Election, Answer, Takeover, the check's wait, Coordinator.
                assert_eq!(row.report.delays, 4.0 + answer_wait);
            }
            _ => assert!(row.report.total() >= paper::ring_implementation(n - 1)),
        }
    }
}

#[test]
fn failover_with_staggering_is_the_best_case() {
    let rows = measure::failover(&[5, 10, 25, 100]).unwrap();
    assert_eq!(rows.len(), 4 * 3 * 2);
    for row in &rows {
        let n = row.n;
        assert_eq!(row.report.leader, Some(NodeId(n - 1)), "{row:?}");
        assert!(row.detection_delays > 0.0);
        let bully = matches!(row.algorithm, Algorithm::Classic | Algorithm::Modified);
        match (bully, row.stagger) {
            (true, true) => {
                // Only the highest survivor notices in time, and it announces.
                assert_eq!(row.report.total(), paper::best_case_messages(n), "{row:?}");
                assert_eq!(row.election_delays(), 1.0, "{row:?}");
            }
            (true, false) if row.algorithm == Algorithm::Classic => {
                // Every survivor notices at once and asks everyone above it.
                assert_eq!(row.report.total(), n * (n - 2), "{row:?}");
            }
            (true, false) => {
                // Modified's Elections go to everyone: more than classic's.
                assert!(row.report.total() > n * (n - 2), "{row:?}");
            }
            (false, _) => assert!(row.report.total() > paper::best_case_messages(n)),
        }
    }
}

#[test]
fn failover_csv_has_one_line_per_n_algorithm_and_staggering() {
    let stdout = simulate(&["failover", "--nodes", "5,10", "--format", "csv"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], report::FAILOVER_CSV_HEADER);
    assert_eq!(lines.len(), 1 + 2 * 3 * 2);
    assert!(lines[1].starts_with("5,classic,true,3,"), "{}", lines[1]);
    assert!(lines[2].starts_with("5,classic,false,15,"), "{}", lines[2]);
}

#[test]
fn cases_prints_every_algorithm_for_each_n() {
    let stdout = simulate(&["cases", "--format", "csv"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], report::CASES_CSV_HEADER);
    assert_eq!(lines.len(), 1 + 2 * 3 * 3);
    assert!(lines.contains(&"best,25,classic,23,1,1,24"));
    assert!(lines.contains(&"best,25,modified,23,1,1,24"));
    assert!(lines.contains(&"worst,25,classic,598,4.5,3,24"));
}

#[test]
fn the_dances_experiments_every_algorithm_crowns_the_tallest_standing_dancer() {
    for seed in 0..5 {
        let rows = measure::experiments(seed).unwrap();
        assert_eq!(rows.len(), 5 * 3);
        for row in &rows {
            let leader = row.report.leader.unwrap();
            match row.number {
                1 | 2 => assert_eq!(leader, NodeId(6), "{row:?}"),
                3 | 4 => assert_eq!(leader, NodeId(5), "{row:?}"),
                _ => assert!(leader == NodeId(5) || leader == NodeId(4), "{row:?}"),
            }
            if row.number >= 2 {
                assert_eq!(row.report.leader_changes, 1, "seed {seed}: {row:?}");
            }
        }
    }
    let stdout = simulate(&["experiments", "--format", "csv"]);
    assert_eq!(stdout.lines().next(), Some(report::EXPERIMENTS_CSV_HEADER));
    assert_eq!(stdout.lines().count(), 1 + 15);
}

#[test]
fn with_no_arguments_simulate_still_tells_the_lecture_notes_example() {
    let stdout = simulate(&[]);
    assert!(stdout.starts_with("The lecture notes' example"));
    assert!(stdout.contains("final leader: 7"));
}
