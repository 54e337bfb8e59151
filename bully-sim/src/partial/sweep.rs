//! The partial-partition sweep: every scenario for every hub placement,
//! algorithm and quorum choice, over many seeds, summarised per row.
//!
//! Each seed is one [`PartialRun::run`]: a settled cluster led by its highest
//! member, cut at a phase of the heartbeat the seed shifts, measured for 20 s under
//! the cut, then healed. A row summarises its seeds: medians and extremes, with a
//! seed that had no stable leader at the end of the window counted as "never"
//! (sorted after every time, so a median is "never" only when at least half the
//! seeds had none). `simulate partial` (bully-examples) prints the rows.
//!
//! ```
//! use bully_sim::partial::{self, PartialOptions, QuorumChoice, Scenario};
//! use bully_core::{Algorithm, NodeId};
//!
//! let options = PartialOptions {
//!     scenarios: vec![Scenario::LeaderIsolated],
//!     algorithms: vec![Algorithm::Classic],
//!     quorums: vec![QuorumChoice::Majority],
//!     seeds: 1,
//! };
//! let rows = partial::measure(&options)?;
//! assert_eq!(rows.len(), 1);
//! assert_eq!(rows[0].expected(), Some(NodeId(4)));
//! # Ok::<(), bully_sim::SimError>(())
//! ```

use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId, Quorum};

use super::{PartialReport, PartialRun, Placement, Scenario};
use crate::SimError;

/// The number of seeds per row unless told otherwise.
pub const DEFAULT_SEEDS: u64 = 16;

/// With or without a quorum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuorumChoice {
    /// `Quorum::Majority`: no leader without a majority.
    Majority,
    /// `Quorum::None`: the sources' semantics (README.md, "Sources").
    None,
}

impl QuorumChoice {
    /// Both, in the order the report lists them.
    pub const BOTH: [QuorumChoice; 2] = [QuorumChoice::Majority, QuorumChoice::None];

    /// The core's setting.
    pub fn quorum(self) -> Quorum {
        match self {
            QuorumChoice::Majority => Quorum::Majority,
            QuorumChoice::None => Quorum::None,
        }
    }

