//! The `scale` measurement: one whole election in the simulator, timed on the wall
//! clock, so anyone can reproduce a figure of `BENCHMARKS.md`.
//!
//! The election is the setting of Soundarabai et al.'s Table 1
//! ([`scenario::one_initiator`]): members `1..=n`, all idle with no leader, and
//! member 1 alone starts an election. The timed part is the whole call: building
//! the `n` nodes, the election, and the run until its last message has landed.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bully_core::{Algorithm, NodeId};
use bully_sim::SimError;
use bully_sim::scenario::{self, ElectionReport};

use crate::measure;

/// One timed election.
#[derive(Clone, Debug)]
pub struct ScaleRun {
    /// The algorithm every member ran.
    pub algorithm: Algorithm,
    /// Members `1..=n`.
    pub n: u64,
    /// What the election cost, in messages and message delays.
    pub report: ElectionReport,
    /// Wall time of the whole run (building the cluster included).
    pub elapsed: Duration,
}

impl ScaleRun {
    /// The election's messages (heartbeats left out).
    pub fn messages(&self) -> u64 {
        self.report.total()
    }

    /// Messages per second of wall time.
    pub fn messages_per_second(&self) -> f64 {
        self.messages() as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// Runs one election of `algorithm` among `n` members, member 1 initiating, with
/// `simulate`'s default configuration, and times it.
pub fn run(algorithm: Algorithm, n: u64) -> Result<ScaleRun, SimError> {
    let config = measure::config(algorithm);
    let started = Instant::now();
    let report = scenario::one_initiator(&config, n, NodeId(1))?;
    let elapsed = started.elapsed();
    Ok(ScaleRun {
        algorithm,
        n,
        report,
        elapsed,
    })
}

/// A few lines for people, then the machine-readable last line
/// `messages=<m> elapsed_ms=<t>`.
pub fn render(run: &ScaleRun) -> String {
    let name = measure::algorithm_name(run.algorithm);
    let leader = run
        .report
        .leader
        .map_or_else(|| "no common leader".to_owned(), |id| format!("{id}"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}, N = {}: member 1 alone starts an election among idle members 1..={} (the setting of Soundarabai et al.'s Table 1).",
        run.n, run.n
    );
    let _ = writeln!(
        out,
        "messages: {} ({})",
        run.messages(),
        run.report.messages
    );
    let _ = writeln!(
        out,
        "leader: {leader}, agreed after {:.1} message delays",
        run.report.delays
    );
    let _ = writeln!(
        out,
        "wall time: {:.3} ms for building the cluster, the election and its last messages; {:.0} messages per second",
        millis(run.elapsed),
        run.messages_per_second()
    );
    let _ = writeln!(
        out,
        "messages={} elapsed_ms={:.3}",
        run.messages(),
        millis(run.elapsed)
    );
    out
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
