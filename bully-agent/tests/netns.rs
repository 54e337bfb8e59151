//! The analysis half of `tests/netns.sh`: five agents in network namespaces under
//! iptables faults. The script sets up the namespaces, runs the agents and the
//! faults, and writes two files into its run directory: `child.log`, the lines
//! the test child appended (`start|beat|stop TOKEN PID MILLIS`), and
//! `timeline.txt`, one line per fault (`NAME majority=1,2,3 leader=5
//! fault=MS heal=MS healthy=MS`). This test reads them and asserts:
//!
//! - the child's intervals, by fencing token, never overlap (W1: zero under a
//!   majority quorum), in the file's order, which is the order the writes happened;
//! - every new child carries a token at least as high as the one before (a child
//!   restarted inside one leadership keeps its token);
//! - during each fault, a child led from the majority side runs for at least
//!   `1 - (failover bound + lease margin + SPAWN_ALLOWANCE) / fault window` of the
//!   window: one failover at most. The failover bound is what
//!   `bully_core::Config::failover_bound` computes for the protocol configuration
//!   the agents load (`node-1.toml`, read here with `bully_agent::config::load`);
//!   a new leader then waits up to its lease margin for the previous leader's
//!   child to stop, and starts its own.
//!
//! It is ignored because it needs the script's run: `sudo bash
//! bully-agent/tests/netns.sh` runs it with `BULLY_NETNS_RUN` set.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the agent adds to the core's failover bound before a child writes its
/// `start` line: fork and exec of the supervisor and of `sh`, and the child's
/// first `date`, on a loaded two-core CI machine.
const SPAWN_ALLOWANCE: Duration = Duration::from_millis(500);

/// A fencing token as the agent hands it to the child: term, then leader id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Token {
    term: u64,
    leader: u64,
}

impl Token {
    fn parse(text: &str) -> Result<Self, String> {
        let (term, leader) = text
            .split_once('-')
            .ok_or_else(|| format!("token {text:?} has no '-'"))?;
        if term.len() != 20 || leader.len() != 20 {
            return Err(format!("token {text:?} is not two 20-digit numbers"));
        }
        let number = |digits: &str| {
            digits
                .parse::<u64>()
                .map_err(|error| format!("token {text:?}: {error}"))
        };
        Ok(Self {
            term: number(term)?,
            leader: number(leader)?,
        })
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "term {} leader {}", self.term, self.leader)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Start,
    Beat,
    Stop,
}

/// One line of `child.log`.
#[derive(Debug, Clone, Copy)]
struct Line {
    kind: Kind,
    token: Token,
    pid: u32,
    /// `None` when the line has no stamp: the `date` in the child's `$(now)`
    /// shares the child's process group, so the agent's SIGTERM to the group can
    /// kill it before it prints; the `echo` still writes the line.
    ms: Option<u64>,
}

fn parse_line(number: usize, text: &str) -> Result<Line, String> {
    let fields: Vec<&str> = text.split(' ').collect();
    let [kind, token, pid, ms] = fields[..] else {
        return Err(format!(
            "child.log line {number}: {text:?} has not 4 fields"
        ));
    };
    let kind = match kind {
        "start" => Kind::Start,
        "beat" => Kind::Beat,
        "stop" => Kind::Stop,
        other => return Err(format!("child.log line {number}: unknown kind {other:?}")),
    };
    let token = Token::parse(token).map_err(|error| format!("child.log line {number}: {error}"))?;
    let pid = pid
        .parse()
        .map_err(|error| format!("child.log line {number}: pid {pid:?}: {error}"))?;
    let ms = match ms {
        "" => None,
        digits => Some(
            digits
                .parse()
                .map_err(|error| format!("child.log line {number}: millis {digits:?}: {error}"))?,
        ),
    };
    Ok(Line {
        kind,
        token,
        pid,
        ms,
    })
}

/// One child process's life as the file shows it: from its `start` line to its
/// last line (its `stop`, or its last `beat` if SIGKILL ended it). The times
/// are the first and last stamps among its lines; a child with no stamped line
/// at all has `start_ms > end_ms` and covers no time.
#[derive(Debug, Clone, Copy)]
struct Interval {
    token: Token,
    pid: u32,
    first_line: usize,
    last_line: usize,
    start_ms: u64,
    end_ms: u64,
    stopped: bool,
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "child {} ({}) lines {}..={} ms {}..={}",
            self.pid, self.token, self.first_line, self.last_line, self.start_ms, self.end_ms
        )
    }
}

