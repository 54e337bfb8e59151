//! W1, checked on a log of work intervals: every job a leader runs is logged with
//! its fencing token and the (simulated) time it started and stopped; no two
//! leaderships' jobs may overlap, and a later leadership's token is never below
//! an earlier one's.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bully_core::{FencingToken, NodeId};

/// One run of a job: which host, under which leadership, from when to when (time
/// since the simulation started; `end` is `None` while it runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    pub(crate) host: NodeId,
    pub(crate) token: FencingToken,
    pub(crate) start: Duration,
    pub(crate) end: Option<Duration>,
}

impl Interval {
    /// Whether the two intervals share an instant. A job that ends at the instant
    /// the other starts does not overlap it (its last write was before).
    pub(crate) fn overlaps(&self, other: &Interval) -> bool {
        let ends_after =
            |interval: &Interval, instant: Duration| interval.end.is_none_or(|end| end > instant);
        ends_after(self, other.start) && ends_after(other, self.start)
    }
}

/// The work log every host of one cluster writes to. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct WorkLog(Arc<Mutex<Vec<Interval>>>);

impl WorkLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Interval>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs a job that starts at `at`; returns its index, for [`end`](Self::end).
    pub(crate) fn start(&self, host: NodeId, token: FencingToken, at: Duration) -> usize {
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
    pub(crate) fn end(&self, index: usize, at: Duration) {
        self.lock()[index].end = Some(at);
    }

    /// Every interval so far, in the order the jobs started.
    pub(crate) fn intervals(&self) -> Vec<Interval> {
        self.lock().clone()
    }

    /// The first host matching `who` whose job started at or after `since`.
    pub(crate) fn started_since(
        &self,
        who: impl Fn(NodeId) -> bool,
        since: Duration,
    ) -> Option<NodeId> {
        self.lock()
            .iter()
            .find(|interval| who(interval.host) && interval.start >= since)
            .map(|interval| interval.host)
    }
}

/// Pairs of intervals of two different leaderships that share an instant.
pub(crate) fn overlapping(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
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
pub(crate) fn tokens_going_back(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
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

/// The W1 check: no overlap between leaderships, tokens that only grow, and at
/// least `min_leaderships` distinct leaderships that worked (so a story in which
/// nobody worked cannot pass). Panics with the whole log otherwise.
pub(crate) fn assert_w1(what: &str, intervals: &[Interval], min_leaderships: usize) {
    let overlaps = overlapping(intervals);
    assert!(
        overlaps.is_empty(),
        "{what}: jobs of two leaderships overlap: {overlaps:#?}\nwhole log: {intervals:#?}"
    );
    let back = tokens_going_back(intervals);
    assert!(
        back.is_empty(),
        "{what}: a job started under a lower token than an earlier one: {back:#?}\nwhole log: {intervals:#?}"
    );
    let tokens: std::collections::BTreeSet<_> = intervals.iter().map(|i| i.token).collect();
    assert!(
        tokens.len() >= min_leaderships,
        "{what}: {} leaderships worked, expected at least {min_leaderships}: {intervals:#?}",
        tokens.len()
    );
}

/// The smallest gap between a job of a host `from` accepts ending and a job of
/// another leadership, on a host `to` accepts, starting after it: how close the
/// hand-overs between them came.
pub(crate) fn closest_hand_over(
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
