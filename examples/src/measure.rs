//! The measurements behind each `simulate` command: which scenario of
//! `bully_sim::scenario` runs, for which sizes and algorithms. Each returns
//! rows that [`crate::report`] turns into text or CSV, and that tests assert on.

use bully_core::{Algorithm, Config, Event, NodeId};
use bully_sim::scenario::{self, ElectionReport};
use bully_sim::{SimError, TraceEntry};

use bully_sim::paper;

/// The three algorithms, in the order every report lists them.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

/// Table 1's process counts.
pub const TABLE_1_NODES: [u64; 5] = [5, 10, 15, 20, 25];

/// The process counts of the `failover` measurement.
pub const FAILOVER_NODES: [u64; 4] = [5, 10, 25, 100];

/// The process counts of the lecture notes' best and worst cases.
pub const CASE_NODES: [u64; 3] = [5, 10, 25];

/// The default configuration running `algorithm` (timings of a LAN: one message
/// time T_M = 20 ms, the longest a message takes, and replies within P_p = 10 ms,
/// the processing time; detection staggered), in the sources' model: every process that boots holds an election, and every clock
/// is exact (ρ = 0, so the answer timeout is the bare round trip and the costs
/// come out in whole and half message times, as the papers count them).
pub fn config(algorithm: Algorithm) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_staggered_start(false)
        .with_clock_drift(0.0)
}

/// The lower-case name used on the command line and in CSV.
pub fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Classic => "classic",
        Algorithm::Modified => "modified",
        Algorithm::Ring => "ring",
        _ => "other",
    }
}

/// One row of the `table` command: Table 1's election for `n` processes, run once
/// per algorithm.
#[derive(Clone, Debug)]
pub struct TableRow {
    /// Live processes.
    pub n: u64,
    /// Classic Bully's election.
    pub classic: ElectionReport,
    /// Modified Bully's election.
    pub modified: ElectionReport,
    /// The ring's election.
    pub ring: ElectionReport,
}

impl TableRow {
    /// The paper's `(classic, modified)` for this `n`, if Table 1 has the row.
    pub fn paper(&self) -> Option<(u64, u64)> {
        paper::table_1(self.n)
    }

    /// Whether the measured classic and modified counts equal the paper's (true
    /// where the paper has no row).
    pub fn matches_paper(&self) -> bool {
        self.paper().is_none_or(|(classic, modified)| {
            self.classic.total() == classic && self.modified.total() == modified
        })
    }
}

/// Table 1's scenario (`n` live processes, the lowest initiates, the crashed
/// former coordinator outside the set) for each `n` and every algorithm.
pub fn table(nodes: &[u64]) -> Result<Vec<TableRow>, SimError> {
    nodes
        .iter()
        .map(|&n| {
            let run = |algorithm| scenario::one_initiator(&config(algorithm), n, NodeId(1));
            Ok(TableRow {
                n,
                classic: run(Algorithm::Classic)?,
                modified: run(Algorithm::Modified)?,
                ring: run(Algorithm::Ring)?,
            })
        })
        .collect()
}

/// One `(N, P)` pair of the `formulas` command: measured counts when process `p`
/// of `n` alone initiates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormulaRow {
    /// Live processes.
    pub n: u64,
    /// The initiator's rank.
    pub p: u64,
    /// Classic Bully's measured messages.
    pub classic: u64,
    /// Modified Bully's measured messages.
    pub modified: u64,
}

impl FormulaRow {
    /// Equation (3) for this pair (classic).
    pub fn equation_3(&self) -> u64 {
        paper::equation_3(self.n, self.p)
    }

    /// Equation (1) for this pair (modified).
    pub fn equation_1(&self) -> u64 {
        paper::equation_1(self.n, self.p)
    }

    /// The count this implementation's modified Bully is documented to send.
    pub fn modified_implementation(&self) -> u64 {
        paper::modified_implementation(self.n, self.p)
    }
}

/// Every initiator `1..=n` of every `n` in `2..=max_n`, classic and modified.
pub fn formulas(max_n: u64) -> Result<Vec<FormulaRow>, SimError> {
    let classic = config(Algorithm::Classic);
    let modified = config(Algorithm::Modified);
    let mut rows = Vec::new();
    for n in 2..=max_n {
        for p in 1..=n {
            rows.push(FormulaRow {
                n,
                p,
                classic: scenario::one_initiator(&classic, n, NodeId(p))?.total(),
                modified: scenario::one_initiator(&modified, n, NodeId(p))?.total(),
            });
        }
    }
    Ok(rows)
}