fn intervals(lines: &[Line]) -> Result<Vec<Interval>, String> {
    let mut intervals: Vec<Interval> = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        let open = intervals
            .iter_mut()
            .rev()
            .find(|interval| interval.pid == line.pid && interval.token == line.token);
        match (line.kind, open) {
            (Kind::Start, Some(earlier)) => {
                return Err(format!(
                    "child.log line {number}: a second start for {earlier}"
                ));
            }
            (Kind::Start, None) => intervals.push(Interval {
                token: line.token,
                pid: line.pid,
                first_line: number,
                last_line: number,
                start_ms: line.ms.unwrap_or(u64::MAX),
                end_ms: line.ms.unwrap_or(0),
                stopped: false,
            }),
            (_, None) => {
                return Err(format!(
                    "child.log line {number}: {:?} of child {} ({}) without a start",
                    line.kind, line.pid, line.token
                ));
            }
            (_, Some(interval)) if interval.stopped => {
                return Err(format!(
                    "child.log line {number}: a line after the stop of {interval}"
                ));
            }
            (kind, Some(interval)) => {
                interval.last_line = number;
                if let Some(ms) = line.ms {
                    interval.start_ms = interval.start_ms.min(ms);
                    interval.end_ms = interval.end_ms.max(ms);
                }
                interval.stopped = kind == Kind::Stop;
            }
        }
    }
    Ok(intervals)
}

/// Pairs of children whose lines interleave: one wrote while the other was
/// between its start and its last line. Children of one token count too (the
/// agent restarted its child while the old one still ran).
fn overlaps(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
    let mut found = Vec::new();
    for (i, a) in intervals.iter().enumerate() {
        for b in &intervals[i + 1..] {
            if b.first_line < a.last_line && a.first_line < b.last_line {
                found.push((*a, *b));
            }
        }
    }
    found
}

/// One fault as `netns.sh` ran it.
#[derive(Debug, Clone)]
struct Scenario {
    name: String,
    majority: BTreeSet<u64>,
    leader: u64,
    fault_ms: u64,
    heal_ms: u64,
    healthy_ms: u64,
}

fn parse_scenario(number: usize, text: &str) -> Result<Scenario, String> {
    let mut fields = text.split_whitespace();
    let name = fields
        .next()
        .ok_or_else(|| format!("timeline line {number} is empty"))?
        .to_owned();
    let (mut majority, mut leader, mut fault, mut heal, mut healthy) =
        (None, None, None, None, None);
    for field in fields {
        let (key, value) = field
            .split_once('=')
            .ok_or_else(|| format!("timeline line {number}: {field:?} is not key=value"))?;
        let number_of = |value: &str| {
            value
                .parse::<u64>()
                .map_err(|error| format!("timeline line {number}: {key}={value}: {error}"))
        };
        match key {
            "majority" => {
                majority = Some(
                    value
                        .split(',')
                        .map(number_of)
                        .collect::<Result<BTreeSet<u64>, String>>()?,
                );
            }
            "leader" => leader = Some(number_of(value)?),
            "fault" => fault = Some(number_of(value)?),
            "heal" => heal = Some(number_of(value)?),
            "healthy" => healthy = Some(number_of(value)?),
            other => return Err(format!("timeline line {number}: unknown key {other:?}")),
        }
    }
    let missing = |what: &str| format!("timeline line {number}: no {what}=");
    let scenario = Scenario {
        name,
        majority: majority.ok_or_else(|| missing("majority"))?,
        leader: leader.ok_or_else(|| missing("leader"))?,
        fault_ms: fault.ok_or_else(|| missing("fault"))?,
        heal_ms: heal.ok_or_else(|| missing("heal"))?,
        healthy_ms: healthy.ok_or_else(|| missing("healthy"))?,
    };
    if !(scenario.fault_ms < scenario.heal_ms && scenario.heal_ms <= scenario.healthy_ms) {
        return Err(format!("timeline line {number}: times out of order"));
    }
    Ok(scenario)
}

