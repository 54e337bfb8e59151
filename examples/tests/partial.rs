//! `simulate partial`: the rows it prints, its filters, its CSV, and how a row
//! summarises its seeds. What the core achieves in each scenario is asserted by
//! bully-sim's own tests; here only the report's shape and arithmetic.

use std::process::Command;
use std::time::Duration;

use bully_core::{Algorithm, NodeId};
use bully_examples::partial::{self, PARTIAL_CSV_HEADER};
use bully_sim::partial::{
    PartialReport, PartialRow, PartialRun, Placement, QuorumChoice, Scenario, placements,
};

mod common;
use common::simulate;

/// The CSV's lines below the header, split into fields, after checking the
/// header and that every line has as many fields as it.
fn csv_rows(output: &str) -> Vec<Vec<String>> {
    let mut lines = output.lines();
    assert_eq!(lines.next(), Some(PARTIAL_CSV_HEADER), "{output}");
    let columns = PARTIAL_CSV_HEADER.split(',').count();
    lines
        .map(|line| {
            let fields: Vec<String> = line.split(',').map(str::to_owned).collect();
            assert_eq!(fields.len(), columns, "{line}");
            fields
        })
        .collect()
}

/// The value of `column` (a header name) in `row`.
fn field<'a>(row: &'a [String], column: &str) -> &'a str {
    let index = PARTIAL_CSV_HEADER
        .split(',')
        .position(|name| name == column)
        .unwrap_or_else(|| panic!("no column {column}"));
    &row[index]
}

#[test]
fn the_csv_has_one_line_per_scenario_placement_algorithm_and_quorum() {
    let output = simulate(&["partial", "--seeds", "2", "--format", "csv"]);
    let rows = csv_rows(&output);
    // Quorum-loss, constrained and chained-5 put their hub on 4, 3 and 1; the
    // three-member chain's middle is 2 or 1; the other three have no hub. Three
    // algorithms, with and without a quorum.
    assert_eq!(rows.len(), (3 + 3 + 2 + 3 + 1 + 1 + 1) * 3 * 2, "{output}");

    let mut expected = Vec::new();
    for scenario in Scenario::ALL {
        for placement in placements(scenario) {
            for algorithm in ["classic", "modified", "ring"] {
                for quorum in ["majority", "none"] {
                    expected.push((scenario, placement, algorithm, quorum));
                }
            }
        }
    }
    for (row, (scenario, placement, algorithm, quorum)) in rows.iter().zip(expected) {
        assert_eq!(field(row, "scenario"), scenario.name());
        assert_eq!(field(row, "placement"), placement.name());
        let hub = PartialRun::new(scenario, placement).hub();
        assert_eq!(
            field(row, "hub"),
            hub.map_or_else(String::new, |hub| hub.0.to_string())
        );
        assert_eq!(field(row, "algorithm"), algorithm);
        assert_eq!(field(row, "quorum"), quorum);
        assert_eq!(field(row, "seeds"), "2");
        let ended: usize = field(row, "seeds_ending_with_expected").parse().unwrap();
        assert!(ended <= 2, "{row:?}");
        for share in ["availability_median", "availability_min"] {
            let share: f64 = field(row, share).parse().unwrap();
            assert!((0.0..=1.0).contains(&share), "{row:?}");
        }
    }
}

#[test]
fn filters_keep_only_the_scenarios_algorithms_and_quorum_asked_for() {
    let output = simulate(&[
        "partial",
        "--seeds",
        "1",
        "--algorithm",
        "ring",
        "--quorum",
        "majority",
        "--scenario",
        "chained-5,leader-isolated",
        "--format",
        "csv",
    ]);
    let rows = csv_rows(&output);
    let keys: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|row| {
            (
                field(row, "scenario"),
                field(row, "placement"),
                field(row, "algorithm"),
                field(row, "quorum"),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("chained-5", "highest", "ring", "majority"),
            ("chained-5", "middle", "ring", "majority"),
            ("chained-5", "lowest", "ring", "majority"),
            ("leader-isolated", "highest", "ring", "majority"),
        ]
    );

    let output = simulate(&[
        "partial",
        "--seeds",
        "1",
        "--algorithm",
        "classic,modified",
        "--quorum",
        "none",
        "--scenario",
        "constrained",
        "--format",
        "csv",
    ]);
    let rows = csv_rows(&output);
    assert_eq!(rows.len(), 3 * 2, "{output}");
    for row in &rows {
        assert_eq!(field(row, "scenario"), "constrained");
        assert_eq!(field(row, "quorum"), "none");
        assert_ne!(field(row, "algorithm"), "ring");
    }
}

