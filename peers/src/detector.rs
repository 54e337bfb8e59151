//! The failure detector under 30 % loss and under jitter. bully-core
//! clusters run for simulated hours with the leader alive; every time a
//! follower's leader timeout fires on the live leader is a false suspicion. Each
//! follower's heartbeat arrivals are then replayed through other detectors (fixed
//! timeouts of several lengths, φ accrual with a normal and an exponential fit):
//! false suspicions per hour against detection time, and crash runs under the
//! same conditions measure bully-core's failover and the election that follows
//! the first suspicion.

use std::time::{Duration, Instant};

use bully_core::Config;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::peer::Time;
use crate::report::{Table, median};
use crate::scenario::PATIENCE;
use crate::sim::{Delays, Jitter, Sim};
use crate::suspicion::{Detector, replay};
use crate::watch::{Arrival, Watched};

/// The loss probability of the detector's comparison.
pub const LOSS: f64 = 0.3;
/// Time from agreement to the start of the observation (or to the crash).
pub const SETTLE: Duration = Duration::from_secs(5);
/// How often agreement is sampled during the observation.
pub const SAMPLE: Duration = Duration::from_millis(50);
/// Crash instants asked of each replayed trace, per run.
pub const CRASHES_PER_RUN: usize = 500;

/// The link conditions compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// The loop's default links: 15 to 20 ms, nothing lost.
    Clean,
    /// 30 % of messages lost.
    Loss,
    /// [`Jitter::TAIL`]: 10 % of messages late by 100 ms on average.
    Jitter,
    /// Both.
    LossJitter,
}

impl Condition {
    /// Every condition, in table order.
    pub const ALL: [Condition; 4] = [
        Condition::Clean,
        Condition::Loss,
        Condition::Jitter,
        Condition::LossJitter,
    ];

    /// The label used in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Condition::Clean => "no loss",
            Condition::Loss => "30 % loss",
            Condition::Jitter => "jitter",
            Condition::LossJitter => "30 % loss + jitter",
        }
    }

    /// The loss probability.
    pub fn loss(self) -> f64 {
        match self {
            Condition::Loss | Condition::LossJitter => LOSS,
            _ => 0.0,
        }
    }

    /// The jitter model.
    pub fn jitter(self) -> Option<Jitter> {
        match self {
            Condition::Jitter | Condition::LossJitter => Some(Jitter::TAIL),
            _ => None,
        }
    }
}

/// bully-core's default configuration with this leader timeout (the
/// loss-adaptive detector on, as by default).
pub fn config(timeout: Duration) -> Config {
    Config::default().with_leader_timeout(timeout)
}

/// One way bully-core is run: a leader timeout, with its loss-adaptive
/// detector on (the default) or off (a fixed timeout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The highest follower's leader timeout.
    pub timeout: Duration,
    /// Whether the timeout grows with the heartbeats a follower missed.
    pub adaptive: bool,
}

impl Setting {
    /// The configuration it runs.
    pub fn config(self) -> Config {
        config(self.timeout).with_loss_adaptive_detection(self.adaptive)
    }

    /// How the tables name it.
    pub fn label(self) -> String {
        format!(
            "{} ms, {}",
            self.timeout.as_millis(),
            if self.adaptive {
                "loss-adaptive"
            } else {
                "fixed"
            }
        )
    }
}

/// A watched bully-core cluster of `n` members under `condition`, none started.
pub fn cluster(n: u64, condition: Condition, config: &Config, seed: u64) -> Sim<Watched> {
    let base = Instant::now();
    let peers = (1..=n)
        .map(|id| Watched::new(id, n, config.clone(), base))
        .collect();
    let mut sim = Sim::new(peers, Delays::default(), seed);
    sim.set_loss(condition.loss());
    sim.set_jitter(condition.jitter());
    sim
}

