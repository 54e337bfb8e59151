//! Failure detectors replayed on a follower's heartbeat arrival trace:
//! a fixed timeout (bully-core's kind) and the φ accrual detector (Hayashibara,
//! Défago, Yared, Katayama, "The φ accrual failure detector", SRDS 2004) with a
//! normal fit of the inter-arrival times (as Akka) or an exponential one (as
//! Cassandra).
//!
//! Every detector here is, after each heartbeat arrival, a deadline: the time
//! since that arrival after which it suspects (φ grows with the silence and
//! crosses the threshold once). A **suspicion** is a gap between two arrivals
//! longer than that deadline: the output went from trust to suspect, once per
//! episode (the next arrival restores trust).

use std::collections::VecDeque;
use std::time::Duration;

use crate::watch::Arrival;

/// Inter-arrival intervals kept (Akka's and Cassandra's default sample size).
pub const WINDOW: usize = 1000;

/// A failure detector's definition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Detector {
    /// Suspect once no heartbeat arrived for this long.
    Fixed(Duration),
    /// φ accrual, normal fit: `φ(t) = -log10(1 - F(t))` with `F` the normal
    /// distribution of the window's mean and standard deviation (at least
    /// `min_std`); suspect when `φ > threshold`.
    PhiNormal {
        /// φ threshold.
        threshold: f64,
        /// Floor of the standard deviation.
        min_std: Duration,
    },
    /// φ accrual, exponential fit (Cassandra): `φ(t) = t / (mean · ln 10)`.
    PhiExp {
        /// φ threshold.
        threshold: f64,
    },
}

impl Detector {
    /// The label used in the tables.
    pub fn label(&self) -> String {
        match *self {
            Detector::Fixed(t) => format!("fixed {} ms", t.as_millis()),
            Detector::PhiNormal { threshold, min_std } => format!(
                "φ normal, threshold {threshold}, min σ {} ms",
                min_std.as_millis()
            ),
            Detector::PhiExp { threshold } => format!("φ exponential, threshold {threshold}"),
        }
    }
}

/// `ln(erfc(x))`, from Numerical Recipes' `erfcc` (fractional error below
/// 1.2e-7 everywhere), taken as a logarithm so that far tails do not underflow.
fn ln_erfc(x: f64) -> f64 {
    if x < 0.0 {
        return (2.0 - ln_erfc(-x).exp()).ln();
    }
    let t = 1.0 / (1.0 + 0.5 * x);
    let poly = -1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    t.ln() - x * x + poly
}

/// `φ` of a standard normal variable at `y`: `-log10(P(Y > y))`.
pub fn phi_normal(y: f64) -> f64 {
    let ln_q = (0.5f64).ln() + ln_erfc(y / std::f64::consts::SQRT_2);
    -ln_q / std::f64::consts::LN_10
}

