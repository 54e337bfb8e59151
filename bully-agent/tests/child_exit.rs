//! What the agent does when its command exits by itself while it leads, under
//! each `child.on_exit` policy: run it again, step down, or leave with its status.

mod support;

use std::io::{BufRead, BufReader};
use std::time::Duration;

use bully_agent::token::parse_token;
use support::lone::LoneAgent;

/// Prints its token, then exits with status 3 at once.
const EXITS_AT_ONCE: &str = "echo \"$BULLY_FENCING_TOKEN\"; exit 3";

#[test]
fn restart_runs_the_command_again_in_the_same_leadership() {
    let lone = LoneAgent::new(
        "",
        "on_exit = \"restart\"\nrestart_delay_ms = 100\nfailure_limit = 0",
    );
    let mut agent = lone.start(EXITS_AT_ONCE);
    let mut out = BufReader::new(agent.0.stdout.take().unwrap()).lines();
    let status = lone.wait_for("three restarts", |status| {
        // A restart counts with its run's start: never more restarts than
        // runs after the first, however the status is sampled.
        assert!(
            status.child.starts > status.child.restarts,
            "{:?}",
            status.child
        );
        status.child.restarts >= 3
    });
    assert!(status.child.starts >= 4, "{:?}", status.child);
    // Every run had the same token: one leadership throughout.
    let tokens: Vec<String> = (0..4).map(|_| out.next().unwrap().unwrap()).collect();
    assert!(
        tokens.windows(2).all(|pair| pair[0] == pair[1]),
        "{tokens:?}"
    );
    assert_eq!(tokens[0], status.fencing_token.unwrap());
    let metrics = lone.get("/metrics");
    assert!(metrics.contains("bully_child_restarts_total"), "{metrics}");
}

#[test]
fn step_down_resigns_and_the_next_leadership_has_a_higher_token() {
    // Alone, the node is elected again after resigning: in a new term.
    let lone = LoneAgent::new("", "on_exit = \"step-down\"");
    let mut agent = lone.start(EXITS_AT_ONCE);
    let mut out = BufReader::new(agent.0.stdout.take().unwrap()).lines();
    let first = parse_token(&out.next().unwrap().unwrap()).unwrap();
    let second = parse_token(&out.next().unwrap().unwrap()).unwrap();
    assert!(second > first, "{second:?} after {first:?}");
    assert!(second.term > first.term, "a step-down ends the term");
    let status = lone.wait_for("no restart counted", |status| status.child.starts >= 2);
    assert_eq!(status.child.restarts, 0, "a step-down is not a restart");
}

#[test]
fn exit_leaves_with_the_commands_status_after_resigning() {
    let lone = LoneAgent::new("", "on_exit = \"exit\"");
    let mut agent = lone.start(EXITS_AT_ONCE);
    let status = agent.0.wait().unwrap();
    assert_eq!(status.code(), Some(3));
}

#[test]
fn a_command_that_exits_at_once_is_restarted_no_faster_than_the_floor_then_steps_aside() {
    // `true` as a job, at the floor of the restart delay: five quick runs, then
    // the member steps aside (alone, nobody else leads meanwhile) for a minute.
    let lone = LoneAgent::new(
        "",
        "on_exit = \"restart\"\nrestart_delay_ms = 100\nfailure_limit = 5\n\
         backoff_ms = 60000\nmax_backoff_ms = 60000",
    );
    let _agent = lone.start_with("date +%s%N >> starts", &[]);
    let status = lone.wait_for("the back-off", |status| !status.eligible);
    assert_eq!(
        (status.child.starts, status.child.restarts),
        (5, 4),
        "{status:?}"
    );
    assert_eq!(status.child.backoffs, 1);
    assert!(status.child.backoff_ms.is_some_and(|ms| ms <= 60_000));
    let starts: Vec<u128> = std::fs::read_to_string(lone.dir.path().join("starts"))
        .unwrap()
        .lines()
        .map(|line| line.parse().unwrap())
        .collect();
    assert_eq!(starts.len(), 5, "{starts:?}");
    let gaps_ms: Vec<u128> = starts
        .windows(2)
        .map(|pair| (pair[1] - pair[0]) / 1_000_000)
        .collect();
    assert!(
        gaps_ms.iter().all(|&gap| gap >= 100),
        "restarted sooner than the 100 ms floor: {gaps_ms:?}"
    );
    // A few lines per run, and none while it backs off.
    let lines = lone.log().lines().count();
    std::thread::sleep(Duration::from_secs(1));
    let later = lone.log().lines().count();
    println!(
        "5 runs of a command that exits at once: gaps {gaps_ms:?} ms, {lines} log lines, \
         {} more in the next second of the back-off",
        later - lines
    );
    assert_eq!(later, lines, "{}", lone.log());
    assert!(lines <= 10 + 4 * 5, "{}", lone.log());
}