/// A long run with every member alive.
#[derive(Clone, Debug)]
pub struct SteadyRun {
    /// Start of the observation.
    pub from: Time,
    /// End of the observation.
    pub to: Time,
    /// Whether the cold start agreed within [`PATIENCE`].
    pub agreed: bool,
    /// False suspicions per member (index `id - 1`) during the observation.
    pub suspicions: Vec<u64>,
    /// Elections started or joined, all members, during the observation.
    pub elections: u64,
    /// Leaderships accepted (`LeaderElected`), all members, during the observation.
    pub leaderships: u64,
    /// Share of the observation's [`SAMPLE`]-spaced samples at which the members
    /// did not agree on a live leader.
    pub unagreed: f64,
    /// Messages that reached a link during the observation.
    pub offered: u64,
    /// Of which lost.
    pub lost: u64,
    /// Each follower's (`1..n`) heartbeat arrivals from member `n` during the
    /// observation.
    pub traces: Vec<Vec<Arrival>>,
}

/// Boots `n` members, waits for agreement and [`SETTLE`], then observes them for
/// `duration` with the leader alive.
pub fn steady_run(
    n: u64,
    condition: Condition,
    config: &Config,
    duration: Duration,
    seed: u64,
) -> SteadyRun {
    let mut sim = cluster(n, condition, config, seed);
    sim.start_all();
    let agreed = sim.run_until_agreed(PATIENCE).is_some();
    let from = sim.now() + SETTLE;
    sim.run_until(from);
    let elections_before: u64 = (1..=n).map(|id| sim.peer(id).elections).sum();
    let leaderships_before: u64 = (1..=n).map(|id| sim.peer(id).leaders_accepted).sum();
    let (offered, lost) = (sim.offered(), sim.lost());
    let to = from + duration;
    let (mut samples, mut unagreed) = (0u64, 0u64);
    let mut t = from;
    while t < to {
        t = (t + SAMPLE).min(to);
        sim.run_until(t);
        samples += 1;
        unagreed += u64::from(!sim.agreed());
    }
    let within = |t: Time| t >= from && t <= to;
    let suspicions = (1..=n)
        .map(|id| {
            sim.peer(id)
                .suspicions
                .iter()
                .filter(|&&(t, leader)| within(t) && sim.is_alive(leader))
                .count() as u64
        })
        .collect();
    let traces = (1..n)
        .map(|id| {
            sim.peer(id)
                .heartbeats
                .iter()
                .copied()
                .filter(|a| within(a.at))
                .collect()
        })
        .collect();
    SteadyRun {
        from,
        to,
        agreed,
        suspicions,
        elections: (1..=n).map(|id| sim.peer(id).elections).sum::<u64>() - elections_before,
        leaderships: (1..=n).map(|id| sim.peer(id).leaders_accepted).sum::<u64>()
            - leaderships_before,
        unagreed: unagreed as f64 / samples.max(1) as f64,
        offered: sim.offered() - offered,
        lost: sim.lost() - lost,
        traces,
    }
}

/// A leader crash under the run's conditions.
#[derive(Clone, Copy, Debug)]
pub struct CrashRun {
    /// From the crash to agreement on a live leader.
    pub failover: Option<Duration>,
    /// From the crash to the first survivor's suspicion of the crashed leader.
    pub detection: Option<Duration>,
    /// From that suspicion to agreement.
    pub election: Option<Duration>,
}

/// Boots `n` members, waits for agreement and [`SETTLE`] plus a seeded part of
/// 100 ms (then for agreement again, if a false suspicion is under way), and
/// crashes the leader. `None` if the cluster never agreed.
pub fn crash_run(n: u64, condition: Condition, config: &Config, seed: u64) -> Option<CrashRun> {
    let mut sim = cluster(n, condition, config, seed);
    sim.start_all();
    sim.run_until_agreed(PATIENCE)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = sim.now() + SETTLE + Duration::from_micros(rng.random_range(0..100_000));
    sim.run_until(at);
    if !sim.agreed() {
        at = sim.run_until_agreed(at + PATIENCE)?;
    }
    let leader = sim.agreed_leader()?;
    sim.crash(leader);
    let agreed = sim.run_until_agreed(at + PATIENCE);
    let first = (1..=n)
        .filter(|&id| id != leader)
        .flat_map(|id| {
            sim.peer(id)
                .suspicions
                .iter()
                .filter(|&&(t, l)| l == leader && t >= at)
                .map(|&(t, _)| t)
                .collect::<Vec<_>>()
        })
        .min();
    Some(CrashRun {
        failover: agreed.map(|t| t - at),
        detection: first.map(|t| t - at),
        election: agreed.zip(first).map(|(a, f)| a.saturating_sub(f)),
    })
}

