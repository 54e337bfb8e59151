//! Judging one nemesis run from the child log (`support/child_log.rs`) and
//! what the run recorded: the windows between its steps, each with its
//! majority side, and the whole-tree pauses.
//!
//! What must hold (the design's W1, S2 and L2, as the agent's README promises
//! them):
//! - **One command at a time.** No line of one command between the first and
//!   last line of another ([`ChildLog::overlaps`]), slow stops included. The
//!   one exception is a whole-tree pause, which no lease can beat: a paused
//!   command resumed after another leader's command started may write, but
//!   only under its older token, so that a store checking tokens with
//!   `bully_core::FencingGuard` refuses exactly those writes; and its agent,
//!   once resumed, stops it within the grace period.
//! - **Tokens only grow**: every command starts under a token at least as high
//!   as any before it.
//! - **A command on the majority side** within the allowed time after each
//!   step: in every window with a majority side, the longest stretch without a
//!   command whose leader is on that side stays within the window's allowance
//!   (the failover bound the configuration computes, plus what the step adds
//!   and an allowance for starting processes).
//! - **No command without a quorum**: in a window where no member can reach a
//!   quorum, no command writes once a lease since the step has run out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::super::child_log::{ChildLog, Interval, Kind, Line, Overlap, coverage};

/// The time between two steps, and what must hold in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// The step that opened it (0: the boot, from the first command's start).
    pub(crate) step: usize,
    /// From (stamp, ms): when the step began.
    pub(crate) from: u64,
    /// To (stamp, ms): when the next step began, or the shutdown; a line
    /// stamped then belongs to the next window.
    pub(crate) to: u64,
    /// The members that may lead in it (empty: none can reach a quorum).
    pub(crate) side: BTreeSet<u64>,
    /// The longest stretch without a command on the side it allows (ms).
    pub(crate) allowed_ms: u64,
}

/// A whole-tree pause of one member: its agent, supervisor and command
/// stopped together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pause {
    /// The member.
    pub(crate) member: u64,
    /// Every process of its tree when it was stopped (the commands' pids among
    /// them).
    pub(crate) pids: BTreeSet<u32>,
    /// When the nemesis began stopping it (stamp, ms).
    pub(crate) paused_at: u64,
    /// When its agent ran again (`None`: the run ended first).
    pub(crate) agent_resumed_at: Option<u64>,
    /// When its command's group ran again.
    pub(crate) job_resumed_at: Option<u64>,
}

/// The configuration's times the checks need, and the allowance for the
/// operating system's scheduling on a loaded machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The leader's lease (`Config::leader_lease`, ms): no command runs longer
    /// than this after its leader last heard from a quorum.
    pub(crate) lease_ms: u64,
    /// `child.grace_ms`.
    pub(crate) grace_ms: u64,
    /// What scheduling may add to any of those (ms).
    pub(crate) allowance_ms: u64,
    /// How long after `paused_at` a command may still write before the
    /// nemesis has stopped its group (stopping a tree is a few steps).
    pub(crate) freeze_ms: u64,
}

/// One thing that broke, and the log lines that show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    /// What broke, in words.
    pub(crate) what: String,
    /// Indexes of the lines to show around.
    pub(crate) lines: Vec<usize>,
}

/// What one window measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Measured {
    /// From the step to the first line of a command on the majority side (ms).
    pub(crate) first_ms: Option<u64>,
    /// The longest stretch of the window without such a command (ms).
    pub(crate) longest_gap_ms: u64,
}

/// Judges the run; see the module docs. Returns what broke and, per window,
/// what it measured.
/// Stamps in the findings are shown as milliseconds from `t0`.
pub(crate) fn judge(
    log: &ChildLog,
    windows: &[Window],
    pauses: &[Pause],
    limits: &Limits,
    t0: u64,
) -> (Vec<Finding>, Vec<Measured>) {
    let mut findings = Vec::new();
    overlaps(log, pauses, t0, &mut findings);
    fenced(log, pauses, &mut findings);
    for line in log.token_regressions() {
        findings.push(Finding {
            what: format!(
                "a command started under token ({}, {}), below one started before it",
                line.token.term.0, line.token.leader.0
            ),
            lines: vec![line.index],
        });
    }
    for line in log.orphan_lines() {
        findings.push(Finding {
            what: "a line of a command that never wrote its start".to_owned(),
            lines: vec![line.index],
        });
    }
    paused_commands(log, pauses, limits, t0, &mut findings);
    let intervals = log.intervals();
    let measured = windows
        .iter()
        .map(|window| judge_window(log, &intervals, window, limits, t0, &mut findings))
        .collect();
    (findings, measured)
}

