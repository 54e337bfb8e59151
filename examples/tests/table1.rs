//! `simulate table`, `formulas` and `plot`: Soundarabai et al.'s Table 1 and
//! Figure 8 as the program prints and draws them.

use std::process::{Command, Output};

use bully_examples::measure::{self, TableRow};
use bully_examples::{plot, report};
use bully_sim::paper;
use bully_sim::scenario::ElectionReport;

fn simulate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simulate"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn table_csv_prints_the_papers_columns_equal_to_the_measured_ones_and_exits_0() {
    let output = simulate(&["table", "--format", "csv"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "n,classic,paper_classic,modified,paper_modified,ring,classic_delays,modified_delays,ring_delays\n\
         5,24,24,13,13,18,2,4,9\n\
         10,99,99,28,28,38,2,4,19\n\
         15,224,224,43,43,58,2,4,29\n\
         20,399,399,58,58,78,2,4,39\n\
         25,624,624,73,73,98,2,4,49\n"
    );
}

#[test]
fn table_for_other_n_leaves_the_paper_columns_empty() {
    let output = simulate(&["table", "--nodes", "5,30,100", "--format", "csv"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], report::TABLE_CSV_HEADER);
    assert_eq!(lines[1], "5,24,24,13,13,18,2,4,9");
    assert_eq!(lines[2], "30,899,,88,,118,2,4,59");
    assert_eq!(lines[3], "100,9999,,298,,398,2,4,199");
}

#[test]
fn table_as_text_says_whether_it_matches() {
    let output = simulate(&["table"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("Measured classic and modified equal Table 1 at all 5 N it lists."));
}

#[test]
fn a_count_that_differs_from_table_1_is_a_mismatch() {
    let mut rows = measure::table(&[10]).unwrap();
    assert!(rows[0].matches_paper());
    let mut off_by_one: ElectionReport = rows[0].modified.clone();
    off_by_one.messages[bully_core::MessageKind::Takeover] += 1;
    rows[0] = TableRow {
        modified: off_by_one,
        ..rows[0].clone()
    };
    assert!(!rows[0].matches_paper());
    assert!(report::table_text(&rows).contains("MISMATCH with Table 1 at N = 10."));
    // Where the paper has no row there is nothing to differ from.
    let beyond = measure::table(&[7]).unwrap();
    assert!(beyond[0].paper().is_none() && beyond[0].matches_paper());
}

#[test]
fn formulas_every_n_up_to_30_and_every_initiator() {
    let rows = measure::formulas(30).unwrap();
    assert_eq!(rows.len(), (2..=30).map(|n| n as usize).sum::<usize>());
    for row in &rows {
        assert_eq!(row.classic, row.equation_3(), "{row:?}");
        assert_eq!(row.modified, row.modified_implementation(), "{row:?}");
        // Equation (1) leaves out the Elections to the P-1 lower processes.
        if row.p < row.n {
            assert_eq!(row.modified - row.equation_1(), row.p - 1, "{row:?}");
        }
    }
    let output = simulate(&["formulas"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("equation (3) (N-P+1)(N-P)+N-1: 464 of 464"));
    assert!(stdout.contains("2(N-P)+N, all pairs: 29 of 464 (exactly the pairs with P = 1)"));
    assert!(stdout.contains("Where the sources disagree, and what the code does:"));
}

#[test]
fn the_papers_own_equations_disagree_with_its_table() {
    for &(n, classic, modified) in &paper::TABLE_1 {
        assert_eq!(paper::equation_4(n), classic);
        assert_eq!(paper::equation_3(n, 1), classic);
        assert_eq!(paper::equation_1(n, 1), modified);
        assert_eq!(paper::table_1_modified(n), modified);
        // Equation (2)'s two sides and equation (6) are not Table 1's column...
        let (left, right) = paper::equation_2(n);
        assert_eq!((left, right), (2 * n - 1, 3 * n - 1));
        assert_eq!(paper::equation_6(n), modified + 1);
        // ...and equation (5) is not equation (4).
        assert_ne!(paper::equation_5(n), classic);
    }
}

#[test]
fn plot_draws_n_up_to_100_with_labelled_axes() {
    let rows = measure::table(&plot::plot_nodes()).unwrap();
    assert_eq!(rows.first().unwrap().n, 5);
    assert_eq!(rows.last().unwrap().n, 100);
    for row in &rows {
        let n = row.n;
        assert_eq!(row.classic.total(), n * n - 1, "n={n}");
        assert_eq!(row.modified.total(), 3 * n - 2, "n={n}");
        assert_eq!(row.ring.total(), paper::ring_implementation(n), "n={n}");
    }
    let svg = plot::messages_svg(&rows).unwrap();
    assert!(svg.starts_with("<svg"));
    for label in [
        "processes (N)",
        "messages (heartbeats excluded)",
        "classic Bully, measured (N^2-1)",
        "modified Bully, measured (3N-2)",
        "ring, measured (4N-2)",
        "Table 1, Bully",
    ] {
        assert!(svg.contains(label), "{label}");
    }
}

#[test]
fn plot_writes_the_file() {
    let path = std::env::temp_dir().join(format!("bully-messages-{}.svg", std::process::id()));
    let output = simulate(&["plot", path.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.contains("processes (N)"));
}

#[test]
fn the_committed_figure_is_what_plot_draws() {
    let rows = measure::table(&plot::plot_nodes()).unwrap();
    let committed = include_str!("../../docs/messages.svg");
    assert_eq!(
        plot::messages_svg(&rows).unwrap(),
        committed,
        "regenerate it: cargo run -p bully-examples --bin simulate -- plot docs/messages.svg"
    );
}
