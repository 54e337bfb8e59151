//! bully-core's configuration in each system at N members, and each system's
//! members built with it ([`with_system`]). In the equal-traffic systems (issue
//! 25) the heartbeat interval is chosen per N so that bully-core's steady traffic
//! does not exceed a peer's, measured by running the peer's members: the rule and
//! the builder it runs through call each other, so they live here together.
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
use crate::members::{Visit, with_members};
use crate::peer::Peer;
use crate::scenario;
use crate::sim::Counts;
use crate::system::System;

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

/// bully-core's configuration at `n` members, for the bully systems (the
/// equal-traffic ones measure their peer's traffic at `n` once per process:
/// [`matched`]).
pub fn bully_config(system: System, n: u64) -> Config {
    match system {
        System::BullyMajority | System::BullyMajorityUndeclared => {
            Config::default().with_quorum(Quorum::Majority)
        }
        System::BullyAtBle => matched(System::Ble, Quorum::None, n).config,
        System::BullyMajorityAtBle => matched(System::Ble, Quorum::Majority, n).config,
        System::BullyAtRaft => matched(System::Raft500, Quorum::None, n).config,
        _ => Config::default(),
    }
}

/// Runs `v` with the member builder of `system`, bully-core's configured by
/// [`bully_config`].
pub fn with_system<V: Visit>(system: System, v: V) -> V::Out {
    with_members(system, &|n| bully_config(system, n), v)
}
