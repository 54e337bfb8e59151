//! Equal traffic (issue 25): each configuration's steady-state messages per second,
//! bully-core's heartbeat interval chosen per N so that its steady traffic does not
//! exceed a peer's, and the crash and partition tables at that traffic.
//!
//! The rule for the interval `h` (whole microseconds): the peer's steady rate `R`
//! is measured ([`steady_rate`]); bully's messages per heartbeat interval `m` are
//! measured at the default 100 ms; the estimate `h = m / R`, rounded up to a
//! microsecond, is measured and raised until bully's measured rate is at most `R`,
//! then a binary search below it finds the shortest whole-microsecond interval whose
//! measured rate is still at most `R` (every candidate measured, none assumed). The
//! leader timeout keeps the default's ratio, `5 h`, but never below
//! `h + 2 T_M` (a heartbeat one delay bound late is no suspicion), and is raised in
//! 1 ms steps until the configuration validates (with a majority, the leader's
//! lease must outlast a round trip plus the longer of a heartbeat interval and a
//! round trip: about 121 ms at BLE's traffic). Everything else is
//! `Config::default()`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bully_core::{Config, Quorum};

use crate::bully::BullyPeer;
use crate::peer::Peer;
use crate::report::{Table, median, median_or_never, ms, thousands};
use crate::scenario::{self, Hub, Partition, PartitionRun};
use crate::sim::Counts;
use crate::system::{System, Visit, with_system};
use crate::tables::{self, Partitions, PartitionsAt};

/// How long a cluster runs from its cold start before the count begins.
pub const SETTLE: Duration = Duration::from_secs(10);
/// How long the count lasts, with no fault.
pub const SPAN: Duration = Duration::from_secs(10);
/// The seed of the steady-state measurement.
pub const SEED: u64 = 1;

/// A steady-state message rate.
#[derive(Clone, Debug)]
pub struct Rate {
    /// Messages sent per second (lost ones would count; none are lost).
    pub per_second: f64,
    /// Messages sent during [`SPAN`], by kind.
    pub counts: Counts,
    /// Whether the members agreed on one leader throughout [`SPAN`] and sent no
    /// election message in it.
    pub steady: bool,
}

struct Measure {
    n: u64,
    seed: u64,
}

impl Visit for Measure {
    type Out = Rate;
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Rate {
        measure(build, self.n, self.seed)
    }
}

/// Cold start, [`SETTLE`] without faults, then every message sent over [`SPAN`].
pub fn measure<P: Peer>(build: &dyn Fn(u64, u64, u64) -> P, n: u64, seed: u64) -> Rate {
    let mut sim = scenario::cluster(build, n, seed);
    sim.start_all();
    sim.run_until(SETTLE);
    sim.reset_counters();
    sim.run_until(SETTLE + SPAN);
    let counts = sim.counts().clone();
    let steady = sim.agreed_since().is_some_and(|t| t <= SETTLE)
        && counts.total_where(|k| !P::is_steady(k)) == 0;
    Rate {
        per_second: counts.total() as f64 / SPAN.as_secs_f64(),
        counts,
        steady,
    }
}

/// `system`'s steady-state rate at `n` members.
pub fn steady_rate(system: System, n: u64) -> Rate {
    with_system(system, Measure { n, seed: SEED })
}

/// bully-core's steady-state rate at `n` members with `config` (seed [`SEED`]).
pub fn bully_rate(config: &Config, n: u64) -> Rate {
    bully_rate_seeded(config, n, SEED)
}

/// bully-core's steady-state rate at `n` members with `config`, run with `seed`.
pub fn bully_rate_seeded(config: &Config, n: u64, seed: u64) -> Rate {
    let base = Instant::now();
    let build = move |id, n, _seed| BullyPeer::new(id, n, config.clone(), base);
    measure(&build, n, seed)
}

/// Seeds a candidate interval must fit under: seed [`SEED`] gives the rate shown,
/// and every seed must be steady and at most the peer's rate (one seed is not
/// enough: with a majority, an interval near the lease's limit churns under some
/// delay draws only).
pub const FIT_SEEDS: u64 = 5;

/// Whether `config` fits under `limit` msgs/s at `n` members: under every seed of
/// `1..=FIT_SEEDS` the cluster is steady and sends at most `limit` per second.
/// Returns seed [`SEED`]'s rate.
pub fn fits(config: &Config, n: u64, limit: f64) -> (bool, Rate) {
    let ok = |r: &Rate| r.steady && r.per_second <= limit;
    let first = bully_rate(config, n);
    let fit = ok(&first)
        && (1..=FIT_SEEDS)
            .filter(|&s| s != SEED)
            .all(|s| ok(&bully_rate_seeded(config, n, s)));
    (fit, first)
}