/// The detectors replayed on the traces.
pub fn detectors() -> Vec<Detector> {
    let ms = Duration::from_millis;
    let mut d: Vec<Detector> = [300, 500, 700, 900, 1100, 1300, 1500]
        .iter()
        .map(|&t| Detector::Fixed(ms(t)))
        .collect();
    for threshold in [3.0, 8.0, 12.0, 16.0] {
        d.push(Detector::PhiNormal {
            threshold,
            min_std: ms(10),
        });
    }
    d.push(Detector::PhiNormal {
        threshold: 8.0,
        min_std: ms(100),
    });
    for threshold in [1.0, 2.0, 3.0, 4.0, 5.0, 8.0] {
        d.push(Detector::PhiExp { threshold });
    }
    d
}

/// What the command measures.
#[derive(Clone, Debug)]
pub struct Options {
    /// Cluster sizes.
    pub nodes: Vec<u64>,
    /// Simulated hours observed per size, condition and leader timeout, over
    /// `seeds` runs.
    pub hours: f64,
    /// Runs the hours are split over.
    pub seeds: u64,
    /// Crash runs per size, condition and leader timeout.
    pub crash_seeds: u64,
    /// bully-core settings run; the first one's traces are replayed.
    pub settings: Vec<Setting>,
}

impl Options {
    /// The full measurement.
    pub fn full() -> Self {
        Options {
            nodes: vec![5, 25],
            hours: 40.0,
            seeds: 20,
            crash_seeds: 200,
            settings: vec![
                Setting {
                    timeout: Duration::from_millis(500),
                    adaptive: true,
                },
                Setting {
                    timeout: Duration::from_millis(500),
                    adaptive: false,
                },
                Setting {
                    timeout: Duration::from_millis(1100),
                    adaptive: false,
                },
            ],
        }
    }

    /// One simulated hour per condition, N = 5, the default timeout: a look.
    pub fn quick() -> Self {
        Options {
            nodes: vec![5],
            hours: 1.0,
            seeds: 2,
            crash_seeds: 20,
            settings: vec![Setting {
                timeout: Duration::from_millis(500),
                adaptive: true,
            }],
        }
    }
}

/// A detector's replays, summed over the runs of one size and condition.
#[derive(Clone, Debug, Default)]
struct Tally {
    suspicions: u64,
    follower_hours: f64,
    cluster_hours: f64,
    per_follower: Vec<Duration>,
}

/// bully-core as it runs, summed over the runs of one size, condition, timeout.
#[derive(Clone, Debug, Default)]
struct Live {
    hours: f64,
    suspicions: Vec<u64>,
    elections: u64,
    leaderships: u64,
    unagreed: f64,
    offered: u64,
    lost: u64,
    not_agreed: u64,
    crashes: Vec<CrashRun>,
}

fn hours(d: Duration) -> f64 {
    d.as_secs_f64() / 3600.0
}

/// The `q` quantile (nearest rank).
fn quantile(values: &[Duration], q: f64) -> Option<Duration> {
    let mut v = values.to_vec();
    v.sort();
    if v.is_empty() {
        return None;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

fn ms0(d: Option<Duration>) -> String {
    d.map_or("–".into(), |d| format!("{:.0}", d.as_secs_f64() * 1e3))
}

fn rate(events: u64, hours: f64) -> String {
    if hours <= 0.0 {
        return "–".into();
    }
    let r = events as f64 / hours;
    if r == 0.0 {
        "0".into()
    } else if r < 10.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.0}")
    }
}

