//! The scenario tables: cold start, leader crash, partial partitions.

use std::time::Duration;

use crate::matching::with_system;
use crate::members::Visit;
use crate::peer::Peer;
use crate::report::{Table, max, median, median_or_never, ms, ratio, thousands};
use crate::scenario::{self, Election, Partition, PartitionRun};
use crate::system::System;

/// `T_M`, the message time: one message delay, the links' bound (bully-core's
/// default `max_message_delay`).
pub const T_M: Duration = Duration::from_millis(20);

/// Seeds per configuration and size: more where runs are cheap.
pub fn seeds_for(n: u64, base: u64) -> u64 {
    match n {
        0..=25 => base,
        26..=100 => base.div_ceil(2),
        _ => 1,
    }
}

struct ElectionSummary {
    agreed: Vec<Option<Duration>>,
    to_agree: Vec<u64>,
    to_agree_election: Vec<u64>,
    to_quiet_election: Vec<u64>,
    quiet: Vec<Option<Duration>>,
    first: Option<Election>,
}

struct RunElections<'a> {
    n: u64,
    seeds: u64,
    run: &'a dyn Fn(u64) -> Option<Election>,
}

struct Cold {
    n: u64,
    seeds: u64,
    crash: bool,
}

impl Visit for Cold {
    type Out = ElectionSummary;
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> ElectionSummary {
        let n = self.n;
        let run = |seed: u64| {
            if self.crash {
                scenario::leader_crash(build, n, seed)
            } else {
                Some(scenario::cold_start(build, n, seed))
            }
        };
        summarize::<P>(RunElections {
            n,
            seeds: self.seeds,
            run: &run,
        })
    }
}

fn summarize<P: Peer>(r: RunElections<'_>) -> ElectionSummary {
    let _ = r.n;
    let mut s = ElectionSummary {
        agreed: vec![],
        to_agree: vec![],
        to_agree_election: vec![],
        to_quiet_election: vec![],
        quiet: vec![],
        first: None,
    };
    for seed in 1..=r.seeds {
        let Some(e) = (r.run)(seed) else {
            s.agreed.push(None);
            continue;
        };
        s.agreed.push(e.agreed_after);
        s.to_agree.push(e.until_agreement.total());
        s.to_agree_election
            .push(e.until_agreement.total_where(|k| !P::is_steady(k)));
        s.to_quiet_election
            .push(e.until_quiet.total_where(|k| !P::is_steady(k)));
        s.quiet.push(e.quiet_after);
        if s.first.is_none() {
            s.first = Some(e);
        }
    }
    s
}

fn time_cell(values: &[Option<Duration>]) -> (String, Option<f64>) {
    let got: Vec<Duration> = values.iter().flatten().copied().collect();
    let missing = values.len() - got.len();
    match (median(&got), max(&got)) {
        (Some(m), Some(w)) => {
            let mut s = format!(
                "{} ms ({:.1} T) / {} ms",
                ms(m),
                m.as_secs_f64() / T_M.as_secs_f64(),
                ms(w)
            );
            if missing > 0 {
                s.push_str(&format!(", {missing} never"));
            }
            (s, Some(m.as_secs_f64()))
        }
        _ => ("never".to_string(), None),
    }
}

/// The cold start (`crash = false`) or leader crash (`crash = true`) table over
/// the given sizes and configurations.
pub fn elections(crash: bool, sizes: &[u64], systems: &[System], base_seeds: u64) -> String {
    elections_with_medians(crash, sizes, systems, base_seeds).0
}

/// Per size and configuration, the median time to agreement (a run that never
/// agreed counting as later than any; `None`: the median run never agreed).
pub type Medians = Vec<(u64, System, Option<Duration>)>;

/// [`elections`], with each row's median time to agreement.
pub fn elections_with_medians(
    crash: bool,
    sizes: &[u64],
    systems: &[System],
    base_seeds: u64,
) -> (String, Medians) {
    let mut medians = Vec::new();
    let mut t = Table::new(&[
        "N",
        "system",
        "seeds",
        "agreed after: median (message delays) / worst",
        "vs bully",
        "election msgs to agreement",
        "all msgs to agreement",
        "election msgs to quiet",
        "vs bully",
        "last election msg at",
        "by kind to quiet (seed 1)",
    ]);
    for &n in sizes {
        let mut bully_time = None;
        let mut bully_msgs = None;
        for &system in systems {
            let seeds = seeds_for(n, base_seeds);
            let s = with_system(system, Cold { n, seeds, crash });
            let (time, secs) = time_cell(&s.agreed);
            medians.push((n, system, median_or_never(&s.agreed)));
            let quiet_msgs = median(&s.to_quiet_election).unwrap_or(0) as f64;
            if system == System::Bully {
                bully_time = secs;
                bully_msgs = Some(quiet_msgs);
            }
            let (quiet, _) = time_cell(&s.quiet);
            t.row(vec![
                thousands(n),
                system.label().to_string(),
                seeds.to_string(),
                time,
                secs.map_or("–".into(), |x| ratio(x, bully_time)),
                thousands(median(&s.to_agree_election).unwrap_or(0)),
                thousands(median(&s.to_agree).unwrap_or(0)),
                thousands(quiet_msgs as u64),
                ratio(quiet_msgs, bully_msgs),
                quiet,
                s.first
                    .map(|e| e.until_quiet.describe())
                    .unwrap_or_default(),
            ]);
        }
    }
    (t.markdown(), medians)
}