/// `base` with heartbeat interval `h` and the leader timeout of the rule (module
/// documentation): `5 h`, at least `h + answer_timeout + T_M`, raised in 1 ms
/// steps until the configuration validates.
pub fn at_interval(base: Config, h: Duration) -> Config {
    let floor = h + base.answer_timeout() + base.max_message_delay();
    let mut timeout = (5 * h).max(floor);
    loop {
        let config = base
            .clone()
            .with_heartbeat_interval(h)
            .with_leader_timeout(timeout);
        if config.validate().is_ok() {
            return config;
        }
        timeout += Duration::from_millis(1);
        assert!(timeout < Duration::from_secs(60), "no valid leader timeout");
    }
}

/// bully-core's base configuration for a quorum setting.
pub fn base_config(quorum: Quorum) -> Config {
    Config::default().with_quorum(quorum)
}

/// bully-core's interval chosen to match a peer's traffic at one N.
#[derive(Clone, Debug)]
pub struct Matched {
    /// The peer's steady rate.
    pub peer: f64,
    /// The chosen configuration.
    pub config: Config,
    /// Its heartbeat interval.
    pub interval: Duration,
    /// Its measured steady rate (at most `peer`).
    pub rate: Rate,
    /// The estimate `m / R` the search started from.
    pub estimate: Duration,
    /// Candidate intervals measured to find it.
    pub tried: u32,
}

type Key = (System, bool, u64);
static MATCHED: Mutex<BTreeMap<Key, Matched>> = Mutex::new(BTreeMap::new());

/// The configuration of the rule for bully-core with `quorum` at the steady traffic
/// of `peer` at `n` members (measured once per process, then remembered).
pub fn matched(peer: System, quorum: Quorum, n: u64) -> Matched {
    let key = (peer, quorum != Quorum::None, n);
    let mut cache = MATCHED.lock().expect("no measurement panicked");
    if let Some(m) = cache.get(&key) {
        return m.clone();
    }
    let m = choose(steady_rate(peer, n).per_second, quorum, n);
    cache.insert(key, m.clone());
    m
}

/// The shortest whole-microsecond heartbeat interval whose measured rate is at
/// most `limit` and at which the cluster is steady (see the module documentation).
pub fn choose(limit: f64, quorum: Quorum, n: u64) -> Matched {
    let base = base_config(quorum);
    let mut tried = 0;
    let mut fits_at = |h_us: u64| {
        tried += 1;
        fits(
            &at_interval(base.clone(), Duration::from_micros(h_us)),
            n,
            limit,
        )
    };
    let default_h = base.heartbeat_interval();
    let at_default = bully_rate(&base, n);
    assert!(at_default.steady, "bully is steady at its defaults");
    let per_interval = at_default.per_second * default_h.as_secs_f64();
    let estimate = ((per_interval / limit) * 1e6).ceil().max(1.0) as u64;
    // `hi` fits; `lo` is shorter and does not (0: nothing shorter to try).
    let (mut hi, mut hi_rate, mut lo);
    let (fit, r) = fits_at(estimate);
    if fit {
        (hi, hi_rate) = (estimate, r);
        lo = hi - (hi / 20).max(1);
        while lo > 0 {
            let (fit, r) = fits_at(lo);
            if !fit {
                break;
            }
            (hi, hi_rate) = (lo, r);
            lo -= (lo / 20).max(1);
        }
    } else {
        lo = estimate;
        hi = estimate + (estimate / 10).max(1);
        loop {
            let (fit, r) = fits_at(hi);
            if fit {
                hi_rate = r;
                break;
            }
            lo = hi;
            hi += (hi / 10).max(1);
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let (fit, r) = fits_at(mid);
        if fit {
            (hi, hi_rate) = (mid, r);
        } else {
            lo = mid;
        }
    }
    assert!(
        hi_rate.steady && hi_rate.per_second <= limit,
        "the chosen interval's traffic"
    );
    let interval = Duration::from_micros(hi);
    Matched {
        peer: limit,
        config: at_interval(base, interval),
        interval,
        estimate: Duration::from_micros(estimate),
        rate: hi_rate,
        tried,
    }
}

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

/// (c) Issue 12's partial partitions at equal traffic: per scenario and
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
         The scenarios with a hub at every placement of it (N = 5, {partition_seeds} seeds each; the table above places it as issue 12 did):\n\n{}",
        SETTLE.as_secs(),
        SPAN.as_secs(),
        rates_table(sizes),
        crash_table(sizes, seeds),
        partitions_table(scenarios, partition_seeds),
        placements_table(partition_seeds),
    )
}
