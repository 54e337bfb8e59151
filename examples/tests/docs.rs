//! `docs/reproducing.md` shows what `simulate` prints now, not what it printed
//! once: Table 1 with its figure, and every other command's output.

mod common;
use common::simulate;

const REGENERATE: &str = "paste the command's new output into the document";

#[test]
fn docs_reproducing_shows_the_table_as_the_command_prints_it() {
    let doc = include_str!("../../docs/reproducing.md");
    for args in [&["table", "--format", "csv"][..], &["table"][..]] {
        assert!(
            doc.contains(&simulate(args)),
            "docs/reproducing.md, `simulate {}`: {REGENERATE}",
            args.join(" ")
        );
    }
    assert!(doc.contains("](messages.svg)"), "the figure is embedded");
}

#[test]
fn docs_reproducing_shows_every_commands_output_as_printed() {
    let doc = include_str!("../../docs/reproducing.md");
    let commands: [&[&str]; 7] = [
        &["formulas"],
        &["cases"],
        &["experiments"],
        &["failover"],
        &["failover", "--format", "csv"],
        &[
            "trace",
            "--algorithm",
            "modified",
            "--nodes",
            "10",
            "--initiator",
            "4",
        ],
        &[
            "trace",
            "--algorithm",
            "classic",
            "--nodes",
            "10",
            "--initiator",
            "4",
        ],
    ];
    for args in commands {
        assert!(
            doc.contains(&simulate(args)),
            "docs/reproducing.md, `simulate {}`: {REGENERATE}",
            args.join(" ")
        );
    }
}

#[test]
fn docs_reproducing_shows_the_partial_connectivity_report_as_printed() {
    let doc = include_str!("../../docs/reproducing.md");
    assert!(
        doc.contains(&simulate(&["partial", "--seeds", "16"])),
        "docs/reproducing.md, `simulate partial --seeds 16`: {REGENERATE}"
    );
}

#[test]
fn docs_correctness_shows_the_costs_as_printed() {
    let doc = include_str!("../../docs/correctness.md");
    for args in [&["costs"][..], &["costs", "--quorum", "majority"][..]] {
        assert!(
            doc.contains(&simulate(args)),
            "docs/correctness.md, `simulate {}`: {REGENERATE} (docs/regenerate.sh)",
            args.join(" ")
        );
    }
}