/// Whether a whole-tree pause explains `overlap`: the paused command's late
/// writes under an older token than the command they fall inside, or the
/// newer command's lines inside the paused one's stretched life. Either way,
/// only after the pause began.
fn excused(overlap: &Overlap, pauses: &[Pause]) -> bool {
    let (line, during) = (&overlap.line, &overlap.during);
    pauses.iter().any(|pause| {
        line.millis >= pause.paused_at
            && ((pause.pids.contains(&line.pid) && line.token < during.token)
                || (pause.pids.contains(&during.pid) && during.token < line.token))
    })
}

fn overlaps(log: &ChildLog, pauses: &[Pause], t0: u64, findings: &mut Vec<Finding>) {
    // One finding per pair of commands: its first line (in file order: the
    // later command's first line inside the earlier one) and a count.
    let mut pairs: BTreeMap<(u32, u32), (Overlap, usize)> = BTreeMap::new();
    for overlap in log.overlaps() {
        if excused(&overlap, pauses) {
            continue;
        }
        let (a, b) = (overlap.during.pid, overlap.line.pid);
        pairs
            .entry((a.min(b), a.max(b)))
            .and_modify(|(first, count)| {
                if overlap.line.index < first.line.index {
                    *first = overlap;
                }
                *count += 1;
            })
            .or_insert((overlap, 1));
    }
    let mut found: Vec<(Overlap, usize)> = pairs.into_values().collect();
    found.sort_by_key(|(overlap, _)| overlap.line.index);
    for (overlap, count) in found {
        let (line, during) = (overlap.line, overlap.during);
        findings.push(Finding {
            what: format!(
                "two commands at once: {} of ({}, {}) pid {} (line {}, at {} ms) while the command \
                 of ({}, {}) pid {} ran (lines {}..={}, {} ms to {} ms{}); {count} line(s) of one \
                 inside the other",
                kind(line.kind),
                line.token.term.0,
                line.token.leader.0,
                line.pid,
                line.index,
                relative(line.millis, t0),
                during.token.term.0,
                during.token.leader.0,
                during.pid,
                during.first,
                during.last,
                relative(during.start_millis, t0),
                relative(during.end_millis, t0),
                term_note(log, &during, line.millis, t0),
            ),
            lines: vec![during.first, line.index, during.last],
        });
    }
}

/// A stamp as milliseconds from `t0` (the first command's start), signed.
fn relative(millis: u64, t0: u64) -> String {
    format!("{:+}", i128::from(millis) - i128::from(t0))
}

/// When the command `during` was told to stop (its `term` line), relative to
/// `millis`: what a slow stop looks like in a finding.
fn term_note(log: &ChildLog, during: &Interval, millis: u64, t0: u64) -> String {
    log.lines()
        .iter()
        .find(|l| l.kind == Kind::Term && l.pid == during.pid && l.token == during.token)
        .map_or_else(String::new, |term| {
            format!(
                "; it was told to stop at {} ms, {} ms before that line",
                relative(term.millis, t0),
                i128::from(millis) - i128::from(term.millis),
            )
        })
}

fn fenced(log: &ChildLog, pauses: &[Pause], findings: &mut Vec<Finding>) {
    let mut by_pid: BTreeMap<u32, (Line, usize)> = BTreeMap::new();
    for line in log.fenced_writes() {
        let paused = pauses
            .iter()
            .any(|pause| pause.pids.contains(&line.pid) && line.millis >= pause.paused_at);
        if !paused {
            by_pid.entry(line.pid).or_insert((line, 0)).1 += 1;
        }
    }
    for (line, count) in by_pid.into_values() {
        findings.push(Finding {
            what: format!(
                "{count} write(s) a FencingGuard refuses from the command of ({}, {}) pid {}, \
                 which was never paused: a newer token had written before it (first: line {})",
                line.token.term.0, line.token.leader.0, line.pid, line.index
            ),
            lines: vec![line.index],
        });
    }
}

