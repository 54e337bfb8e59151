//! A cluster's first boot, one agent after another from the lowest, as the
//! README's walk-through starts them in three terminals: each member was
//! declared new with `bully-agent init` (`Cluster::configure` runs it), has
//! promised nobody, so it votes as it starts. Nodes 1 and 2 are a majority of
//! three: 2 leads and runs the job with the token of term 1 before 3 has
//! started. Node 3 then starts and takes the leadership back, and its job
//! starts only once 2's has stopped.
//!
//! A restarted agent (its data directory holds a term) is the other case:
//! it votes for nobody for a leader timeout, in case a promise it made
//! before the restart still binds it (`tests/take_back.rs`); and so is an
//! agent that finds no state file at all, which may have lost it
//! (`tests/lost_state.rs`).

mod support;

use std::time::Duration;

use support::cluster::{Cluster, Options, Ports, Timing};

const PATIENCE: Duration = Duration::from_secs(30);

/// How long the job keeps working after SIGTERM: most of the grace period, so
/// an overlap would show.
const STOP_MS: u64 = 150;

#[test]
fn nodes_1_and_2_elect_2_then_3_takes_the_job_back_without_two_jobs_at_once() {
    let timing = Timing::FAST;
    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing,
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
    cluster.spawn(1);
    cluster.spawn(2);
    let first = cluster.wait_for_start_above(None, PATIENCE);
    assert_eq!(
        (first.token.leader.0, first.token.term.0),
        (2, 1),
        "1 and 2, a majority of three, elect 2 in term 1\n{}",
        cluster.all_logs()
    );
    assert_eq!(cluster.wait_for_agreement(PATIENCE), 2);

    cluster.spawn(3);
    let second = cluster.wait_for_start_above(Some(first.token), PATIENCE);
    assert_eq!(
        second.token.leader.0,
        3,
        "3, the highest, takes the job\n{}",
        cluster.all_logs()
    );
    assert_eq!(cluster.wait_for_agreement(PATIENCE), 3);
    // Let 2's stop line land, then read the whole log.
    std::thread::sleep(Duration::from_millis(STOP_MS + timing.grace_ms));
    let log = cluster.child_log();
    let overlaps = log.overlaps();
    assert!(
        overlaps.is_empty(),
        "two jobs at once: {overlaps:#?}\n{}",
        cluster.all_logs()
    );
    assert_eq!(log.token_regressions(), []);
    let stopped = log
        .intervals()
        .into_iter()
        .find(|interval| interval.token == first.token && interval.stopped)
        .expect("2's job stopped")
        .end_millis;
    assert!(
        second.millis >= stopped,
        "3's job started at {} ms, before 2's stopped at {stopped} ms",
        second.millis
    );
    println!(
        "first boot: 3's job started {} ms after 2's stopped, {} ms after 2's started",
        second.millis - stopped,
        second.millis - first.millis
    );
}