/// Every seed's run of one partition scenario, `1..=seeds`.
pub(crate) struct Partitions {
    pub(crate) partition: Partition,
    pub(crate) seeds: u64,
}

impl Visit for Partitions {
    type Out = Vec<Option<PartitionRun>>;
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
        (1..=self.seeds)
            .map(|seed| scenario::partition_run(build, self.partition, seed))
            .collect()
    }
}

/// Every seed's run of one partition scenario with its hub at `hub`, `1..=seeds`.
pub(crate) struct PartitionsAt {
    pub(crate) partition: Partition,
    pub(crate) hub: scenario::Hub,
    pub(crate) seeds: u64,
}

impl Visit for PartitionsAt {
    type Out = Vec<Option<PartitionRun>>;
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
        (1..=self.seeds)
            .map(|seed| scenario::partition_run_with_hub(build, self.partition, self.hub, seed))
            .collect()
    }
}

/// The partial partitions: per scenario and configuration, over `seeds`.
pub fn partitions(scenarios: &[Partition], systems: &[System], seeds: u64) -> String {
    let mut t = Table::new(&[
        "scenario",
        "system",
        "stable leader after: median / worst",
        "availability: median / worst",
        "two leaders",
        "term growth: median / worst",
        "msgs in 20 s (election)",
        "after heal: median / worst",
        "takeovers at heal",
        "election msgs after heal",
    ]);
    for &partition in scenarios {
        for &system in systems {
            let runs = with_system(system, Partitions { partition, seeds });
            let ok: Vec<&PartitionRun> = runs.iter().flatten().collect();
            let unsettled = runs.len() - ok.len();
            let stable: Vec<Option<Duration>> = ok.iter().map(|r| r.stable_after).collect();
            let (stable_cell, _) = time_cell(&stable);
            let avail: Vec<f64> = ok.iter().map(|r| r.availability).collect();
            let doubled: Vec<f64> = ok.iter().map(|r| r.two_leaders).collect();
            let terms: Vec<u64> = ok.iter().map(|r| r.term_growth).collect();
            let msgs: Vec<u64> = ok.iter().map(|r| r.window.total()).collect();
            let election: Vec<u64> = ok
                .iter()
                .map(|r| {
                    r.window
                        .by_kind
                        .iter()
                        .filter(|(k, _)| !is_steady_any(k))
                        .map(|(_, n)| n)
                        .sum()
                })
                .collect();
            let healed: Vec<Option<Duration>> = ok.iter().map(|r| r.healed_after).collect();
            let (heal_cell, _) = time_cell(&healed);
            let takeovers = ok.iter().filter(|r| r.takeover).count();
            let heal_msgs: Vec<u64> = ok.iter().map(|r| r.heal_messages).collect();
            let mut label = system.label().to_string();
            if unsettled > 0 {
                label.push_str(&format!(
                    " ({unsettled} seeds without a leader before the cut)"
                ));
            }
            t.row(vec![
                partition.label().to_string(),
                label,
                stable_cell,
                format!(
                    "{:.1} % / {:.1} %",
                    100.0 * median(&avail).unwrap_or(0.0),
                    100.0 * avail.iter().copied().fold(1.0, f64::min)
                ),
                format!("{:.1} %", 100.0 * median(&doubled).unwrap_or(0.0)),
                format!(
                    "{} / {}",
                    median(&terms).unwrap_or(0),
                    max(&terms).unwrap_or(0)
                ),
                format!(
                    "{} ({})",
                    thousands(median(&msgs).unwrap_or(0)),
                    thousands(median(&election).unwrap_or(0))
                ),
                heal_cell,
                format!("{takeovers} of {}", ok.len()),
                thousands(median(&heal_msgs).unwrap_or(0)),
            ]);
        }
    }
    t.markdown()
}

/// Steady-state kinds of all three libraries (the window's counts carry names only).
fn is_steady_any(kind: &str) -> bool {
    matches!(
        kind,
        "Heartbeat"
            | "Ack"
            | "MsgHeartbeat"
            | "MsgHeartbeatResponse"
            | "HeartbeatRequest"
            | "HeartbeatReply"
    )
}