/// Replays every detector on a run's traces, with crash instants drawn from `seed`.
fn replay_run(run: &SteadyRun, detectors: &[Detector], tallies: &mut [Tally], seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc4a5_4000);
    let lo = run.from + Duration::from_secs(10);
    let span = run.to.saturating_sub(lo + Duration::from_secs(5));
    let crashes: Vec<Time> = (0..CRASHES_PER_RUN)
        .map(|_| lo + Duration::from_micros(rng.random_range(0..=span.as_micros() as u64)))
        .collect();
    let observed = hours(run.to - run.from);
    for (d, tally) in detectors.iter().zip(tallies.iter_mut()) {
        for trace in &run.traces {
            let r = replay(*d, trace, run.to, &crashes);
            tally.suspicions += r.suspicions;
            tally.follower_hours += observed;
            tally
                .per_follower
                .extend(r.detections.into_iter().flatten());
        }
        tally.cluster_hours += observed;
    }
}

/// Everything measured for one size.
struct Measured {
    n: u64,
    live: Vec<(Setting, Vec<Live>)>,
    tallies: Vec<Vec<Tally>>,
}

fn measure(n: u64, o: &Options, detectors: &[Detector]) -> Measured {
    let per_run = Duration::from_secs_f64(o.hours * 3600.0 / o.seeds.max(1) as f64);
    let mut tallies = vec![vec![Tally::default(); detectors.len()]; Condition::ALL.len()];
    let mut live = Vec::new();
    for (ti, &setting) in o.settings.iter().enumerate() {
        let cfg = setting.config();
        let mut by_condition = Vec::new();
        for (ci, &condition) in Condition::ALL.iter().enumerate() {
            let mut l = Live {
                suspicions: vec![0; n as usize],
                ..Live::default()
            };
            for seed in 1..=o.seeds {
                let run = steady_run(n, condition, &cfg, per_run, seed);
                l.hours += hours(run.to - run.from);
                for (s, r) in l.suspicions.iter_mut().zip(&run.suspicions) {
                    *s += r;
                }
                l.elections += run.elections;
                l.leaderships += run.leaderships;
                l.unagreed += run.unagreed / o.seeds.max(1) as f64;
                l.offered += run.offered;
                l.lost += run.lost;
                l.not_agreed += u64::from(!run.agreed);
                if ti == 0 {
                    replay_run(&run, detectors, &mut tallies[ci], seed);
                }
            }
            l.crashes = (1..=o.crash_seeds)
                .filter_map(|seed| crash_run(n, condition, &cfg, 1000 + seed))
                .collect();
            by_condition.push(l);
        }
        live.push((setting, by_condition));
    }
    Measured { n, live, tallies }
}

