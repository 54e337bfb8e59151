//! What the agent does when its command exits by itself while it leads, under
//! each `child.on_exit` policy: run it again, step down, or leave with its status.

mod support;

use std::io::{BufRead, BufReader};

use bully_agent::token::parse_token;
use support::lone::LoneAgent;

/// Prints its token, then exits with status 3 at once.
const EXITS_AT_ONCE: &str = "echo \"$BULLY_FENCING_TOKEN\"; exit 3";

#[test]
fn restart_runs_the_command_again_in_the_same_leadership() {
    let lone = LoneAgent::new("", "on_exit = \"restart\"\nrestart_delay_ms = 100");
    let mut agent = lone.start(EXITS_AT_ONCE);
    let mut out = BufReader::new(agent.0.stdout.take().unwrap()).lines();
    let status = lone.wait_for("three restarts", |status| status.child.restarts >= 3);
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
