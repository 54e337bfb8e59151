//! The shared child log of the process tests: parse it, and check it.
//!
//! Every child the agents start (`support/child.sh`) appends
//! `start|beat|term|stop TOKEN PID MILLIS` lines to one file. The lines come in one
//! total order, the file's (O_APPEND on one machine), so the order of the lines
//! is the order in which the writes happened, whatever the clocks say; the
//! `MILLIS` stamps (read just before each write) only measure durations.
//!
//! What the tests check on it:
//! - [`ChildLog::overlaps`]: a `start`/`beat`/`term` line of one child between
//!   the `start` of another child (another token, or another process of the
//!   same token) and that child's last line. Zero means at most one child ran at
//!   any instant (judged by the file's order, not by clocks).
//! - [`ChildLog::token_regressions`]: every new leadership's child carries a token
//!   higher than all before it.
//! - [`ChildLog::longest_gap`] and [`coverage`]: the longest stretch of wall
//!   time, inside a window, during which no child (or none of those selected)
//!   ran, and how much of it they covered (measured from the stamps).
//! - [`ChildLog::fenced_writes`]: every line treated as a write to a store that
//!   checks tokens with [`bully_core::FencingGuard`], in file order; the writes it
//!   refuses.

use std::fmt;
use std::path::Path;

use bully_core::{FencingGuard, FencingToken, NodeId, Term};

/// What a line says the child did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The child started (its first line).
    Start,
    /// The child is running (every 50 ms).
    Beat,
    /// The child was asked to stop (SIGTERM) and takes its time to finish (it
    /// goes on writing `beat` lines until its `stop`).
    Term,
    /// The child was asked to stop (SIGTERM) and is leaving.
    Stop,
}

/// One line of the child log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    /// Where it is in the file (0-based): the order of the writes.
    pub(crate) index: usize,
    /// What the child did.
    pub(crate) kind: Kind,
    /// The `BULLY_FENCING_TOKEN` the child was started with.
    pub(crate) token: FencingToken,
    /// The child's pid (its process group too: the agent starts it as a group
    /// leader).
    pub(crate) pid: u32,
    /// Wall clock, milliseconds since the epoch, just before the write.
    pub(crate) millis: u64,
}

/// One child process's life as the log shows it: from its `start` line to its
/// last line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    /// The child's token.
    pub(crate) token: FencingToken,
    /// The child's pid.
    pub(crate) pid: u32,
    /// The index of its `start` line.
    pub(crate) first: usize,
    /// The index of its last line.
    pub(crate) last: usize,
    /// The stamp of its `start` line.
    pub(crate) start_millis: u64,
    /// The stamp of its last line.
    pub(crate) end_millis: u64,
    /// Whether its last line is a `stop` (it left on SIGTERM; otherwise it was
    /// killed, or is still running).
    pub(crate) stopped: bool,
}

/// A line that breaks the no-overlap rule: it was written by the child of
/// `token` while the child of `during` (another token) was between its first and
/// its last line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overlap {
    /// The offending line.
    pub(crate) line: Line,
    /// The child (interval) it fell inside.
    pub(crate) during: Interval,
}

/// A line the log cannot be read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// 1-based line number.
    pub(crate) line: usize,
    /// The text of the line.
    pub(crate) text: String,
    /// What is wrong with it.
    pub(crate) reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "child log line {}: {}: {:?}",
            self.line, self.reason, self.text
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses `BULLY_FENCING_TOKEN`: term and leader as two 20-digit zero-padded
/// decimals joined by `-`.
pub(crate) fn parse_token(text: &str) -> Option<FencingToken> {
    let (term, leader) = text.split_once('-')?;
    if term.len() != 20 || leader.len() != 20 {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(term) || !digits(leader) {
        return None;
    }
    Some(FencingToken {
        term: Term(term.parse().ok()?),
        leader: NodeId(leader.parse().ok()?),
    })
}

/// Formats a token as `BULLY_FENCING_TOKEN` does (for messages).
pub(crate) fn format_token(token: FencingToken) -> String {
    format!("{:020}-{:020}", token.term.0, token.leader.0)
}

/// The parsed child log.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChildLog {
    lines: Vec<Line>,
}