    /// `"majority"` or `"none"`, as on the command line and in CSV.
    pub fn name(self) -> &'static str {
        match self {
            QuorumChoice::Majority => "majority",
            QuorumChoice::None => "none",
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialOptions {
    /// The scenarios, in the order to report them.
    pub scenarios: Vec<Scenario>,
    /// The algorithms.
    pub algorithms: Vec<Algorithm>,
    /// With a majority quorum, without one, or both.
    pub quorums: Vec<QuorumChoice>,
    /// Seeds `1..=seeds` per row.
    pub seeds: u64,
}

impl Default for PartialOptions {
    /// Every scenario, algorithm and quorum choice, over [`DEFAULT_SEEDS`] seeds.
    fn default() -> PartialOptions {
        PartialOptions {
            scenarios: Scenario::ALL.to_vec(),
            algorithms: vec![Algorithm::Classic, Algorithm::Modified, Algorithm::Ring],
            quorums: QuorumChoice::BOTH.to_vec(),
            seeds: DEFAULT_SEEDS,
        }
    }
}

/// The placements worth running for `scenario`: where it has a hub, each placement
/// that puts the hub on an id no earlier placement did (in the three-member chain
/// two placements name the same middle); only [`Placement::Highest`] where the
/// placement changes nothing.
pub fn placements(scenario: Scenario) -> Vec<Placement> {
    if !scenario.has_hub() {
        return vec![Placement::Highest];
    }
    let mut hubs = Vec::new();
    Placement::ALL
        .into_iter()
        .filter(|&placement| {
            let hub = PartialRun::new(scenario, placement).hub();
            let new = !hubs.contains(&hub);
            hubs.push(hub);
            new
        })
        .collect()
}

/// One row: a scenario with its hub at one placement, one algorithm, one quorum
/// choice, and the report of every seed.
#[derive(Clone, Debug)]
pub struct PartialRow {
    /// The run (scenario, placement, window).
    pub run: PartialRun,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// With or without a quorum.
    pub quorum: QuorumChoice,
    /// One report per seed, seeds `1..=n` in order.
    pub reports: Vec<PartialReport>,
}

/// The middle of `values` once sorted (the upper one of the two middles for an
/// even count); `None` for no values.
fn median<T: Ord + Copy>(mut values: Vec<T>) -> Option<T> {
    values.sort_unstable();
    values.get(values.len() / 2).copied()
}

/// `Some` times first, in order, then `None` ("never"), so that sorting puts a
/// missing time after every measured one.
fn never_last(time: Option<Duration>) -> (bool, Duration) {
    (time.is_none(), time.unwrap_or_default())
}

impl PartialRow {
    /// The hub's id, where the scenario has one.
    pub fn hub(&self) -> Option<NodeId> {
        self.run.hub()
    }

    /// The highest quorum-connected member (the same for every seed: it depends on
    /// the cut only); `None` if no member reaches a quorum.
    pub fn expected(&self) -> Option<NodeId> {
        self.reports.first().and_then(|report| report.expected)
    }

    fn time_median(&self, time: impl Fn(&PartialReport) -> Option<Duration>) -> Option<Duration> {
        median(self.reports.iter().map(|r| never_last(time(r))).collect())
            .and_then(|(never, time)| (!never).then_some(time))
    }

    fn time_worst(&self, time: impl Fn(&PartialReport) -> Option<Duration>) -> Option<Duration> {
        self.reports
            .iter()
            .map(|r| never_last(time(r)))
            .max()
            .and_then(|(never, time)| (!never).then_some(time))
    }

    /// Median time from the cut to a leader that held until the end of the
    /// window; `None` ("never") if at least half the seeds had none.
    pub fn stable_median(&self) -> Option<Duration> {
        self.time_median(|r| r.time_to_stable)
    }

    /// The longest time to a stable leader; `None` ("never") if any seed had none
    /// at the end of the window.
    pub fn stable_worst(&self) -> Option<Duration> {
        self.time_worst(|r| r.time_to_stable)
    }

    /// Median share of the window with an effective leader.
    pub fn availability_median(&self) -> f64 {
        median(
            self.reports
                .iter()
                .map(|r| Permille::of(r.availability))
                .collect(),
        )
        .map_or(0.0, Permille::fraction)
    }

    /// Lowest share of the window with an effective leader.
    pub fn availability_min(&self) -> f64 {
        self.reports
            .iter()
            .map(|r| r.availability)
            .fold(f64::INFINITY, f64::min)
            .min(1.0)
    }

    /// The largest term growth over the window of any seed.
    pub fn term_growth_max(&self) -> u64 {
        self.reports
            .iter()
            .map(|r| r.term_growth)
            .max()
            .unwrap_or(0)
    }

    /// Median election messages (heartbeats and acknowledgements excluded) in
    /// the window.
    pub fn messages_median(&self) -> u64 {
        median(self.reports.iter().map(|r| r.election_messages).collect()).unwrap_or(0)
    }

    /// Most election messages in the window of any seed.
    pub fn messages_max(&self) -> u64 {
        self.reports
            .iter()
            .map(|r| r.election_messages)
            .max()
            .unwrap_or(0)
    }

    /// Median time from the heal until every member names one leader.
    pub fn heal_median(&self) -> Option<Duration> {
        self.time_median(|r| r.after_heal)
    }

    /// Longest time from the heal until agreement; `None` if a seed never agreed
    /// within the settle bound.
    pub fn heal_worst(&self) -> Option<Duration> {
        self.time_worst(|r| r.after_heal)
    }

    /// Seeds whose effective leader at the end of the window was the expected one
    /// (none when no member is expected).
    pub fn ending_with_expected(&self) -> usize {
        self.reports
            .iter()
            .filter(|r| r.expected.is_some() && r.final_leader == r.expected)
            .count()
    }

    /// Two members acting as leader at once, summed over the seeds.
    pub fn overlapping_leaderships(&self) -> u64 {
        self.reports.iter().map(|r| r.overlapping_leaderships).sum()
    }

    /// Two members announcing one term, summed over the seeds.
    pub fn same_term_leaders(&self) -> u64 {
        self.reports.iter().map(|r| r.same_term_leaders).sum()
    }

    /// Safety violations the simulator flagged, summed over the seeds.
    pub fn violations(&self) -> usize {
        self.reports.iter().map(|r| r.violations).sum()
    }
}

/// A share in thousandths, so that shares sort as integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Permille(u64);

impl Permille {
    fn of(fraction: f64) -> Permille {
        Permille((fraction.clamp(0.0, 1.0) * 1000.0).round() as u64)
    }

    fn fraction(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

/// The default timings running `algorithm` with `quorum`, every member booting
/// into an election at once (no staggered start, as the sources' model has
/// it), with the default clock drift bound (a deployment's, unlike the
/// sources' exact clocks).
pub fn config(algorithm: Algorithm, quorum: QuorumChoice) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_staggered_start(false)
        .with_quorum(quorum.quorum())
}

/// Runs every scenario × placement × algorithm × quorum choice of `options`
/// over seeds `1..=options.seeds`, in that order.
pub fn measure(options: &PartialOptions) -> Result<Vec<PartialRow>, SimError> {
    let mut rows = Vec::new();
    for &scenario in &options.scenarios {
        for placement in placements(scenario) {
            let run = PartialRun::new(scenario, placement);
            for &algorithm in &options.algorithms {
                for &quorum in &options.quorums {
                    let config = config(algorithm, quorum);
                    let reports = (1..=options.seeds)
                        .map(|seed| run.run(&config, seed))
                        .collect::<Result<Vec<_>, _>>()?;
                    rows.push(PartialRow {
                        run,
                        algorithm,
                        quorum,
                        reports,
                    });
                }
            }
        }
    }
    Ok(rows)
}