/// The `y` at which [`phi_normal`] reaches `threshold` (bisection; φ is
/// increasing in `y`).
fn normal_crossing(threshold: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 80.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if phi_normal(mid) < threshold {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// One follower's detector: the window of inter-arrival times and the last arrival.
pub struct Monitor {
    detector: Detector,
    crossing: f64,
    intervals: VecDeque<u64>,
    sum: u64,
    sum_sq: u128,
    last: Option<Time>,
}

type Time = Duration;

impl Monitor {
    /// A detector that expects heartbeats every `expected` until it has measured
    /// them: the window starts as Akka's first-heartbeat estimate, two intervals
    /// at `expected ± expected / 4`.
    pub fn new(detector: Detector, expected: Duration) -> Self {
        let crossing = match detector {
            Detector::PhiNormal { threshold, .. } => normal_crossing(threshold),
            _ => 0.0,
        };
        let mut m = Monitor {
            detector,
            crossing,
            intervals: VecDeque::with_capacity(WINDOW + 1),
            sum: 0,
            sum_sq: 0,
            last: None,
        };
        let e = expected.as_micros() as u64;
        m.record(e - e / 4);
        m.record(e + e / 4);
        m
    }

    fn record(&mut self, interval: u64) {
        self.intervals.push_back(interval);
        self.sum += interval;
        self.sum_sq += u128::from(interval) * u128::from(interval);
        if self.intervals.len() > WINDOW {
            let old = self.intervals.pop_front().expect("not empty");
            self.sum -= old;
            self.sum_sq -= u128::from(old) * u128::from(old);
        }
    }

    /// A heartbeat arrived at `at` (arrivals in time order).
    pub fn heartbeat(&mut self, at: Time) {
        if let Some(last) = self.last {
            self.record(at.saturating_sub(last).as_micros() as u64);
        }
        self.last = Some(at);
    }

    /// Mean of the window's intervals, in µs.
    pub fn mean(&self) -> f64 {
        self.sum as f64 / self.intervals.len() as f64
    }

    /// Standard deviation of the window's intervals, in µs.
    pub fn std(&self) -> f64 {
        let n = self.intervals.len() as f64;
        let mean = self.mean();
        (self.sum_sq as f64 / n - mean * mean).max(0.0).sqrt()
    }

    /// φ after `elapsed` without a heartbeat (the fixed timeout: 0 before it, ∞ after).
    pub fn phi(&self, elapsed: Duration) -> f64 {
        let t = elapsed.as_micros() as f64;
        match self.detector {
            Detector::Fixed(timeout) => {
                if elapsed > timeout {
                    f64::INFINITY
                } else {
                    0.0
                }
            }
            Detector::PhiNormal { min_std, .. } => {
                let sigma = self.std().max(min_std.as_micros() as f64);
                phi_normal((t - self.mean()) / sigma)
            }
            Detector::PhiExp { .. } => t / (self.mean() * std::f64::consts::LN_10),
        }
    }

    /// How long after the last arrival the detector suspects, as it stands now.
    pub fn deadline(&self) -> Duration {
        let micros = match self.detector {
            Detector::Fixed(timeout) => return timeout,
            Detector::PhiNormal { min_std, .. } => {
                let sigma = self.std().max(min_std.as_micros() as f64);
                self.mean() + sigma * self.crossing
            }
            Detector::PhiExp { threshold } => threshold * self.mean() * std::f64::consts::LN_10,
        };
        Duration::from_micros(micros.max(0.0) as u64)
    }

    /// Whether it suspects at `now`.
    pub fn suspects(&self, now: Time) -> bool {
        match self.last {
            Some(last) => now > last + self.deadline(),
            None => false,
        }
    }
}

/// A detector replayed on one follower's trace.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// Suspicions of the live leader between the first arrival and `end`.
    pub suspicions: u64,
    /// For each crash instant asked about: how long after it the detector would
    /// have suspected, had the leader crashed then (0 if it already suspected;
    /// `None` if no heartbeat sent before it arrived).
    pub detections: Vec<Option<Duration>>,
}

/// Heartbeats sent before a crash arrive within this long of it (the jitter's
/// exponential tail exceeds it with probability e^-50).
const LOOKAHEAD: Duration = Duration::from_secs(5);

/// Replays `detector` on `arrivals` (in arrival order, all from a live leader),
/// observed until `end`, and asks, for each instant of `crashes`, when it would
/// have suspected had the leader crashed then: the heartbeats that still arrive are
/// those sent before the crash, so the detector fires at its deadline after the
/// last of them (with the history it had then).
pub fn replay(detector: Detector, arrivals: &[Arrival], end: Time, crashes: &[Time]) -> Replay {
    let expected = Duration::from_millis(100);
    let mut m = Monitor::new(detector, expected);
    let mut fires = Vec::with_capacity(arrivals.len());
    let mut suspicions = 0;
    for (i, a) in arrivals.iter().enumerate() {
        m.heartbeat(a.at);
        let fire = a.at + m.deadline();
        fires.push(fire);
        let next = arrivals.get(i + 1).map_or(end, |b| b.at);
        if next > fire {
            suspicions += 1;
        }
    }
    let detections = crashes
        .iter()
        .map(|&c| {
            let upto = arrivals.partition_point(|a| a.at < c + LOOKAHEAD);
            let last = (0..upto).rev().find(|&k| arrivals[k].sent < c)?;
            Some(fires[last].saturating_sub(c))
        })
        .collect();
    Replay {
        suspicions,
        detections,
    }
}
