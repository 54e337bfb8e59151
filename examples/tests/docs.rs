//! The README's "Reproducing the paper" section and `docs/reproducing.md` show
//! what `simulate` prints now, not what it printed once.

mod common;
use common::simulate;

const REGENERATE: &str = "paste the command's new output into the document";

#[test]
fn the_readme_shows_the_table_as_the_command_prints_it() {
    let readme = include_str!("../../README.md");
    for args in [&["table", "--format", "csv"][..], &["table"][..]] {
        assert!(
            readme.contains(&simulate(args)),
            "README, `simulate {}`: {REGENERATE}",
            args.join(" ")
        );
    }
    assert!(
        readme.contains("](docs/messages.svg)"),
        "the figure is embedded"
    );
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