fn live_table(m: &Measured) -> String {
    let n = m.n;
    let mut t = Table::new(&[
        "leader timeout (rank 0)",
        "condition",
        "simulated hours",
        "messages lost",
        "false suspicions per hour, cluster",
        "per member, by rank (0 = highest follower)",
        "elections joined per hour, all members",
        "leaderships accepted per hour, all members",
        "time without agreement",
        "failover median / p99 / max (ms)",
        "first suspicion after the crash, median (ms)",
        "election after it, median (ms)",
    ]);
    for (setting, by_condition) in &m.live {
        for (condition, l) in Condition::ALL.iter().zip(by_condition) {
            let total: u64 = l.suspicions.iter().sum();
            // Follower `n - 1 - r` has rank r (the leader, n, has none).
            let ranks: Vec<String> = (0..n - 1)
                .map(|r| rate(l.suspicions[(n - 2 - r) as usize], l.hours))
                .collect();
            let ranks = if ranks.len() <= 6 {
                ranks.join(", ")
            } else {
                format!(
                    "{}, {}, {} … {}",
                    ranks[0],
                    ranks[1],
                    ranks[2],
                    ranks.last().expect("several")
                )
            };
            let fo: Vec<Duration> = l.crashes.iter().filter_map(|c| c.failover).collect();
            let det: Vec<Duration> = l.crashes.iter().filter_map(|c| c.detection).collect();
            let el: Vec<Duration> = l.crashes.iter().filter_map(|c| c.election).collect();
            let failed = l.crashes.len() - fo.len();
            t.row(vec![
                setting.label(),
                condition.label().into(),
                format!(
                    "{:.1}{}",
                    l.hours,
                    if l.not_agreed > 0 {
                        format!(" ({} runs never agreed)", l.not_agreed)
                    } else {
                        String::new()
                    }
                ),
                format!("{:.1} %", 100.0 * l.lost as f64 / (l.offered.max(1)) as f64),
                rate(total, l.hours),
                ranks,
                rate(l.elections, l.hours),
                rate(l.leaderships, l.hours),
                format!("{:.3} %", 100.0 * l.unagreed),
                format!(
                    "{} / {} / {}{}",
                    ms0(median(&fo)),
                    ms0(quantile(&fo, 0.99)),
                    ms0(quantile(&fo, 1.0)),
                    if failed > 0 {
                        format!(" ({failed} of {} not agreed in 60 s)", l.crashes.len())
                    } else {
                        String::new()
                    }
                ),
                ms0(median(&det)),
                ms0(median(&el)),
            ]);
        }
    }
    t.markdown()
}

fn election_median(m: &Measured, ci: usize) -> Option<Duration> {
    let el: Vec<Duration> = m.live[0].1[ci]
        .crashes
        .iter()
        .filter_map(|c| c.election)
        .collect();
    median(&el)
}

fn replay_tables(m: &Measured, detectors: &[Detector]) -> String {
    let labels: Vec<&str> = Condition::ALL.iter().map(|c| c.label()).collect();
    let mut h1 = vec!["detector".to_string()];
    h1.extend(
        labels
            .iter()
            .map(|l| format!("{l}: per cluster (per follower)")),
    );
    let h1: Vec<&str> = h1.iter().map(String::as_str).collect();
    let mut t1 = Table::new(&h1);
    let mut h2 = vec!["detector".to_string()];
    h2.extend(labels.iter().map(|l| format!("{l}: median / p99")));
    let h2: Vec<&str> = h2.iter().map(String::as_str).collect();
    let mut t2 = Table::new(&h2);
    let mut h3 = vec!["detector".to_string()];
    h3.extend(
        labels
            .iter()
            .map(|l| format!("{l}: detection + election = failover")),
    );
    let h3: Vec<&str> = h3.iter().map(String::as_str).collect();
    let mut t3 = Table::new(&h3);
    for (di, d) in detectors.iter().enumerate() {
        let (mut r1, mut r2, mut r3) = (vec![d.label()], vec![d.label()], vec![d.label()]);
        for ci in 0..Condition::ALL.len() {
            let tally = &m.tallies[ci][di];
            r1.push(format!(
                "{} ({})",
                rate(tally.suspicions, tally.cluster_hours),
                rate(tally.suspicions, tally.follower_hours)
            ));
            r2.push(format!(
                "{} / {}",
                ms0(median(&tally.per_follower)),
                ms0(quantile(&tally.per_follower, 0.99))
            ));
            let first = median(&tally.per_follower);
            let election = election_median(m, ci);
            r3.push(format!(
                "{} + {} = {}",
                ms0(first),
                ms0(election),
                ms0(first.zip(election).map(|(a, b)| a + b))
            ));
        }
        t1.row(r1);
        t2.row(r2);
        t3.row(r3);
    }
    format!(
        "False suspicions per hour, per cluster ({} followers) and per follower:\n\n{}\n\
         Detection time per follower after a crash at a uniformly random instant (ms):\n\n{}\n\
         Estimated failover (ms): a follower's detection (median; with bully-core's \
         stagger the highest follower's detector is the one that starts the election) \
         plus the election bully-core ran after its first suspicion in the crash runs \
         (median, default timeout):\n\n{}",
        m.n - 1,
        t1.markdown(),
        t2.markdown(),
        t3.markdown()
    )
}