/// How much of `[from, to)` the intervals that `keep` selects cover, and the
/// longest stretch they leave uncovered (milliseconds).
fn coverage(
    intervals: &[Interval],
    keep: impl Fn(&Interval) -> bool,
    from: u64,
    to: u64,
) -> (u64, u64) {
    let mut spans: Vec<(u64, u64)> = intervals
        .iter()
        .filter(|interval| keep(interval))
        .map(|interval| (interval.start_ms.max(from), interval.end_ms.min(to)))
        .filter(|(start, end)| start < end)
        .collect();
    spans.sort_unstable();
    let (mut covered, mut longest_gap, mut reached) = (0, 0, from);
    for (start, end) in spans {
        if start > reached {
            longest_gap = longest_gap.max(start - reached);
        }
        if end > reached {
            covered += end - start.max(reached);
            reached = end;
        }
    }
    longest_gap = longest_gap.max(to.saturating_sub(reached));
    (covered, longest_gap)
}

/// What one fault measured.
#[derive(Debug)]
struct Measured {
    window_ms: u64,
    majority_covered_ms: u64,
    majority_longest_gap_ms: u64,
    without_child_ms: u64,
    old_child_ended_after_ms: Option<u64>,
    heal_without_child_ms: u64,
    starts: usize,
    overlaps: usize,
}

impl Measured {
    fn majority_fraction(&self) -> f64 {
        self.majority_covered_ms as f64 / self.window_ms as f64
    }
}