/// A paused command stays silent while paused, and when a newer leadership's
/// command started meanwhile, it is gone within the grace period of its
/// agent's resumption.
fn paused_commands(
    log: &ChildLog,
    pauses: &[Pause],
    limits: &Limits,
    t0: u64,
    findings: &mut Vec<Finding>,
) {
    for pause in pauses {
        let resumed = [pause.agent_resumed_at, pause.job_resumed_at]
            .into_iter()
            .flatten()
            .min();
        let silent_from = pause.paused_at + limits.freeze_ms;
        for line in log.lines().iter().filter(|line| {
            pause.pids.contains(&line.pid)
                && line.millis > silent_from
                && resumed.is_none_or(|resumed| line.millis < resumed)
        }) {
            findings.push(Finding {
                what: format!(
                    "member {}'s command pid {} wrote at {} ms while its tree was paused (from {} ms)",
                    pause.member,
                    line.pid,
                    relative(line.millis, t0),
                    relative(pause.paused_at, t0)
                ),
                lines: vec![line.index],
            });
        }
        let Some(agent_back) = pause.agent_resumed_at else {
            continue;
        };
        let back = agent_back.max(pause.job_resumed_at.unwrap_or(agent_back));
        for interval in log
            .intervals()
            .iter()
            .filter(|i| pause.pids.contains(&i.pid))
        {
            let superseded = log.lines().iter().any(|l| {
                l.kind == Kind::Start
                    && l.token > interval.token
                    && (pause.paused_at..=agent_back).contains(&l.millis)
            });
            let allowed = back + limits.grace_ms + limits.allowance_ms;
            if superseded && interval.end_millis > allowed {
                findings.push(Finding {
                    what: format!(
                        "member {}'s paused command pid {} wrote until {} ms, {} ms after its agent \
                         resumed at {} ms, though a newer leadership's command had started (allowed: \
                         the grace period {} ms + {} ms)",
                        pause.member,
                        interval.pid,
                        relative(interval.end_millis, t0),
                        interval.end_millis - agent_back,
                        relative(agent_back, t0),
                        limits.grace_ms,
                        limits.allowance_ms
                    ),
                    lines: vec![interval.last],
                });
            }
        }
    }
}

fn judge_window(
    log: &ChildLog,
    intervals: &[Interval],
    window: &Window,
    limits: &Limits,
    t0: u64,
    findings: &mut Vec<Finding>,
) -> Measured {
    let on_side = |interval: &Interval| window.side.contains(&interval.token.leader.0);
    let first_ms = log
        .lines()
        .iter()
        .find(|l| l.millis >= window.from && window.side.contains(&l.token.leader.0))
        .map(|l| l.millis - window.from);
    let (_, longest_gap_ms) = coverage(intervals, on_side, window.from, window.to);
    let first_line = log.lines().iter().find(|l| l.millis >= window.from);
    if !window.side.is_empty() && longest_gap_ms > window.allowed_ms {
        findings.push(Finding {
            what: format!(
                "step {}: no command on the majority side {:?} for {} ms of {} ms to {} ms \
                 (allowed {} ms)",
                window.step, window.side, longest_gap_ms, window.from, window.to, window.allowed_ms
            ),
            lines: first_line.map(|l| vec![l.index]).unwrap_or_default(),
        });
    }
    if window.side.is_empty() {
        let quiet_from = window.from + limits.lease_ms + limits.allowance_ms;
        let late: Vec<&Line> = log
            .lines()
            .iter()
            // A line stamped at `to` is the next step's (a command resumed by it).
            .filter(|l| l.millis >= quiet_from && l.millis < window.to)
            .collect();
        if let Some(first) = late.first() {
            findings.push(Finding {
                what: format!(
                    "step {}: no member can reach a quorum from {} ms, yet a command wrote {} \
                     line(s) after {} ms (the lease {} ms + {} ms), the first by ({}, {}) pid {} \
                     at {} ms",
                    window.step,
                    relative(window.from, t0),
                    late.len(),
                    relative(quiet_from, t0),
                    limits.lease_ms,
                    limits.allowance_ms,
                    first.token.term.0,
                    first.token.leader.0,
                    first.pid,
                    relative(first.millis, t0)
                ),
                lines: vec![first.index],
            });
        }
    }
    Measured {
        first_ms,
        longest_gap_ms,
    }
}

fn kind(kind: Kind) -> &'static str {
    match kind {
        Kind::Start => "the start",
        Kind::Beat => "a beat",
        Kind::Term => "the term",
        Kind::Stop => "the stop",
    }
}