fn goal(m: &Measured, detectors: &[Detector]) -> String {
    let loss = Condition::ALL
        .iter()
        .position(|&c| c == Condition::Loss)
        .expect("a condition");
    let mut s = String::new();
    if let Some((setting, by_condition)) = m.live.first() {
        let l = &by_condition[loss];
        let total: u64 = l.suspicions.iter().sum();
        let r = total as f64 / l.hours.max(f64::MIN_POSITIVE);
        s.push_str(&format!(
            "At N = {}, bully-core with the default timings (leader timeout {} at rank 0, \
             staggered by rank) under 30 % loss: **{} false suspicions per hour per cluster** \
             over {:.1} simulated hours; the goal (below 1 per hour) is **{}**.",
            m.n,
            setting.label(),
            rate(total, l.hours),
            l.hours,
            if r < 1.0 { "met" } else { "not met" }
        ));
    }
    for (setting, by_condition) in &m.live {
        let parts: Vec<String> = Condition::ALL
            .iter()
            .zip(by_condition)
            .filter(|(c, _)| **c != Condition::Clean)
            .map(|(c, l)| {
                let total: u64 = l.suspicions.iter().sum();
                let fo: Vec<Duration> = l.crashes.iter().filter_map(|c| c.failover).collect();
                format!(
                    "{} {} per hour, failover median {} ms",
                    c.label(),
                    rate(total, l.hours),
                    ms0(median(&fo))
                )
            })
            .collect();
        s.push_str(&format!(
            "\n- bully-core as it runs, leader timeout {}: {}.",
            setting.label(),
            parts.join("; ")
        ));
    }
    s.push_str(
        "\n\nOn the traces, the fastest detector below 1 false suspicion per hour per cluster:\n",
    );
    for (ci, &condition) in Condition::ALL.iter().enumerate() {
        let meets = |d: &Detector| {
            let t = &m.tallies[ci][detectors.iter().position(|x| x == d).expect("listed")];
            t.cluster_hours > 0.0 && (t.suspicions as f64 / t.cluster_hours) < 1.0
        };
        let best = |pick: &dyn Fn(&Detector) -> bool| {
            detectors
                .iter()
                .filter(|d| pick(d) && meets(d))
                .min_by_key(|d| {
                    let di = detectors.iter().position(|x| x == *d).expect("listed");
                    median(&m.tallies[ci][di].per_follower).unwrap_or(Duration::MAX)
                })
                .map(|d| {
                    let di = detectors.iter().position(|x| x == d).expect("listed");
                    let first = median(&m.tallies[ci][di].per_follower);
                    let fo = first.zip(election_median(m, ci)).map(|(a, b)| a + b);
                    format!(
                        "{} (detection {} ms, failover ≈ {} ms)",
                        d.label(),
                        ms0(first),
                        ms0(fo)
                    )
                })
                .unwrap_or_else(|| "none of those tried".into())
        };
        s.push_str(&format!(
            "\n- {}: fixed: {}; φ: {}.",
            condition.label(),
            best(&|d| matches!(d, Detector::Fixed(_))),
            best(&|d| !matches!(d, Detector::Fixed(_))),
        ));
    }
    s.push('\n');
    s
}

/// The whole report, every size.
pub fn table(o: &Options) -> String {
    let detectors = detectors();
    let mut doc = String::new();
    for &n in &o.nodes {
        let started = Instant::now();
        let m = measure(n, o, &detectors);
        eprintln!("detector N = {n}: {:.0} s", started.elapsed().as_secs_f64());
        doc.push_str(&format!(
            "##### N = {n}: bully-core as it runs\n\n{}\n\
             ##### N = {n}: detectors replayed on the followers' heartbeat arrivals \
             (leader timeout {} runs)\n\n{}\n{}\n",
            live_table(&m),
            o.settings.first().map_or_else(String::new, |s| s.label()),
            replay_tables(&m, &detectors),
            goal(&m, &detectors)
        ));
    }
    doc
}
