//! `simulate costs`: one election's messages and message delays per algorithm,
//! the numbers `docs/correctness.md` quotes. Without a quorum they are the
//! sources' counts that `table`, `formulas`, `cases`, `failover` and `experiments` print;
//! with one, the gate only ever adds to them.

use bully_core::{Algorithm, MessageKind, NodeId, Quorum};
use bully_examples::costs::{self, CostRow};
use bully_examples::measure::{self, Case};
use bully_sim::paper;
use bully_sim::scenario;

mod common;
use common::simulate;

const NODES: [u64; 3] = [5, 10, 25];

fn row(rows: &[CostRow], algorithm: Algorithm, n: u64) -> &CostRow {
    rows.iter()
        .find(|row| row.algorithm == algorithm && row.n == n)
        .expect("every algorithm at every size")
}

#[test]
fn without_a_quorum_every_initiator_costs_what_formulas_and_table_measure() {
    let rows = costs::costs(&NODES, Quorum::None).unwrap();
    for &n in &NODES {
        let classic = row(&rows, Algorithm::Classic, n);
        let modified = row(&rows, Algorithm::Modified, n);
        let ring = row(&rows, Algorithm::Ring, n);
        for p in 1..=n {
            let index = (p - 1) as usize;
            assert_eq!(
                classic.initiators[index].total(),
                paper::equation_3(n, p),
                "classic n={n} p={p}"
            );
            assert_eq!(
                modified.initiators[index].total(),
                paper::modified_implementation(n, p),
                "modified n={n} p={p}"
            );
            assert_eq!(
                ring.initiators[index].total(),
                paper::ring_implementation(n),
                "ring n={n} p={p}"
            );
        }
        // The means over initiators in closed form: classic (N-1)(N+4)/3,
        // modified 5(N-1)/2.
        assert_eq!(
            classic.mean_messages(),
            ((n - 1) * (n + 4)) as f64 / 3.0,
            "n={n}"
        );
        assert_eq!(
            modified.mean_messages(),
            5.0 * (n - 1) as f64 / 2.0,
            "n={n}"
        );
        // The highest initiator sends the fewest (N-1 Coordinators, one delay),
        // the lowest the most.
        assert_eq!(classic.fewest().0, n);
        assert_eq!(classic.fewest().1.total(), n - 1);
        assert_eq!(classic.fewest().1.delays, 1.0);
        assert_eq!(classic.most().0, 1);
        assert_eq!(modified.most().0, 1);
        for row in [classic, modified, ring] {
            assert!(row.all_agreed_on_highest(), "{row:?}");
        }
    }
}

#[test]
fn without_a_quorum_the_crash_cases_are_those_of_cases_failover_and_experiments() {
    let rows = costs::costs(&NODES, Quorum::None).unwrap();
    for case in measure::cases(&NODES).unwrap() {
        let row = row(&rows, case.algorithm, case.n);
        let cost = match case.case {
            Case::Best => &row.best,
            Case::Worst => &row.worst,
        };
        assert_eq!(cost.messages, case.report.messages, "{case:?}");
        assert_eq!(cost.delays, case.report.delays, "{case:?}");
        assert_eq!(cost.depth, case.report.depth, "{case:?}");
    }
    for failover in measure::failover(&NODES)
        .unwrap()
        .into_iter()
        .filter(|failover| failover.stagger)
    {
        let row = row(&rows, failover.algorithm, failover.n);
        assert_eq!(row.failover.messages, failover.report.messages);
        assert_eq!(row.failover.delays, failover.report.delays);
    }
    // The Bully Algorithm Dance's experiment 2 is the cold start of six dancers.
    for algorithm in measure::ALGORITHMS {
        let config = costs::config(algorithm, Quorum::None);
        let cold = costs::cost_row(&config, 6).unwrap().cold_start;
        let experiment = scenario::dance_experiment(&config, 2, 1).unwrap();
        assert_eq!(cold.messages, experiment.report.messages, "{algorithm:?}");
        assert_eq!(cold.depth, experiment.report.depth, "{algorithm:?}");
        assert_eq!(cold.leader, Some(NodeId(6)));
    }
}

#[test]
fn with_a_majority_every_election_still_elects_the_highest_and_costs_more() {
    let plain = costs::costs(&NODES, Quorum::None).unwrap();
    let gated = costs::costs(&NODES, Quorum::Majority).unwrap();
    for (plain, gated) in plain.iter().zip(&gated) {
        let what = format!("{:?} n={}", gated.algorithm, gated.n);
        let ring = gated.algorithm == Algorithm::Ring;
        // L2 (docs/correctness.md, section 1): a failover by timeout stays within
        // the bound the configuration computes, with and without the gate.
        assert!(plain.failover.delays <= plain.failover_bound, "{what}");
        assert!(gated.failover.delays <= gated.failover_bound, "{what}");
        assert!(gated.all_agreed_on_highest(), "{what}: {gated:?}");
        let majority = gated.n / 2 + 1;
        for (p, (plain, gated)) in plain.initiators.iter().zip(&gated.initiators).enumerate() {
            // The winner's claim is voted for by a majority (itself included)
            // before anyone names it.
            assert!(
                gated.messages[MessageKind::Ack] + 1 >= majority,
                "{what} p={}: {}",
                p + 1,
                gated.messages
            );
            assert!(gated.total() > plain.total(), "{what} p={}", p + 1);
        }
        for (plain, gated) in [
            (&plain.best, &gated.best),
            (&plain.worst, &gated.worst),
            (&plain.failover, &gated.failover),
            (&plain.cold_start, &gated.cold_start),
        ] {
            assert!(gated.total() > plain.total(), "{what}");
            if !ring {
                // The members agree only once a claim won and was confirmed. (The
                // ring can agree sooner: its token goes round while the survivors'
                // promises to the crashed leader run out, and its winner claims
                // at once instead of sending a second pass.)
                assert!(gated.delays > plain.delays, "{what}");
            }
        }
    }
}

#[test]
fn simulate_costs_prints_eight_lines_per_algorithm_and_size_as_csv() {
    let stdout = simulate(&["costs", "--nodes", "5", "--format", "csv"]);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some(costs::COSTS_CSV_HEADER));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 3 * 8, "{stdout}");
    assert!(
        rows.contains(&"none,classic,5,most,1,24,2,3,,5"),
        "{stdout}"
    );
    assert!(
        rows.contains(&"none,classic,5,mean,,12.0,1.8,,,"),
        "{stdout}"
    );
    let gated = simulate(&["costs", "--nodes", "5", "--quorum", "majority"]);
    assert!(gated.contains("quorum: majority"), "{gated}");
    assert!(
        gated.contains("Every run ended with every live member naming the highest live member."),
        "{gated}"
    );
}
