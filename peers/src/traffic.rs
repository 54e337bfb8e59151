//! Equal traffic's tables: each configuration's steady-state messages
//! per second, the heartbeat interval chosen for bully-core at each peer's traffic
//! (the rule is [`crate::matching`]'s), and the crash and partition tables at that
//! traffic.

use std::time::Duration;

use bully_core::Quorum;

use crate::matching::{FIT_SEEDS, Rate, SEED, SETTLE, SPAN, matched, steady_rate, with_system};
use crate::report::{Table, median, median_or_never, ms, thousands};
use crate::scenario::{Hub, Partition, PartitionRun};
use crate::system::System;
use crate::tables::{self, Partitions, PartitionsAt};

/// The configurations the equal-traffic crash table compares.
pub const COMPARED: [System; 6] = [
    System::Ble,
    System::Raft500,
    System::Bully,
    System::BullyAtBle,
    System::BullyMajorityAtBle,
    System::BullyAtRaft,
];

/// The partition tables' configurations (raft is in the partitions table).
pub const PARTITIONED: [System; 4] = [
    System::Ble,
    System::Bully,
    System::BullyAtBle,
    System::BullyMajorityAtBle,
];

fn rate_cell(r: &Rate) -> String {
    format!("{:.0}", r.per_second)
}

/// (a) Steady-state messages per second per N, and the chosen intervals.
pub fn rates_table(sizes: &[u64]) -> String {
    let mut t = Table::new(&[
        "N",
        "ble",
        "raft pv+cq 500ms",
        "bully",
        "bully majority",
        "bully @ble: h, leader timeout, msgs/s",
        "bully majority @ble: h, leader timeout, msgs/s",
        "bully @raft (vs raft pv+cq 500ms): h, leader timeout, msgs/s",
        "bully kinds (default, 10 s)",
        "bully majority kinds (default, 10 s)",
    ]);
    for &n in sizes {
        let ble = steady_rate(System::Ble, n);
        let raft = steady_rate(System::Raft500, n);
        let bully = steady_rate(System::Bully, n);
        let majority = steady_rate(System::BullyMajority, n);
        let cell = |peer: System, quorum: Quorum, limit: f64| {
            let m = matched(peer, quorum, n);
            assert!(
                m.rate.per_second <= limit,
                "bully's chosen traffic exceeds {}'s at N = {n}",
                peer.label()
            );
            format!(
                "{:.3} ms (estimate {:.3}), {:.3} ms, {:.0}",
                m.interval.as_secs_f64() * 1e3,
                m.estimate.as_secs_f64() * 1e3,
                m.config.leader_timeout().as_secs_f64() * 1e3,
                m.rate.per_second
            )
        };
        t.row(vec![
            thousands(n),
            rate_cell(&ble),
            rate_cell(&raft),
            rate_cell(&bully),
            rate_cell(&majority),
            cell(System::Ble, Quorum::None, ble.per_second),
            cell(System::Ble, Quorum::Majority, ble.per_second),
            cell(System::Raft500, Quorum::None, raft.per_second),
            bully.counts.describe(),
            majority.counts.describe(),
        ]);
    }
    t.markdown()
}

fn verdict(bully: Option<Duration>, ble: Option<Duration>) -> String {
    match (bully, ble) {
        (Some(b), Some(o)) if b < o => format!("yes ({} ms sooner)", ms(o - b)),
        (Some(b), Some(o)) if b == o => format!("no (tie at {} ms)", ms(b)),
        (Some(b), Some(o)) => format!("no ({} ms later)", ms(b - o)),
        (Some(_), None) => "yes (ble never)".into(),
        (None, _) => "no (bully never)".into(),
    }
}

/// (b) The leader crash at equal traffic: the crash table for [`COMPARED`], then
/// per N whether bully @ble agrees sooner than ble at the median.
pub fn crash_table(sizes: &[u64], seeds: u64) -> String {
    let (table, medians) = tables::elections_with_medians(true, sizes, &COMPARED, seeds);
    let mut t = Table::new(&[
        "N",
        "ble median",
        "bully @ble median",
        "bully majority @ble median",
        "bully @ble sooner than ble",
        "bully majority @ble sooner than ble",
    ]);
    for &n in sizes {
        let get = |s: System| {
            medians
                .iter()
                .find(|(m, sys, _)| *m == n && *sys == s)
                .and_then(|(_, _, d)| *d)
        };
        let cell = |d: Option<Duration>| d.map_or("never".into(), |d| format!("{} ms", ms(d)));
        let ble = get(System::Ble);
        t.row(vec![
            thousands(n),
            cell(ble),
            cell(get(System::BullyAtBle)),
            cell(get(System::BullyMajorityAtBle)),
            verdict(get(System::BullyAtBle), ble),
            verdict(get(System::BullyMajorityAtBle), ble),
        ]);
    }
    format!("{table}\n{}", t.markdown())
}

struct PartitionSummary {
    stable: Option<Duration>,
    worst: Option<Duration>,
    never: usize,
    availability: f64,
    worst_availability: f64,
    terms: u64,
    worst_terms: u64,
    unsettled: usize,
}

