//! The returning highest member takes the leadership back without its job
//! overlapping the job it replaces, in clusters of three and four, with a job
//! that takes 0.8 s of its 1 s grace period to stop.
//!
//! Found by trying the README's three-node walk-through (now in bully-agent's README): stop node 3 (Ctrl-C),
//! node 2 takes the job, start node 3 again. Node 2, the sitting leader, voted
//! for 3's claim as it yielded, and with three members 3's own vote and 2's are
//! a majority: node 3 started its job about 10 ms after node 2's job was told
//! to stop, and both ran for up to 0.74 s (5 of 5 tries). Now a leader whose
//! leadership ends votes for nobody until its job has stopped (the agent says
//! so when the job exits) or the resign delay (the grace period and a quarter
//! of a second) has passed.

mod support;

use std::time::Duration;

use support::cluster::{Cluster, Options, Ports, Timing};

/// A 1 s grace period, as the agent's default.
const TIMING: Timing = Timing::GRACE_OF_A_SECOND;

/// How long the job keeps working after SIGTERM.
const STOP_MS: u64 = 800;

const PATIENCE: Duration = Duration::from_secs(30);

fn take_back(size: u64) {
    let cluster = &mut Cluster::start(Options {
        size,
        timing: TIMING,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    std::fs::write(
        format!("{}.stop_ms", cluster.child_log_path().display()),
        STOP_MS.to_string(),
    )
    .expect("write the job's stop time");
    let first = cluster.wait_for_start_above(None, PATIENCE);
    assert_eq!(
        first.token.leader.0,
        size,
        "the highest runs the job first\n{}",
        cluster.all_logs()
    );
    // The highest leaves (SIGTERM, as Ctrl-C): its job stops, then it resigns.
    let status = cluster.terminate(size, PATIENCE);
    assert!(status.success(), "the highest left cleanly: {status}");
    let second = cluster.wait_for_start_above(Some(first.token), PATIENCE);
    assert_eq!(
        second.token.leader.0,
        size - 1,
        "the next one takes the job"
    );
    // It comes back, and takes the leadership back.
    cluster.spawn(size);
    let third = cluster.wait_for_start_above(Some(second.token), PATIENCE);
    assert_eq!(third.token.leader.0, size, "the highest takes the job back");
    // Let the old job's stop line land, then read the whole log.
    std::thread::sleep(Duration::from_millis(STOP_MS + TIMING.grace_ms));
    let log = cluster.child_log();
    let overlaps = log.overlaps();
    assert!(
        overlaps.is_empty(),
        "{size} members: two jobs at once: {overlaps:#?}\n{}",
        cluster.all_logs()
    );
    assert_eq!(log.token_regressions(), [], "{size} members");
    let stopped = log
        .intervals()
        .into_iter()
        .find(|interval| interval.token == second.token && interval.stopped)
        .expect("the second job stopped")
        .end_millis;
    println!(
        "{size} members: the highest's job started {} ms after the job it replaced stopped ({} ms after that job was started)",
        third.millis.saturating_sub(stopped),
        third.millis.saturating_sub(second.millis),
    );
}

#[test]
fn three_members_take_back_without_two_jobs_at_once() {
    take_back(3);
}

#[test]
fn four_members_take_back_without_two_jobs_at_once() {
    take_back(4);
}
