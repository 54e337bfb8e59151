//! W1 checked on a log of work intervals ([`WorkLog`], [`check_w1`]): every job a
//! leader runs is logged with its fencing token and when it started and stopped;
//! no two leaderships' jobs may overlap, and a later leadership's token is never
//! below an earlier one's. Both drivers' tests check their runs with it.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bully_core::{FencingToken, NodeId};

/// One run of a job: which member, under which leadership, from when to when
/// (time since the run began, on one clock; `end` is `None` while it runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The member that ran the job.
    pub host: NodeId,
    /// The leadership it ran under.
    pub token: FencingToken,
    /// When it started.
    pub start: Duration,
    /// When it stopped; `None` while it runs.
    pub end: Option<Duration>,
}

impl Interval {
    /// Whether the two intervals share an instant. A job that ends at the instant
    /// the other starts does not overlap it (its last write was before).
    pub fn overlaps(&self, other: &Interval) -> bool {
        let ends_after =
            |interval: &Interval, instant: Duration| interval.end.is_none_or(|end| end > instant);
        ends_after(self, other.start) && ends_after(other, self.start)
    }
}

/// The work log every member of one cluster writes to. Cheap to clone: clones
/// share the log.
#[derive(Clone, Debug, Default)]
pub struct WorkLog(Arc<Mutex<Vec<Interval>>>);

impl WorkLog {
    /// An empty log.
    pub fn new() -> WorkLog {
        WorkLog::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Interval>> {
        // Every update is one push or one assignment: a panic while holding the
        // lock cannot leave the log inconsistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs a job of `host` under `token` that starts at `at`; returns its index,
    /// for [`end`](Self::end).
    pub fn start(&self, host: NodeId, token: FencingToken, at: Duration) -> usize {
        let mut log = self.lock();
        log.push(Interval {
            host,
            token,
            start: at,
            end: None,
        });
        log.len() - 1
    }

    /// Logs that job `index` stopped at `at`.
    pub fn end(&self, index: usize, at: Duration) {
        self.lock()[index].end = Some(at);
    }

    /// Every interval so far, in the order the jobs started.
    pub fn intervals(&self) -> Vec<Interval> {
        self.lock().clone()
    }

    /// The first member matching `who` whose job started at or after `since`.
    pub fn started_since(&self, who: impl Fn(NodeId) -> bool, since: Duration) -> Option<NodeId> {
        self.lock()
            .iter()
            .find(|interval| who(interval.host) && interval.start >= since)
            .map(|interval| interval.host)
    }
}

/// Pairs of intervals of two different leaderships that share an instant.
pub fn overlapping(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
    let mut found = Vec::new();
    for (i, a) in intervals.iter().enumerate() {
        for b in &intervals[i + 1..] {
            if a.token != b.token && a.overlaps(b) {
                found.push((*a, *b));
            }
        }
    }
    found
}

/// Jobs that started under a lower token than a job that started before them:
/// (the earlier, the later).
pub fn tokens_going_back(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
    let mut by_start = intervals.to_vec();
    by_start.sort_by_key(|interval| interval.start);
    let mut found = Vec::new();
    let mut highest: Option<Interval> = None;
    for interval in by_start {
        match highest {
            Some(top) if interval.token < top.token => found.push((top, interval)),
            Some(top) if interval.token == top.token => {}
            _ => highest = Some(interval),
        }
    }
    found
}

/// How a log broke W1, from [`check_w1`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum W1Violation {
    /// Jobs of two leaderships overlap.
    Overlap(Vec<(Interval, Interval)>),
    /// A job started under a lower token than an earlier one.
    TokenWentBack(Vec<(Interval, Interval)>),
    /// Fewer leaderships worked than the run needed, so it proves nothing.
    TooFewLeaderships {
        /// How many worked.
        worked: usize,
        /// How many the run needed.
        expected: usize,
    },
}

impl fmt::Display for W1Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            W1Violation::Overlap(pairs) => write!(f, "jobs of two leaderships overlap: {pairs:#?}"),
            W1Violation::TokenWentBack(pairs) => write!(
                f,
                "a job started under a lower token than an earlier one: {pairs:#?}"
            ),
            W1Violation::TooFewLeaderships { worked, expected } => write!(
                f,
                "{worked} leaderships worked, expected at least {expected}"
            ),
        }
    }
}

/// The W1 check: no overlap between leaderships, tokens that only grow, and at
/// least `min_leaderships` distinct leaderships that worked (so a run in which
/// nobody worked cannot pass).
pub fn check_w1(intervals: &[Interval], min_leaderships: usize) -> Result<(), W1Violation> {
    let overlaps = overlapping(intervals);
    if !overlaps.is_empty() {
        return Err(W1Violation::Overlap(overlaps));
    }
    let back = tokens_going_back(intervals);
    if !back.is_empty() {
        return Err(W1Violation::TokenWentBack(back));
    }
    let worked = intervals
        .iter()
        .map(|interval| interval.token)
        .collect::<BTreeSet<_>>()
        .len();
    if worked < min_leaderships {
        return Err(W1Violation::TooFewLeaderships {
            worked,
            expected: min_leaderships,
        });
    }
    Ok(())
}

/// The smallest gap between the end of a job of a member `from` accepts and the
/// start, after it, of a job of another leadership on a member `to` accepts: how
/// close the hand-overs between them came.
pub fn closest_hand_over(
    intervals: &[Interval],
    from: impl Fn(NodeId) -> bool,
    to: impl Fn(NodeId) -> bool,
) -> Option<Duration> {
    let mut closest = None::<Duration>;
    for a in intervals.iter().filter(|a| from(a.host)) {
        for b in intervals
            .iter()
            .filter(|b| b.token != a.token && to(b.host))
        {
            if let Some(end) = a.end.filter(|&end| end <= b.start) {
                let gap = b.start - end;
                closest = Some(closest.map_or(gap, |c| c.min(gap)));
            }
        }
    }
    closest
}

#[cfg(test)]
mod tests;