fn measure(
    scenario: &Scenario,
    intervals: &[Interval],
    overlapping: &[(Interval, Interval)],
) -> Measured {
    let (fault, heal, healthy) = (scenario.fault_ms, scenario.heal_ms, scenario.healthy_ms);
    let on_majority = |interval: &Interval| scenario.majority.contains(&interval.token.leader);
    let (majority_covered_ms, majority_longest_gap_ms) =
        coverage(intervals, on_majority, fault, heal);
    let (any_covered, _) = coverage(intervals, |_| true, fault, heal);
    let (heal_covered, _) = coverage(intervals, |_| true, heal, healthy);
    // The leader from before the fault, if it is cut off: when did its child stop?
    let old_child_ended_after_ms = (!scenario.majority.contains(&scenario.leader))
        .then(|| {
            intervals
                .iter()
                .filter(|interval| {
                    interval.token.leader == scenario.leader
                        && interval.start_ms <= fault
                        && interval.end_ms >= fault
                })
                .map(|interval| interval.end_ms - fault)
                .max()
        })
        .flatten();
    let overlaps = overlapping
        .iter()
        .filter(|(a, b)| {
            let start = a.start_ms.max(b.start_ms);
            let end = a.end_ms.min(b.end_ms);
            start <= healthy && end >= fault
        })
        .count();
    Measured {
        window_ms: heal - fault,
        majority_covered_ms,
        majority_longest_gap_ms,
        without_child_ms: (heal - fault) - any_covered,
        old_child_ended_after_ms,
        heal_without_child_ms: (healthy - heal) - heal_covered,
        starts: intervals
            .iter()
            .filter(|interval| (fault..heal).contains(&interval.start_ms))
            .count(),
        overlaps,
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
#[ignore = "needs the run of tests/netns.sh (root, network namespaces): sudo bash bully-agent/tests/netns.sh"]
fn agents_in_network_namespaces_never_overlap_and_the_majority_keeps_a_child() {
    let run = PathBuf::from(
        std::env::var_os("BULLY_NETNS_RUN")
            .expect("BULLY_NETNS_RUN names netns.sh's run directory; run the script"),
    );
    let lines: Vec<Line> = read(&run.join("child.log"))
        .lines()
        .enumerate()
        .map(|(index, text)| parse_line(index + 1, text))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("{error}"));
    let intervals = intervals(&lines).unwrap_or_else(|error| panic!("{error}"));
    let unstamped = lines.iter().filter(|line| line.ms.is_none()).count();
    let scenarios: Vec<Scenario> = read(&run.join("timeline.txt"))
        .lines()
        .enumerate()
        .map(|(index, text)| parse_scenario(index + 1, text))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(scenarios.len(), 4, "the script runs four faults");

    let settings = bully_agent::config::load(&run.join("node-1.toml"))
        .unwrap_or_else(|error| panic!("node-1.toml: {error}"));
    let bound = settings.config.failover_bound(settings.members.len());
    let overlapping = overlaps(&intervals);
    println!(
        "{} lines ({unstamped} without a stamp), {} children, {} distinct tokens; \
         failover bound {} ms, lease margin {} ms, {} ms to start the child",
        lines.len(),
        intervals.len(),
        intervals
            .iter()
            .map(|i| i.token)
            .collect::<BTreeSet<_>>()
            .len(),
        bound.as_millis(),
        settings.lease_margin.as_millis(),
        SPAWN_ALLOWANCE.as_millis()
    );
    println!(
        "{:<18} {:>9} {:>9} {:>9} {:>12} {:>11} {:>11} {:>13} {:>7} {:>8}",
        "fault",
        "window",
        "majority",
        "fraction",
        "longest gap",
        "no child",
        "old child",
        "after heal",
        "starts",
        "overlaps"
    );
    let mut failures = Vec::new();
    for scenario in &scenarios {
        let measured = measure(scenario, &intervals, &overlapping);
        println!(
            "{:<18} {:>6} ms {:>6} ms {:>9.3} {:>9} ms {:>8} ms {:>11} {:>10} ms {:>7} {:>8}",
            scenario.name,
            measured.window_ms,
            measured.majority_covered_ms,
            measured.majority_fraction(),
            measured.majority_longest_gap_ms,
            measured.without_child_ms,
            measured
                .old_child_ended_after_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms")),
            measured.heal_without_child_ms,
            measured.starts,
            measured.overlaps
        );
        // One failover at most, then a child on the majority side to the end.
        let allowed_gap = (bound + settings.lease_margin + SPAWN_ALLOWANCE).as_millis() as f64;
        let lower_bound = 1.0 - allowed_gap / measured.window_ms as f64;
        if measured.majority_fraction() < lower_bound {
            failures.push(format!(
                "{}: the majority side {:?} had a running child for {:.3} of the fault, below {:.3} \
                 (one failover: bound {} ms + lease margin {} ms + {} ms to start the child, \
                 of {} ms; {} children started)",
                scenario.name,
                scenario.majority,
                measured.majority_fraction(),
                lower_bound,
                bound.as_millis(),
                settings.lease_margin.as_millis(),
                SPAWN_ALLOWANCE.as_millis(),
                measured.window_ms,
                measured.starts
            ));
        }
    }

    for (a, b) in &overlapping {
        failures.push(format!("overlap: {a} and {b}"));
    }
    for pair in intervals.windows(2) {
        if pair[1].token < pair[0].token {
            failures.push(format!("token went down: {} then {}", pair[0], pair[1]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

mod analysis {
    //! The analysis on hand-written logs: it finds what it must find.
    use super::*;

    fn token(term: u64, leader: u64) -> String {
        format!("{term:020}-{leader:020}")
    }

    fn parse(text: &str) -> Vec<Interval> {
        let lines: Vec<Line> = text
            .lines()
            .enumerate()
            .map(|(index, line)| parse_line(index + 1, line).expect("valid line"))
            .collect();
        intervals(&lines).expect("valid log")
    }

    #[test]
    fn a_handover_after_the_stop_does_not_overlap() {
        let (t5, t6) = (token(2, 5), token(3, 3));
        let log = format!(
            "start {t5} 10 1000\nbeat {t5} 10 1050\nstop {t5} 10 1100\n\
             start {t6} 11 1900\nbeat {t6} 11 1950\n"
        );
        let intervals = parse(&log);
        assert_eq!(intervals.len(), 2);
        assert!(overlaps(&intervals).is_empty());
        assert_eq!(coverage(&intervals, |_| true, 1000, 2000), (150, 800));
        assert_eq!(
            coverage(&intervals, |i| i.token.leader == 3, 1000, 2000),
            (50, 900)
        );
    }

    #[test]
    fn a_new_leaders_beat_before_the_old_childs_last_line_is_an_overlap() {
        let (old, new) = (token(2, 5), token(3, 3));
        let log = format!(
            "start {old} 10 1000\nstart {new} 11 1500\nbeat {old} 10 1510\nbeat {new} 11 1550\n"
        );
        let found = overlaps(&parse(&log));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.pid, 10);
        assert_eq!(found[0].1.pid, 11);
    }

    #[test]
    fn a_child_killed_without_a_stop_line_ends_at_its_last_beat() {
        let t = token(4, 5);
        let intervals = parse(&format!("start {t} 10 1000\nbeat {t} 10 1050\n"));
        assert_eq!(intervals[0].end_ms, 1050);
        assert!(!intervals[0].stopped);
    }

    #[test]
    fn a_line_without_a_start_or_after_the_stop_is_refused() {
        let t = token(4, 5);
        let beat_first = [parse_line(1, &format!("beat {t} 10 1000")).expect("line")];
        assert!(intervals(&beat_first).is_err());
        let after_stop = [
            parse_line(1, &format!("start {t} 10 1000")).expect("line"),
            parse_line(2, &format!("stop {t} 10 1010")).expect("line"),
            parse_line(3, &format!("beat {t} 10 1020")).expect("line"),
        ];
        assert!(intervals(&after_stop).is_err());
        assert!(parse_line(1, "start 3-5 10 1000").is_err());
        assert!(parse_line(1, "begin x 10 1000").is_err());
        assert!(parse_line(1, &format!("beat {t} 10 1000 extra")).is_err());
        assert!(parse_line(1, &format!("beat {t} 10 10x0")).is_err());
    }

    #[test]
    fn a_line_whose_date_was_killed_keeps_its_place_but_not_a_time() {
        let t = token(4, 5);
        let intervals = parse(&format!(
            "start {t} 10 1000\nbeat {t} 10 1050\nbeat {t} 10 \nstop {t} 10 1110\n"
        ));
        assert_eq!(intervals[0].last_line, 4);
        assert_eq!((intervals[0].start_ms, intervals[0].end_ms), (1000, 1110));
        let unstamped = parse(&format!("start {t} 11 \n"));
        assert_eq!(coverage(&unstamped, |_| true, 0, 2000), (0, 2000));
    }

    #[test]
    fn tokens_order_by_term_then_leader() {
        let low = Token::parse(&token(3, 5)).expect("token");
        let high = Token::parse(&token(4, 1)).expect("token");
        assert!(low < high);
        assert!(
            token(3, 5) < token(4, 1),
            "the strings order as the tokens do"
        );
    }

    #[test]
    fn the_timeline_names_the_majority_and_the_times() {
        let scenario = parse_scenario(
            1,
            "partition_123_45 majority=1,2,3 leader=5 fault=100 heal=200 healthy=300",
        )
        .expect("valid");
        assert_eq!(scenario.majority, BTreeSet::from([1, 2, 3]));
        assert_eq!(scenario.leader, 5);
        assert!(parse_scenario(1, "x majority=1 leader=5 fault=300 heal=200 healthy=300").is_err());
        assert!(parse_scenario(1, "x majority=1 leader=5 fault=100 heal=200").is_err());
    }

    #[test]
    fn measure_reports_the_cut_off_leaders_child_and_the_gap() {
        let (old, new) = (token(2, 5), token(3, 3));
        let log = format!(
            "start {old} 10 900\nbeat {old} 10 1000\nstop {old} 10 1400\n\
             start {new} 11 2000\nbeat {new} 11 3000\nstop {new} 11 3100\n\
             start {} 12 3300\nbeat {} 12 3500\n",
            token(4, 5),
            token(4, 5)
        );
        let intervals = parse(&log);
        let scenario = parse_scenario(
            1,
            "p majority=1,2,3 leader=5 fault=1000 heal=3000 healthy=3500",
        )
        .expect("valid");
        let measured = measure(&scenario, &intervals, &overlaps(&intervals));
        assert_eq!(measured.window_ms, 2000);
        assert_eq!(measured.majority_covered_ms, 1000);
        assert_eq!(measured.majority_longest_gap_ms, 1000);
        assert_eq!(measured.without_child_ms, 600);
        assert_eq!(measured.old_child_ended_after_ms, Some(400));
        assert_eq!(measured.heal_without_child_ms, 200);
        assert_eq!(measured.starts, 1);
        assert_eq!(measured.overlaps, 0);
    }
}