fn summarize(runs: &[Option<PartitionRun>]) -> PartitionSummary {
    let ok: Vec<&PartitionRun> = runs.iter().flatten().collect();
    let stable: Vec<Option<Duration>> = ok.iter().map(|r| r.stable_after).collect();
    let avail: Vec<f64> = ok.iter().map(|r| r.availability).collect();
    let terms: Vec<u64> = ok.iter().map(|r| r.term_growth).collect();
    PartitionSummary {
        stable: median_or_never(&stable),
        worst: if stable.iter().all(Option::is_some) {
            stable.iter().flatten().max().copied()
        } else {
            None
        },
        never: stable.iter().filter(|s| s.is_none()).count(),
        availability: median(&avail).unwrap_or(0.0),
        worst_availability: avail.iter().copied().fold(1.0, f64::min),
        terms: median(&terms).unwrap_or(0),
        worst_terms: terms.iter().copied().max().unwrap_or(0),
        unsettled: runs.len() - ok.len(),
    }
}

/// (c) The partial partitions at equal traffic: per scenario and
/// configuration, the stable effective leader, availability and term growth, and
/// for bully @ble whether it beats ble (stable leader sooner at the median,
/// availability at least ble's at the median, term growth at most 1).
pub fn partitions_table(scenarios: &[Partition], seeds: u64) -> String {
    let mut t = Table::new(&[
        "scenario",
        "system",
        "stable leader after: median / worst",
        "availability: median / worst",
        "term growth: median / worst",
        "vs ble: stable sooner at the median",
        "availability ≥ ble's",
        "term growth ≤ 1",
    ]);
    for &partition in scenarios {
        let mut ble: Option<PartitionSummary> = None;
        for system in PARTITIONED {
            let s = summarize(&with_system(system, Partitions { partition, seeds }));
            let mut label = system.label().to_string();
            if s.unsettled > 0 {
                label.push_str(&format!(" ({} seeds unsettled at the cut)", s.unsettled));
            }
            let stable = match (s.stable, s.worst) {
                (Some(m), Some(w)) => format!("{} ms / {} ms", ms(m), ms(w)),
                (Some(m), None) => format!("{} ms / never ({} never)", ms(m), s.never),
                (None, _) => format!("never ({} of {} never)", s.never, seeds),
            };
            let (vs, avail, term) = match &ble {
                Some(b) if system != System::Bully => (
                    verdict(s.stable, b.stable),
                    yes_no(s.availability >= b.availability),
                    yes_no(s.worst_terms <= 1),
                ),
                _ => ("–".into(), "–".into(), yes_no(s.worst_terms <= 1)),
            };
            t.row(vec![
                partition.label().to_string(),
                label,
                stable,
                format!(
                    "{:.1} % / {:.1} %",
                    100.0 * s.availability,
                    100.0 * s.worst_availability
                ),
                format!("{} / {}", s.terms, s.worst_terms),
                vs,
                avail,
                term,
            ]);
            if system == System::Ble {
                ble = Some(s);
            }
        }
    }
    t.markdown()
}

/// (d) The scenarios with a hub, at every placement of it: ble against bully
/// majority @ble (the stable effective leader, availability and term growth, and
/// whether bully majority @ble is sooner at the median).
pub fn placements_table(seeds: u64) -> String {
    let mut t = Table::new(&[
        "scenario",
        "hub",
        "ble: stable leader median / worst, availability, term growth worst",
        "bully majority @ble: the same",
        "bully majority @ble sooner at the median",
    ]);
    let scenarios = Partition::ALL.into_iter().filter(|p| p.has_hub());
    for partition in scenarios {
        for hub in Hub::ALL {
            let run = |system| {
                summarize(&with_system(
                    system,
                    PartitionsAt {
                        partition,
                        hub,
                        seeds,
                    },
                ))
            };
            let ble = run(System::Ble);
            let bully = run(System::BullyMajorityAtBle);
            let cell = |s: &PartitionSummary| {
                let stable = match (s.stable, s.worst) {
                    (Some(m), Some(w)) => format!("{} ms / {} ms", ms(m), ms(w)),
                    (Some(m), None) => format!("{} ms / never ({} never)", ms(m), s.never),
                    (None, _) => format!("never ({} never)", s.never),
                };
                format!(
                    "{stable}, {:.1} %, {}",
                    100.0 * s.availability,
                    s.worst_terms
                )
            };
            t.row(vec![
                partition.label().to_string(),
                hub.label().to_string(),
                cell(&ble),
                cell(&bully),
                verdict(bully.stable, ble.stable),
            ]);
        }
    }
    t.markdown()
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// The whole equal-traffic section: rates, crash, partitions.
pub fn table(sizes: &[u64], seeds: u64, scenarios: &[Partition], partition_seeds: u64) -> String {
    format!(
        "Steady-state messages per second (cold start, {} s settled, counted over {} s, seed {SEED}) and bully-core's heartbeat interval at each peer's traffic (the shortest, in whole µs, that is steady and within the peer's rate under seeds 1 to {FIT_SEEDS}):\n\n{}\n\
         Leader crash at equal traffic:\n\n{}\n\
         Partial partitions at equal traffic (N = 5; chained (3): N = 3), healed after 20 s:\n\n{}\n\
         The scenarios with a hub at every placement of it (N = 5, {partition_seeds} seeds each; the table above places it lowest, as the partial-partition table does):\n\n{}",
        SETTLE.as_secs(),
        SPAN.as_secs(),
        rates_table(sizes),
        crash_table(sizes, seeds),
        partitions_table(scenarios, partition_seeds),
        placements_table(partition_seeds),
    )
}