/// The lecture notes' two cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// The second-highest process notices that the coordinator crashed.
    Best,
    /// The lowest process notices that the coordinator crashed.
    Worst,
}

impl Case {
    /// `"best"` or `"worst"`.
    pub fn name(self) -> &'static str {
        match self {
            Case::Best => "best",
            Case::Worst => "worst",
        }
    }
}

/// One row of the `cases` command.
#[derive(Clone, Debug)]
pub struct CaseRow {
    /// Best or worst.
    pub case: Case,
    /// Processes, the crashed coordinator included.
    pub n: u64,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// What the election cost.
    pub report: ElectionReport,
}

/// The lecture notes' best and worst cases for each `n` and every algorithm: from a
/// settled cluster `1..=n`, `n` crashes and one process is told so.
pub fn cases(nodes: &[u64]) -> Result<Vec<CaseRow>, SimError> {
    let mut rows = Vec::new();
    for case in [Case::Best, Case::Worst] {
        for &n in nodes {
            for algorithm in ALGORITHMS {
                let config = config(algorithm);
                let report = match case {
                    Case::Best => scenario::best_case(&config, n)?,
                    Case::Worst => scenario::worst_case(&config, n)?,
                };
                rows.push(CaseRow {
                    case,
                    n,
                    algorithm,
                    report,
                });
            }
        }
    }
    Ok(rows)
}

/// What the Bully Algorithm Dance's experiments are, in its words (shortened).
pub const EXPERIMENTS: [&str; 5] = [
    "start up one dancer at a time, in the die's order",
    "start up all standing up at once",
    "the leader sits down, one dancer (die) notices",
    "the leader sits down, two dancers notice at once",
    "the leader and one other sit down, one dancer notices",
];

/// One row of the `experiments` command.
#[derive(Clone, Debug)]
pub struct ExperimentRow {
    /// The Bully Algorithm Dance's experiment number, 1 to 5.
    pub number: u8,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// What the experiment cost.
    pub report: ElectionReport,
}

/// The Bully Algorithm Dance's experiments 1 to 5 with six dancers, every algorithm, the die
/// seeded with `seed`.
pub fn experiments(seed: u64) -> Result<Vec<ExperimentRow>, SimError> {
    let mut rows = Vec::new();
    for number in 1..=5 {
        for algorithm in ALGORITHMS {
            rows.push(ExperimentRow {
                number,
                algorithm,
                report: scenario::dance_experiment(&config(algorithm), number, seed)?.report,
            });
        }
    }
    Ok(rows)
}

/// One row of the `failover` command.
#[derive(Clone, Debug)]
pub struct FailoverRow {
    /// Processes, the crashed leader included.
    pub n: u64,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Whether detection was staggered by rank.
    pub stagger: bool,
    /// What the failover cost, from the crash (heartbeats left out, so every
    /// message counted was sent after detection).
    pub report: ElectionReport,
    /// Time from the crash until the first member suspected the leader, in
    /// message delays.
    pub detection_delays: f64,
}

impl FailoverRow {
    /// Time from the first detection until everyone agreed, in message delays.
    pub fn election_delays(&self) -> f64 {
        self.report.delays - self.detection_delays
    }
}

/// A settled cluster's leader crashes and every member finds out by its own
/// leader timeout: each `n`, each algorithm, staggering on and off.
pub fn failover(nodes: &[u64]) -> Result<Vec<FailoverRow>, SimError> {
    let mut rows = Vec::new();
    for &n in nodes {
        for algorithm in ALGORITHMS {
            for stagger in [true, false] {
                let config = config(algorithm).with_stagger_detection(stagger);
                let (report, sim) = scenario::failover_traced(&config, n, 0)?;
                let crashed_at = sim.trace().iter().find_map(|record| {
                    matches!(record.entry, TraceEntry::Crash { .. }).then_some(record.at_us)
                });
                let detected_at = sim.trace().iter().find_map(|record| {
                    matches!(
                        record.entry,
                        TraceEntry::Event {
                            event: Event::LeaderLost { .. },
                            ..
                        }
                    )
                    .then_some(record.at_us)
                });
                let detection_delays = match (crashed_at, detected_at) {
                    (Some(crash), Some(detect)) => {
                        let micros = detect.saturating_sub(crash);
                        sim.in_delays(std::time::Duration::from_micros(micros))
                    }
                    _ => f64::NAN,
                };
                rows.push(FailoverRow {
                    n,
                    algorithm,
                    stagger,
                    report,
                    detection_delays,
                });
            }
        }
    }
    Ok(rows)
}