/// The log lines around each finding's lines (`around` either side), stamps
/// relative to `t0`, for a failure message.
pub(crate) fn excerpt(log: &ChildLog, findings: &[Finding], around: usize, t0: u64) -> String {
    let mut shown: BTreeSet<usize> = BTreeSet::new();
    for finding in findings {
        for &index in &finding.lines {
            shown.extend(index.saturating_sub(around)..=index + around);
        }
    }
    let mut out = String::new();
    let mut previous: Option<usize> = None;
    for line in log.lines().iter().filter(|l| shown.contains(&l.index)) {
        if previous.is_some_and(|p| p + 1 != line.index) {
            out.push_str("    ...\n");
        }
        let _ = writeln!(
            out,
            "    {:>5}  {:<5} ({}, {}) pid {:>7} at {:>+7} ms",
            line.index,
            format!("{:?}", line.kind).to_lowercase(),
            line.token.term.0,
            line.token.leader.0,
            line.pid,
            i128::from(line.millis) - i128::from(t0)
        );
        previous = Some(line.index);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::child_log::format_token;
    use bully_core::{FencingToken, NodeId, Term};

    fn token(term: u64, leader: u64) -> FencingToken {
        FencingToken {
            term: Term(term),
            leader: NodeId(leader),
        }
    }

    fn log(lines: &[(&str, (u64, u64), u32, u64)]) -> ChildLog {
        let text: String = lines
            .iter()
            .map(|&(kind, (term, leader), pid, millis)| {
                format!(
                    "{kind} {} {pid} {millis}\n",
                    format_token(token(term, leader))
                )
            })
            .collect();
        ChildLog::parse(&text).expect("a valid log")
    }

    const LIMITS: Limits = Limits {
        lease_ms: 600,
        grace_ms: 200,
        allowance_ms: 1_000,
        freeze_ms: 100,
    };

    fn window(step: usize, from: u64, to: u64, side: &[u64], allowed_ms: u64) -> Window {
        Window {
            step,
            from,
            to,
            side: side.iter().copied().collect(),
            allowed_ms,
        }
    }

    /// Three members: 2 leads while 3 is down; 3 comes back at 2_000 and
    /// takes over. 2's command takes 150 ms to stop; 3's starts at `start`.
    fn take_back(start: u64) -> ChildLog {
        log(&[
            ("start", (4, 2), 20, 1_000),
            ("beat", (4, 2), 20, 1_500),
            ("term", (4, 2), 20, 2_100),
            ("beat", (4, 2), 20, 2_150),
            ("start", (6, 3), 30, start),
            ("stop", (4, 2), 20, 2_250),
            ("beat", (6, 3), 30, start + 50),
        ])
    }

    #[test]
    fn a_take_back_that_waits_for_the_old_command_passes() {
        // The lines sort by time in a real log; here 3's start comes after 2's
        // stop once the file order says so.
        let clean = log(&[
            ("start", (4, 2), 20, 1_000),
            ("term", (4, 2), 20, 2_100),
            ("stop", (4, 2), 20, 2_250),
            ("start", (6, 3), 30, 2_600),
            ("beat", (6, 3), 30, 2_650),
        ]);
        let windows = [window(1, 2_000, 3_000, &[1, 2, 3], 2_000)];
        let (findings, measured) = judge(&clean, &windows, &[], &LIMITS, 0);
        assert_eq!(findings, []);
        assert_eq!(measured[0].first_ms, Some(100));
        assert_eq!(measured[0].longest_gap_ms, 350);
    }

    #[test]
    fn a_take_back_during_the_old_commands_stop_is_two_commands_at_once() {
        let windows = [window(1, 2_000, 3_000, &[1, 2, 3], 2_000)];
        let (findings, _) = judge(&take_back(2_160), &windows, &[], &LIMITS, 0);
        let what: Vec<&str> = findings.iter().map(|f| f.what.as_str()).collect();
        assert_eq!(findings.len(), 2, "{what:#?}");
        assert!(what[0].starts_with("two commands at once: the start of (6, 3) pid 30"));
        assert!(what[0].contains("told to stop at +2100 ms, 60 ms before that line"));
        assert!(what[0].contains("1 line(s) of one inside the other"));
        assert!(what[1].contains("FencingGuard refuses from the command of (4, 2) pid 20"));
        assert_eq!(findings[0].lines, [0, 4, 5]);
    }

    #[test]
    fn the_same_overlap_after_a_whole_tree_pause_is_the_fenced_exception() {
        // 2's tree was paused at 1_600 and its command resumed late.
        let pause = Pause {
            member: 2,
            pids: BTreeSet::from([20, 21]),
            paused_at: 1_600,
            agent_resumed_at: Some(2_100),
            job_resumed_at: Some(2_090),
        };
        let windows = [window(1, 2_000, 3_000, &[1, 2, 3], 2_000)];
        let (findings, _) = judge(
            &take_back(2_060),
            &windows,
            std::slice::from_ref(&pause),
            &LIMITS,
            0,
        );
        assert_eq!(findings, []);
        // Had the command gone on writing well past its agent's resumption, it
        // would be a finding.
        let late = log(&[
            ("start", (4, 2), 20, 1_000),
            ("start", (6, 3), 30, 1_900),
            ("beat", (4, 2), 20, 2_100),
            ("beat", (6, 3), 30, 2_200),
            ("beat", (4, 2), 20, 3_400),
        ]);
        let (findings, _) = judge(&late, &[], std::slice::from_ref(&pause), &LIMITS, 0);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert!(findings[0].what.contains("wrote until +3400 ms"));
        // And a line written while it was meant to be frozen is a finding too.
        let leaky = log(&[("start", (4, 2), 20, 1_000), ("beat", (4, 2), 20, 1_800)]);
        let (findings, _) = judge(&leaky, &[], &[pause], &LIMITS, 0);
        assert_eq!(findings.len(), 1);
        assert!(findings[0].what.contains("while its tree was paused"));
    }

    #[test]
    fn a_pause_does_not_excuse_an_overlap_that_began_before_it() {
        // 3's command started at 1_200, before 2's tree was paused at 1_600.
        let early = log(&[
            ("start", (4, 2), 20, 1_000),
            ("start", (6, 3), 30, 1_200),
            ("beat", (4, 2), 20, 1_300),
        ]);
        let pause = Pause {
            member: 2,
            pids: BTreeSet::from([20]),
            paused_at: 1_600,
            agent_resumed_at: Some(2_100),
            job_resumed_at: Some(2_100),
        };
        let (findings, _) = judge(&early, &[], &[pause], &LIMITS, 0);
        assert!(
            findings
                .iter()
                .any(|f| f.what.starts_with("two commands at once")),
            "{findings:#?}"
        );
    }

    #[test]
    fn too_long_without_a_command_on_the_majority_side_fails() {
        // 5 is cut off at 1_000; its command stops; 4's starts only at 4_000.
        let slow = log(&[
            ("start", (2, 5), 50, 500),
            ("stop", (2, 5), 50, 1_200),
            ("start", (3, 4), 40, 4_000),
            ("beat", (3, 4), 40, 4_050),
        ]);
        let windows = [window(3, 1_000, 4_100, &[1, 2, 3, 4], 2_400)];
        let (findings, measured) = judge(&slow, &windows, &[], &LIMITS, 0);
        assert_eq!(measured[0].longest_gap_ms, 3_000, "5's lines do not count");
        assert_eq!(measured[0].first_ms, Some(3_000));
        assert_eq!(findings.len(), 1);
        assert!(findings[0].what.contains("for 3000 ms"));
        // Within the allowance it passes.
        let windows = [window(3, 1_000, 4_100, &[1, 2, 3, 4], 3_000)];
        assert_eq!(judge(&slow, &windows, &[], &LIMITS, 0).0, []);
    }

    #[test]
    fn a_command_running_on_without_a_quorum_fails() {
        // Two members; 1 is killed at 1_000; 2's command must be gone by the
        // lease (600 ms) plus the allowance.
        let stubborn = log(&[
            ("start", (2, 2), 20, 500),
            ("beat", (2, 2), 20, 1_500),
            ("beat", (2, 2), 20, 2_700),
        ]);
        let windows = [window(2, 1_000, 3_000, &[], 0)];
        let (findings, _) = judge(&stubborn, &windows, &[], &LIMITS, 0);
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .what
                .contains("yet a command wrote 1 line(s) after +2600 ms")
        );
        assert_eq!(findings[0].lines, [2]);
        // Stopped in time, it passes.
        let windows = [window(2, 1_000, 2_650, &[], 0)];
        assert_eq!(judge(&stubborn, &windows, &[], &LIMITS, 0).0, []);
        // A line stamped as the next step began (a paused command it resumed)
        // is that step's.
        let windows = [window(2, 1_000, 2_700, &[], 0)];
        assert_eq!(judge(&stubborn, &windows, &[], &LIMITS, 0).0, []);
    }

    #[test]
    fn an_excerpt_shows_the_lines_around_a_finding() {
        let windows = [window(1, 2_000, 3_000, &[1, 2, 3], 2_000)];
        let log = take_back(2_160);
        let (findings, _) = judge(&log, &windows, &[], &LIMITS, 0);
        let text = excerpt(&log, &findings[..1], 0, 1_000);
        let shown: Vec<&str> = text.lines().collect();
        assert_eq!(shown.len(), 4, "{text}");
        assert!(shown[0].contains("start (4, 2) pid      20 at      +0 ms"));
        assert_eq!(shown[1], "    ...");
        assert!(shown[2].contains("start (6, 3) pid      30 at   +1160 ms"));
    }
}