impl ChildLog {
    /// Reads and parses the log at `path`; a missing file is an empty log (no
    /// child has started yet).
    pub(crate) fn read(path: &Path) -> Result<ChildLog, ParseError> {
        match std::fs::read_to_string(path) {
            Ok(text) => ChildLog::parse(&text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(ChildLog::default()),
            Err(error) => panic!("cannot read the child log {}: {error}", path.display()),
        }
    }

    /// Parses the text of a log. A last line without its newline is a write still
    /// under way and is left for the next read; any other malformed line is an
    /// error (a torn write would be a finding).
    pub(crate) fn parse(text: &str) -> Result<ChildLog, ParseError> {
        let complete = match text.rfind('\n') {
            Some(end) => &text[..=end],
            None => "",
        };
        let mut lines = Vec::new();
        for (number, raw) in complete.lines().enumerate() {
            let error = |reason| ParseError {
                line: number + 1,
                text: raw.to_owned(),
                reason,
            };
            let fields: Vec<&str> = raw.split(' ').collect();
            let [kind, token, pid, millis] = fields[..] else {
                return Err(error("not four fields"));
            };
            let kind = match kind {
                "start" => Kind::Start,
                "beat" => Kind::Beat,
                "term" => Kind::Term,
                "stop" => Kind::Stop,
                _ => return Err(error("unknown kind")),
            };
            let token = parse_token(token).ok_or_else(|| error("bad fencing token"))?;
            let pid = pid.parse().map_err(|_| error("bad pid"))?;
            let millis = millis.parse().map_err(|_| error("bad millis"))?;
            lines.push(Line {
                index: lines.len(),
                kind,
                token,
                pid,
                millis,
            });
        }
        Ok(ChildLog { lines })
    }

    /// All lines, in file order.
    pub(crate) fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// Every child's interval, in the order of their `start` lines. Lines of a
    /// pid that has no `start` before them (impossible with `child.sh`) are
    /// reported by [`ChildLog::orphan_lines`] instead.
    pub(crate) fn intervals(&self) -> Vec<Interval> {
        let mut intervals: Vec<Interval> = Vec::new();
        for line in &self.lines {
            if line.kind == Kind::Start {
                intervals.push(Interval {
                    token: line.token,
                    pid: line.pid,
                    first: line.index,
                    last: line.index,
                    start_millis: line.millis,
                    end_millis: line.millis,
                    stopped: false,
                });
            } else if let Some(interval) = intervals
                .iter_mut()
                .rev()
                .find(|i| i.pid == line.pid && i.token == line.token)
            {
                interval.last = line.index;
                interval.end_millis = line.millis;
                interval.stopped = line.kind == Kind::Stop;
            }
        }
        intervals
    }

    /// Lines whose child has no `start` line before them.
    pub(crate) fn orphan_lines(&self) -> Vec<Line> {
        let mut started = std::collections::BTreeSet::new();
        let mut orphans = Vec::new();
        for line in &self.lines {
            if line.kind == Kind::Start {
                started.insert((line.pid, line.token));
            } else if !started.contains(&(line.pid, line.token)) {
                orphans.push(*line);
            }
        }
        orphans
    }

    /// Every `start`/`beat`/`term` line written while another child was between
    /// its first and its last line, paired with that child (one pair per child
    /// it fell inside): each is an instant at which two children ran at once.
    /// Another child is another token's, or another process of the same token
    /// (the agent restarts a command only after the last one exited).
    pub(crate) fn overlaps(&self) -> Vec<Overlap> {
        let intervals = self.intervals();
        let mut overlaps = Vec::new();
        for line in &self.lines {
            if line.kind == Kind::Stop {
                continue;
            }
            for during in intervals.iter().filter(|i| {
                (i.token, i.pid) != (line.token, line.pid)
                    && i.first < line.index
                    && line.index < i.last
            }) {
                overlaps.push(Overlap {
                    line: *line,
                    during: *during,
                });
            }
        }
        overlaps
    }

    /// `start` lines whose token is lower than a token started before them. A
    /// second `start` of the newest token (the agent restarting a child that
    /// exited, in the same leadership) is not one.
    pub(crate) fn token_regressions(&self) -> Vec<Line> {
        let mut newest: Option<FencingToken> = None;
        let mut regressions = Vec::new();
        for line in self.lines.iter().filter(|l| l.kind == Kind::Start) {
            match newest {
                Some(newest) if line.token < newest => regressions.push(*line),
                _ => newest = Some(line.token),
            }
        }
        regressions
    }

    /// The distinct tokens in the order their first child started.
    pub(crate) fn tokens(&self) -> Vec<FencingToken> {
        let mut tokens: Vec<FencingToken> = Vec::new();
        for line in self.lines.iter().filter(|l| l.kind == Kind::Start) {
            if !tokens.contains(&line.token) {
                tokens.push(line.token);
            }
        }
        tokens
    }

    /// The newest token any child started with.
    pub(crate) fn newest_token(&self) -> Option<FencingToken> {
        self.lines
            .iter()
            .filter(|l| l.kind == Kind::Start)
            .map(|l| l.token)
            .max()
    }

    /// The first `start` line of a token above `above` (any token when `None`).
    pub(crate) fn first_start_above(&self, above: Option<FencingToken>) -> Option<Line> {
        self.lines
            .iter()
            .find(|l| l.kind == Kind::Start && above.is_none_or(|above| l.token > above))
            .copied()
    }

    /// The first `start` line stamped at or after `millis`.
    pub(crate) fn first_start_since(&self, millis: u64) -> Option<Line> {
        self.lines
            .iter()
            .find(|l| l.kind == Kind::Start && l.millis >= millis)
            .copied()
    }

    /// The longest stretch of `[from, until]` (stamps, ms) during which no child
    /// ran, a child running from its `start` stamp to its last line's stamp. A
    /// child still running at `until` counts as running up to its last line only,
    /// so pass the `until` of a moment the log has lines for (for example the
    /// start of the child a test waited for).
    pub(crate) fn longest_gap(&self, from: u64, until: u64) -> u64 {
        coverage(&self.intervals(), |_| true, from, until).1
    }

    /// Feeds every line, in file order, as a write under its token to a store
    /// guarded by [`FencingGuard`], and returns the writes it refuses: the
    /// stale writes a deposed leader's child made after a newer leader's child
    /// had written.
    pub(crate) fn fenced_writes(&self) -> Vec<Line> {
        let mut guard = FencingGuard::new();
        self.lines
            .iter()
            .filter(|line| guard.check(line.token).is_err())
            .copied()
            .collect()
    }

    /// A short human-readable summary of every child (for failure messages).
    pub(crate) fn describe(&self) -> String {
        let mut out = String::new();
        for i in self.intervals() {
            out.push_str(&format!(
                "  token ({}, {}) pid {}: lines {}..={} ms {}..={} ({} ms){}\n",
                i.token.term.0,
                i.token.leader.0,
                i.pid,
                i.first,
                i.last,
                i.start_millis,
                i.end_millis,
                i.end_millis - i.start_millis,
                if i.stopped { ", stopped" } else { "" },
            ));
        }
        out
    }
}

/// How much of `[from, to]` (stamps, ms) the intervals that `keep` selects
/// cover, and the longest stretch they leave uncovered. A child runs from its
/// `start` stamp to its last line's stamp; one that wrote a single line ran at
/// that instant, which splits a stretch without a child in two.
pub(crate) fn coverage(
    intervals: &[Interval],
    keep: impl Fn(&Interval) -> bool,
    from: u64,
    to: u64,
) -> (u64, u64) {
    let mut spans: Vec<(u64, u64)> = intervals
        .iter()
        .filter(|interval| keep(interval))
        .map(|interval| (interval.start_millis.max(from), interval.end_millis.min(to)))
        .filter(|(start, end)| start <= end)
        .collect();
    spans.sort_unstable();
    let (mut covered, mut longest_gap, mut reached) = (0, 0, from);
    for (start, end) in spans {
        if start > reached {
            longest_gap = longest_gap.max(start - reached);
        }
        if end > reached {
            covered += end - start.max(reached);
        }
        reached = reached.max(end);
    }
    longest_gap = longest_gap.max(to.saturating_sub(reached));
    (covered, longest_gap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(term: u64, leader: u64) -> FencingToken {
        FencingToken {
            term: Term(term),
            leader: NodeId(leader),
        }
    }

    fn line(kind: &str, term: u64, leader: u64, pid: u32, millis: u64) -> String {
        format!(
            "{kind} {} {pid} {millis}\n",
            format_token(token(term, leader))
        )
    }

    #[test]
    fn tokens_round_trip_and_compare_as_strings() {
        let a = format_token(token(3, 5));
        assert_eq!(a, "00000000000000000003-00000000000000000005");
        assert_eq!(parse_token(&a), Some(token(3, 5)));
        let b = format_token(token(4, 2));
        assert!(b > a && token(4, 2) > token(3, 5));
        assert_eq!(parse_token("3-5"), None, "not zero-padded");
        assert_eq!(
            parse_token("0000000000000000000x-00000000000000000005"),
            None
        );
    }

    #[test]
    fn a_clean_handover_has_no_overlap_and_one_gap() {
        // 5 leads in term 2, is stopped; 4 takes over in term 3 after 300 ms.
        let text = [
            line("start", 2, 5, 100, 1_000),
            line("beat", 2, 5, 100, 1_050),
            line("stop", 2, 5, 100, 1_100),
            line("start", 3, 4, 200, 1_400),
            line("beat", 3, 4, 200, 1_450),
        ]
        .concat();
        let log = ChildLog::parse(&text).unwrap();
        assert!(log.overlaps().is_empty());
        assert!(log.token_regressions().is_empty());
        assert!(log.fenced_writes().is_empty());
        assert_eq!(log.tokens(), [token(2, 5), token(3, 4)]);
        assert_eq!(log.longest_gap(1_050, 1_450), 300);
        assert_eq!(log.longest_gap(900, 1_050), 100, "before the first start");
        assert_eq!(log.longest_gap(1_100, 1_100), 0);
        assert!(log.intervals()[0].stopped);
    }

    #[test]
    fn a_paused_leaders_late_writes_overlap_and_are_fenced() {
        // 5's child is paused; 4's starts; 5's child resumes, beats once, stops.
        let text = [
            line("start", 2, 5, 100, 1_000),
            line("beat", 2, 5, 100, 1_050),
            line("start", 3, 4, 200, 2_000),
            line("beat", 2, 5, 100, 3_000),
            line("beat", 3, 4, 200, 3_010),
            line("stop", 2, 5, 100, 3_020),
        ]
        .concat();
        let log = ChildLog::parse(&text).unwrap();
        let overlaps = log.overlaps();
        // 4's start and beat fall inside 5's child, and 5's late beat inside 4's.
        let at: Vec<(usize, FencingToken)> = overlaps
            .iter()
            .map(|o| (o.line.index, o.during.token))
            .collect();
        assert_eq!(at, [(2, token(2, 5)), (3, token(3, 4)), (4, token(2, 5))]);
        let refused: Vec<usize> = log.fenced_writes().iter().map(|l| l.index).collect();
        assert_eq!(
            refused,
            [3, 5],
            "the late beat and the stop carry the old token"
        );
        assert!(log.token_regressions().is_empty());
    }

    #[test]
    fn a_start_under_an_older_token_is_a_regression_but_a_restart_is_not() {
        let text = [
            line("start", 3, 4, 200, 1_000),
            line("start", 3, 4, 201, 1_500),
            line("start", 2, 5, 100, 2_000),
        ]
        .concat();
        let log = ChildLog::parse(&text).unwrap();
        let regressions = log.token_regressions();
        assert_eq!(regressions.len(), 1);
        assert_eq!(regressions[0].token, token(2, 5));
    }

    #[test]
    fn a_slow_stop_keeps_the_child_running_until_its_last_line() {
        // 5's child is told to stop at 1_100 and takes 150 ms; 4's child starts
        // at 1_200, before 5's child wrote its last line: an overlap.
        let text = [
            line("start", 2, 5, 100, 1_000),
            line("term", 2, 5, 100, 1_100),
            line("beat", 2, 5, 100, 1_150),
            line("start", 3, 4, 200, 1_200),
            line("stop", 2, 5, 100, 1_250),
        ]
        .concat();
        let log = ChildLog::parse(&text).unwrap();
        assert_eq!(log.lines()[1].kind, Kind::Term);
        let intervals = log.intervals();
        assert_eq!((intervals[0].last, intervals[0].end_millis), (4, 1_250));
        assert!(intervals[0].stopped);
        let at: Vec<usize> = log.overlaps().iter().map(|o| o.line.index).collect();
        assert_eq!(at, [3], "4's start, inside 5's slow stop");
        assert!(log.fenced_writes().iter().any(|l| l.index == 4));
    }

    #[test]
    fn two_processes_of_one_token_at_once_overlap() {
        // The same leadership's command restarted while the first still ran.
        let text = [
            line("start", 3, 4, 200, 1_000),
            line("start", 3, 4, 201, 1_100),
            line("beat", 3, 4, 200, 1_150),
            line("beat", 3, 4, 201, 1_200),
        ]
        .concat();
        let log = ChildLog::parse(&text).unwrap();
        let pairs: Vec<(usize, u32)> = log
            .overlaps()
            .iter()
            .map(|o| (o.line.index, o.during.pid))
            .collect();
        assert_eq!(pairs, [(1, 200), (2, 201)]);
        assert!(log.token_regressions().is_empty());
    }

    #[test]
    fn a_line_inside_two_children_is_reported_with_each() {
        let text = [
            line("start", 2, 5, 100, 1_000),
            line("start", 3, 4, 200, 1_100),
            line("start", 4, 3, 300, 1_200),
            line("beat", 2, 5, 100, 1_300),
            line("beat", 3, 4, 200, 1_400),
        ]
        .concat();
        let log = ChildLog::parse(&text).unwrap();
        let inside: Vec<u32> = log
            .overlaps()
            .iter()
            .filter(|o| o.line.index == 2)
            .map(|o| o.during.pid)
            .collect();
        assert_eq!(inside, [100, 200]);
    }

    #[test]
    fn coverage_counts_only_the_selected_children() {
        let text = [
            line("start", 2, 5, 100, 1_000),
            line("stop", 2, 5, 100, 1_100),
            line("start", 3, 4, 200, 1_900),
            line("beat", 3, 4, 200, 1_950),
        ]
        .concat();
        let intervals = ChildLog::parse(&text).unwrap().intervals();
        assert_eq!(coverage(&intervals, |_| true, 1_000, 2_000), (150, 800));
        assert_eq!(
            coverage(&intervals, |i| i.token.leader.0 == 4, 1_000, 2_000),
            (50, 900)
        );
        assert_eq!(coverage(&intervals, |_| false, 1_000, 2_000), (0, 1_000));
    }

    #[test]
    fn a_torn_last_line_waits_and_garbage_is_an_error() {
        let mut text = line("start", 1, 5, 100, 1_000);
        text.push_str("beat 000");
        assert_eq!(ChildLog::parse(&text).unwrap().lines().len(), 1);
        let error = ChildLog::parse("start x 1 2\n").unwrap_err();
        assert_eq!(error.line, 1);
        assert_eq!(error.reason, "bad fencing token");
        assert_eq!(
            ChildLog::parse("hello\n").unwrap_err().reason,
            "not four fields"
        );
    }
}
