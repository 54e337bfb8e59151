//! The analysis half of `tests/netns.sh`: five agents in network namespaces under
//! iptables faults. The script sets up the namespaces, runs the agents and the
//! faults, and leaves two files in its run directory: `child.log`, the lines the
//! test child (`support/child.sh`) appended, and `timeline.txt`, one line per
//! fault (`NAME majority=1,2,3 leader=5 fault=MS heal=MS healthy=MS`). This test
//! reads them (the log with the process tests' `support::child_log`) and asserts:
//!
//! - no child wrote while another leadership's child ran (W1: zero overlaps under
//!   a majority quorum), judged by the file's order, which is the order of the
//!   writes; so a store guarded by `FencingGuard` refuses none of the writes;
//! - no child started with a token below one started before it (a child
//!   restarted inside one leadership keeps its token);
//! - during each fault, a child led from the majority side runs for at least
//!   `1 - (failover bound + lease margin + SPAWN_ALLOWANCE) / fault window` of the
//!   window: one failover at most. The failover bound is what
//!   `bully_core::Config::failover_bound` computes for the protocol configuration
//!   the agents load (`node-1.toml`, read here with `bully_agent::config::load`);
//!   a new leader then waits up to its lease margin for the previous leader's
//!   child to stop, and starts its own.
//!
//! It prints, per fault, the numbers the closing note quotes. It is
//! ignored because it needs the script's run: `sudo bash
//! bully-agent/tests/netns.sh` runs it with `BULLY_NETNS_RUN` set.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::child_log::{ChildLog, Interval, Overlap, coverage, format_token};

/// What the agent adds before a child writes its `start` line: fork and exec of
/// the supervisor and of the shell, on a loaded two-core CI machine.
const SPAWN_ALLOWANCE: Duration = Duration::from_millis(500);

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

/// What one fault measured (milliseconds of wall time, from the children's
/// stamps).
#[derive(Debug)]
struct Measured {
    /// From the fault to the heal.
    window_ms: u64,
    /// How much of the window a child led from the majority side ran.
    majority_covered_ms: u64,
    /// The longest stretch of the window without a majority-side child.
    majority_longest_gap_ms: u64,
    /// How much of the window no child ran at all, on any side.
    without_child_ms: u64,
    /// When the cut-off leader's child wrote its last line, after the fault.
    old_child_ended_after_ms: Option<u64>,
    /// How much of the time from the heal to a healthy cluster no child ran.
    heal_without_child_ms: u64,
    /// Children started during the window.
    starts: usize,
    /// Overlapping lines (`support::child_log`'s overlaps) written from the fault
    /// to a healthy cluster.
    overlaps: usize,
}

impl Measured {
    fn majority_fraction(&self) -> f64 {
        self.majority_covered_ms as f64 / self.window_ms as f64
    }
}

