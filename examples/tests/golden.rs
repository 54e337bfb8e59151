//! Every scenario `simulate` prints, pinned byte for byte in `tests/golden/`:
//! the sources' example, Table 1, the formulas, the cases, the experiments,
//! failover, the costs with and without a quorum, the partial-partition table,
//! the figure, and one election's log per algorithm in each of its three forms.
//! A change meant to move code (a rename, a split) must leave them as they
//! are; a change meant to alter behaviour records them anew with
//! `BULLY_GOLDEN=record`, and the diff shows what moved.

mod common;

use std::path::PathBuf;

use common::simulate;

/// Each golden file's name and the `simulate` arguments that print it.
const COMMANDS: &[(&str, &[&str])] = &[
    ("example", &["example"]),
    ("table", &["table"]),
    ("table-csv", &["table", "--format", "csv"]),
    ("formulas-csv", &["formulas", "--format", "csv"]),
    ("cases", &["cases"]),
    ("experiments", &["experiments"]),
    ("failover-csv", &["failover", "--format", "csv"]),
    ("costs-csv", &["costs", "--format", "csv"]),
    (
        "costs-majority-csv",
        &["costs", "--quorum", "majority", "--format", "csv"],
    ),
    // One seed per row: every scenario, placement, algorithm and quorum.
    (
        "partial-csv",
        &["partial", "--seeds", "1", "--format", "csv"],
    ),
    (
        "trace-classic",
        &[
            "trace",
            "--algorithm",
            "classic",
            "--nodes",
            "8",
            "--initiator",
            "3",
        ],
    ),
    (
        "trace-modified-mermaid",
        &[
            "trace",
            "--algorithm",
            "modified",
            "--nodes",
            "8",
            "--initiator",
            "3",
            "--mermaid",
        ],
    ),
    (
        "trace-ring-timeline",
        &[
            "trace",
            "--algorithm",
            "ring",
            "--nodes",
            "8",
            "--initiator",
            "3",
            "--timeline",
        ],
    ),
];

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn recording() -> bool {
    std::env::var("BULLY_GOLDEN").is_ok_and(|value| value == "record")
}

/// Records `actual` under `BULLY_GOLDEN=record`, else says whether it matches.
fn matches(name: &str, actual: &str) -> bool {
    let path = golden(name);
    if recording() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return true;
    }
    std::fs::read_to_string(&path).unwrap_or_default() == actual
}

#[test]
fn every_scenario_simulate_prints_is_as_recorded() {
    let differ: Vec<&str> = COMMANDS
        .iter()
        .filter(|(name, args)| !matches(&format!("simulate/{name}.txt"), &simulate(args)))
        .map(|(name, _)| *name)
        .collect();
    assert!(
        differ.is_empty(),
        "simulate's output differs from tests/golden/simulate/ in {differ:?}: a change \
         meant to keep behaviour changed it; one meant to alter it records the new \
         outputs with BULLY_GOLDEN=record"
    );
}

#[test]
fn the_figure_is_as_recorded() {
    let dir = std::env::temp_dir().join(format!("bully-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("messages.svg");
    simulate(&["plot", svg.to_str().unwrap()]);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        matches("simulate/plot.svg", &drawn),
        "the figure differs from tests/golden/simulate/plot.svg"
    );
}