#[test]
fn the_text_has_a_table_per_scenario_with_the_csvs_rows() {
    let args = [
        "partial",
        "--seeds",
        "3",
        "--scenario",
        "quorum-loss,leader-send-only",
    ];
    let text = simulate(&args);
    let csv = simulate(&[&args[..], &["--format", "csv"]].concat());
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), (3 + 1) * 3 * 2);

    // The table's lines: those after a scenario's heading and its column names.
    let mut tables: Vec<(&str, Vec<Vec<&str>>)> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((scenario, _)) = line.split_once(": ")
            && ["quorum-loss", "leader-send-only"].contains(&scenario)
        {
            let header = lines.next().unwrap();
            assert!(
                header.trim_start().starts_with("hub  algorithm"),
                "{header}"
            );
            let table = lines
                .by_ref()
                .take_while(|line| !line.is_empty())
                .map(|line| line.split_whitespace().collect())
                .collect();
            tables.push((scenario, table));
        }
    }
    assert_eq!(
        tables.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        ["quorum-loss", "leader-send-only"],
        "{text}"
    );
    let text_rows: Vec<(&str, &Vec<&str>)> = tables
        .iter()
        .flat_map(|(name, table)| table.iter().map(move |row| (*name, row)))
        .collect();
    assert_eq!(text_rows.len(), rows.len(), "{text}");
    for ((scenario, cells), row) in text_rows.into_iter().zip(&rows) {
        assert_eq!(cells.len(), 16, "{cells:?}");
        assert_eq!(scenario, field(row, "scenario"));
        let hub = field(row, "hub");
        assert_eq!(cells[0], if hub.is_empty() { "-" } else { hub });
        assert_eq!(cells[1], field(row, "algorithm"));
        assert_eq!(cells[2], field(row, "quorum"));
        // A time CSV leaves empty is "never" in the text.
        for (text_cell, column) in [
            (cells[3], "stable_ms_median"),
            (cells[4], "stable_ms_worst"),
            (cells[10], "heal_ms_median"),
            (cells[11], "heal_ms_worst"),
        ] {
            let csv_cell = field(row, column);
            assert_eq!(
                text_cell,
                if csv_cell.is_empty() {
                    "never"
                } else {
                    csv_cell
                },
                "{column}"
            );
        }
        assert_eq!(cells[7], field(row, "term_growth_max"));
        assert_eq!(cells[8], field(row, "election_messages_median"));
        assert_eq!(cells[9], field(row, "election_messages_max"));
        assert_eq!(
            cells[13],
            format!("{}/3", field(row, "seeds_ending_with_expected"))
        );
        assert_eq!(cells[14], field(row, "overlapping_leaderships"));
        assert_eq!(cells[15], field(row, "same_term_leaders"));
    }
}

#[test]
fn the_same_command_prints_the_same_report() {
    let args = ["partial", "--seeds", "2", "--scenario", "chained-3"];
    assert_eq!(simulate(&args), simulate(&args));
}

#[test]
fn bad_arguments_are_refused_without_a_panic() {
    for args in [
        &["partial", "--quorum", "maybe"][..],
        &["partial", "--scenario", "nowhere"],
        &["partial", "--algorithm", "raft"],
        &["partial", "--seeds", "0"],
        &["partial", "--format", "json"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_simulate"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A seed's report with the given time to a stable leader, availability, term
/// growth, election messages and time after the heal; 4 expected.
fn report(
    stable_ms: Option<u64>,
    availability: f64,
    term_growth: u64,
    messages: u64,
    heal_ms: Option<u64>,
) -> PartialReport {
    let ms = |ms: Option<u64>| ms.map(Duration::from_millis);
    let final_leader = stable_ms.map(|_| NodeId(4));
    PartialReport {
        expected: Some(NodeId(4)),
        final_leader,
        time_to_stable: ms(stable_ms),
        availability,
        term_growth,
        election_messages: messages,
        all_messages: messages + 100,
        after_heal: ms(heal_ms),
        healed_leader: Some(NodeId(5)),
        changes_after_heal: 1,
        named: Vec::new(),
        overlapping_leaderships: 1,
        same_term_leaders: 2,
        violations: 0,
    }
}

fn row(reports: Vec<PartialReport>) -> PartialRow {
    PartialRow {
        run: PartialRun::new(Scenario::Chained5, Placement::Highest),
        algorithm: Algorithm::Classic,
        quorum: QuorumChoice::Majority,
        reports,
    }
}

#[test]
fn a_row_summarises_its_seeds_with_never_after_every_time() {
    let row = row(vec![
        report(Some(900), 0.95, 1, 40, Some(70)),
        report(None, 0.10, 7, 900, None),
        report(Some(300), 0.98, 2, 20, Some(60)),
        report(Some(600), 0.97, 0, 30, Some(80)),
    ]);
    // Sorted: 300, 600, 900, never; the upper middle of four is the third.
    assert_eq!(row.stable_median(), Some(Duration::from_millis(900)));
    assert_eq!(
        row.stable_worst(),
        None,
        "one seed had no leader at the end"
    );
    assert_eq!(row.availability_median(), 0.97);
    assert_eq!(row.availability_min(), 0.10);
    assert_eq!(row.term_growth_max(), 7);
    assert_eq!(row.messages_median(), 40);
    assert_eq!(row.messages_max(), 900);
    assert_eq!(row.heal_median(), Some(Duration::from_millis(80)));
    assert_eq!(row.heal_worst(), None);
    assert_eq!(row.expected(), Some(NodeId(4)));
    assert_eq!(row.ending_with_expected(), 3);
    assert_eq!(row.overlapping_leaderships(), 4);
    assert_eq!(row.same_term_leaders(), 8);

    let text = partial::text(std::slice::from_ref(&row));
    assert!(text.contains("\nchained-5: "), "{text}");
    let line = text
        .lines()
        .find(|line| line.contains("classic"))
        .expect("the row");
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "4", "classic", "majority", "900", "never", "97.0", "10.0", "7", "40", "900", "80",
            "never", "4", "3/4", "4", "8"
        ]
    );
    let csv = partial::csv(&[row]);
    assert_eq!(
        csv.lines().nth(1),
        Some("chained-5,highest,4,classic,majority,4,900,,0.970,0.100,7,40,900,80,,4,3,4,8,0")
    );
}

#[test]
fn a_median_is_never_when_half_the_seeds_had_no_leader() {
    let row = row(vec![
        report(None, 0.0, 9, 500, Some(100)),
        report(Some(400), 0.9, 1, 10, Some(100)),
    ]);
    assert_eq!(row.stable_median(), None);
    assert_eq!(row.stable_worst(), None);
    assert_eq!(row.heal_worst(), Some(Duration::from_millis(100)));
    assert_eq!(row.ending_with_expected(), 1);
}