fn measure(scenario: &Scenario, intervals: &[Interval], overlaps: &[Overlap]) -> Measured {
    let (fault, heal, healthy) = (scenario.fault_ms, scenario.heal_ms, scenario.healthy_ms);
    let on_majority = |interval: &Interval| scenario.majority.contains(&interval.token.leader.0);
    let (majority_covered_ms, majority_longest_gap_ms) =
        coverage(intervals, on_majority, fault, heal);
    let (any_covered, _) = coverage(intervals, |_| true, fault, heal);
    let (heal_covered, _) = coverage(intervals, |_| true, heal, healthy);
    let old_child_ended_after_ms = (!scenario.majority.contains(&scenario.leader))
        .then(|| {
            intervals
                .iter()
                .filter(|interval| {
                    interval.token.leader.0 == scenario.leader
                        && interval.start_millis <= fault
                        && interval.end_millis >= fault
                })
                .map(|interval| interval.end_millis - fault)
                .max()
        })
        .flatten();
    Measured {
        window_ms: heal - fault,
        majority_covered_ms,
        majority_longest_gap_ms,
        without_child_ms: (heal - fault) - any_covered,
        old_child_ended_after_ms,
        heal_without_child_ms: (healthy - heal) - heal_covered,
        starts: intervals
            .iter()
            .filter(|interval| (fault..heal).contains(&interval.start_millis))
            .count(),
        overlaps: overlaps
            .iter()
            .filter(|overlap| (fault..=healthy).contains(&overlap.line.millis))
            .count(),
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
    let log = ChildLog::read(&run.join("child.log")).unwrap_or_else(|error| panic!("{error}"));
    let intervals = log.intervals();
    let overlaps = log.overlaps();
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
    let allowed_gap = bound + settings.config.lease_margin() + SPAWN_ALLOWANCE;
    println!(
        "{} lines, {} children, {} tokens; one failover: bound {} ms + lease margin {} ms \
         + {} ms to start the child = {} ms",
        log.lines().len(),
        intervals.len(),
        log.tokens().len(),
        bound.as_millis(),
        settings.config.lease_margin().as_millis(),
        SPAWN_ALLOWANCE.as_millis(),
        allowed_gap.as_millis()
    );
    println!(
        "{:<18} {:>9} {:>9} {:>9} {:>6} {:>12} {:>11} {:>11} {:>13} {:>7} {:>8}",
        "fault",
        "window",
        "majority",
        "fraction",
        "bound",
        "longest gap",
        "no child",
        "old child",
        "after heal",
        "starts",
        "overlaps"
    );
    let mut failures = Vec::new();
    for scenario in &scenarios {
        let measured = measure(scenario, &intervals, &overlaps);
        let lower_bound = 1.0 - allowed_gap.as_millis() as f64 / measured.window_ms as f64;
        println!(
            "{:<18} {:>6} ms {:>6} ms {:>9.3} {:>6.3} {:>9} ms {:>8} ms {:>11} {:>10} ms {:>7} {:>8}",
            scenario.name,
            measured.window_ms,
            measured.majority_covered_ms,
            measured.majority_fraction(),
            lower_bound,
            measured.majority_longest_gap_ms,
            measured.without_child_ms,
            measured
                .old_child_ended_after_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms")),
            measured.heal_without_child_ms,
            measured.starts,
            measured.overlaps
        );
        if measured.majority_fraction() < lower_bound {
            failures.push(format!(
                "{}: the majority side {:?} had a running child for {:.3} of the fault, below \
                 {lower_bound:.3} (one failover, {} ms, of {} ms); {} children started in it",
                scenario.name,
                scenario.majority,
                measured.majority_fraction(),
                allowed_gap.as_millis(),
                measured.window_ms,
                measured.starts
            ));
        }
    }

    for overlap in &overlaps {
        failures.push(format!(
            "overlap: line {} ({}) of the child of {} written during {} pid {}'s lines {}..={}",
            overlap.line.index + 1,
            overlap.line.millis,
            format_token(overlap.line.token),
            format_token(overlap.during.token),
            overlap.during.pid,
            overlap.during.first + 1,
            overlap.during.last + 1
        ));
    }
    for line in log.token_regressions() {
        failures.push(format!(
            "line {}: a child started with {}, below a token started before it",
            line.index + 1,
            format_token(line.token)
        ));
    }
    for line in log.fenced_writes() {
        failures.push(format!(
            "line {}: a FencingGuard refuses the write of {}",
            line.index + 1,
            format_token(line.token)
        ));
    }
    for line in log.orphan_lines() {
        failures.push(format!("line {}: no start before it", line.index + 1));
    }
    assert!(
        failures.is_empty(),
        "{}\nthe children:\n{}",
        failures.join("\n"),
        log.describe()
    );
}

mod measuring {
    //! The measures on hand-written logs: they find what they must find.
    use super::*;

    fn token(term: u64, leader: u64) -> String {
        format!("{term:020}-{leader:020}")
    }

    fn parse(text: &str) -> ChildLog {
        ChildLog::parse(text).expect("a valid log")
    }

    #[test]
    fn a_handover_leaves_a_gap_and_the_majority_side_covers_only_its_own_children() {
        let (old, new) = (token(2, 5), token(3, 3));
        let log = parse(&format!(
            "start {old} 10 1000\nbeat {old} 10 1050\nstop {old} 10 1100\n\
             start {new} 11 1900\nbeat {new} 11 1950\n"
        ));
        let intervals = log.intervals();
        assert!(log.overlaps().is_empty());
        assert_eq!(coverage(&intervals, |_| true, 1000, 2000), (150, 800));
        assert_eq!(
            coverage(&intervals, |i| i.token.leader.0 == 3, 1000, 2000),
            (50, 900)
        );
    }

    #[test]
    fn overlapping_children_are_counted_once() {
        let (a, b) = (token(2, 5), token(3, 3));
        let log = parse(&format!(
            "start {a} 10 1000\nstart {b} 11 1100\nbeat {a} 10 1200\nbeat {b} 11 1300\n"
        ));
        assert_eq!(coverage(&log.intervals(), |_| true, 1000, 1400), (300, 100));
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
        assert!(
            parse_scenario(
                1,
                "x majority=1 leader=5 fault=100 heal=200 healthy=300 y=1"
            )
            .is_err()
        );
        assert!(
            parse_scenario(1, "x majority=1,a leader=5 fault=100 heal=200 healthy=300").is_err()
        );
    }

    #[test]
    fn a_cut_off_leader_its_successor_and_the_return_of_the_highest() {
        let (old, new, back) = (token(2, 5), token(3, 3), token(4, 5));
        let log = parse(&format!(
            "start {old} 10 900\nbeat {old} 10 1000\nstop {old} 10 1400\n\
             start {new} 11 2000\nbeat {new} 11 3000\nstop {new} 11 3100\n\
             start {back} 12 3300\nbeat {back} 12 3500\n"
        ));
        let scenario = parse_scenario(
            1,
            "p majority=1,2,3 leader=5 fault=1000 heal=3000 healthy=3500",
        )
        .expect("valid");
        let measured = measure(&scenario, &log.intervals(), &log.overlaps());
        assert_eq!(measured.window_ms, 2000);
        assert_eq!(measured.majority_covered_ms, 1000);
        assert_eq!(measured.majority_longest_gap_ms, 1000);
        assert_eq!(measured.without_child_ms, 600);
        assert_eq!(measured.old_child_ended_after_ms, Some(400));
        assert_eq!(measured.heal_without_child_ms, 200);
        assert_eq!(measured.starts, 1);
        assert_eq!(measured.overlaps, 0);
    }

    #[test]
    fn overlapping_lines_inside_the_fault_are_counted_for_it() {
        // The new child's start falls inside the old child's lines, and the old
        // child's beat inside the new one's: two overlapping lines, one of them
        // after 1520.
        let (old, new) = (token(2, 5), token(3, 3));
        let log = parse(&format!(
            "start {old} 10 900\nstart {new} 11 1500\nbeat {old} 10 1510\nbeat {new} 11 1600\n"
        ));
        let count = |timeline: &str| {
            let scenario = parse_scenario(1, timeline).expect("valid");
            measure(&scenario, &log.intervals(), &log.overlaps()).overlaps
        };
        assert_eq!(
            count("p majority=1 leader=5 fault=1000 heal=3000 healthy=3500"),
            2
        );
        assert_eq!(
            count("p majority=1 leader=5 fault=1505 heal=3000 healthy=3500"),
            1
        );
    }
}
