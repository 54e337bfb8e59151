//! Health-coupled leadership with real agents (`[health]`): the job's process
//! is alive but the service it runs is not. Process 3 leads; its check starts
//! failing; after `failures` checks in a row it stops the job and steps aside,
//! and 2 runs the job within the failover bound, never while 3's still runs.
//! A check that fails half the time on 3 hands the job over at most once per
//! back-off (3 takes it back after each, under `preemption = "always"`).

mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use support::cluster::{Cluster, Options, Timing};

const TIMING: Timing = Timing::FAST;
const PATIENCE: Duration = Duration::from_secs(30);

/// Three agents whose `[health]` check runs `script` (with `sh -c`, the
/// cluster's directory as `$0`).
fn three(script: &str, failures: u32, backoff_ms: u64) -> Cluster {
    let mut cluster = Cluster::configure(Options::plain(3, TIMING));
    let dir = cluster.dir().display().to_string();
    for id in cluster.ids() {
        // After the [[members]] array: a table of its own.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(cluster.config_path(id))
            .expect("open the configuration");
        write!(
            file,
            "\n[health]\ncommand = [\"sh\", \"-c\", {script:?}, {dir:?}]\ninterval_ms = 100\n\
             timeout_ms = 100\nfailures = {failures}\nbackoff_ms = {backoff_ms}\n"
        )
        .expect("append [health]");
    }
    for id in [3, 2, 1] {
        cluster.spawn(id);
    }
    cluster
}

#[test]
fn process_3_whose_check_fails_steps_aside_and_2_runs_the_job() {
    let cluster = &mut three("test ! -e \"$0/unhealthy-$BULLY_NODE\"", 2, 60_000);
    let first = cluster.wait_for_start_above(None, PATIENCE);
    assert_eq!(first.token.leader.0, 3, "{}", cluster.all_logs());
    // Healthy: the checks pass, and 3 keeps the job.
    std::thread::sleep(Duration::from_millis(600));
    let healthy = cluster
        .status(3)
        .and_then(|status| status.health)
        .expect("3's checks");
    assert!(healthy.checks >= 2 && healthy.failed == 0, "{healthy:?}");
    assert_eq!(
        cluster.child_log().intervals().len(),
        1,
        "{}",
        cluster.all_logs()
    );

    std::fs::write(cluster.dir().join("unhealthy-3"), "").unwrap();
    let second = cluster.wait_for_start_above(Some(first.token), PATIENCE);
    assert_eq!(second.token.leader.0, 2, "{}", cluster.all_logs());
    std::thread::sleep(Duration::from_millis(TIMING.grace_ms + 300));
    let gap = cluster.hand_over_gap(&first, &second);
    let bound = TIMING.failover_bound(3).as_millis() as u64;
    assert!(
        gap <= bound,
        "2's job started {gap} ms after 3's stopped, bound {bound} ms\n{}",
        cluster.all_logs()
    );
    let status = cluster.status(3).expect("3's endpoint");
    let health = status.health.expect("3's checks");
    assert_eq!(health.stepped_aside, 1, "{health:?}");
    assert!(
        health.failures_in_a_row >= 2 && health.last_error.is_some(),
        "{health:?}"
    );
    assert!(!status.eligible, "3 is in its back-off");
    assert!(
        cluster
            .metrics(3)
            .contains("bully_health_step_asides_total 1"),
        "{}",
        cluster.metrics(3)
    );
    println!("health: 2's job started {gap} ms after 3's stopped (failover bound {bound} ms)");
}

#[test]
fn a_check_failing_half_the_time_hands_the_job_over_at_most_once_per_back_off() {
    const BACKOFF_MS: u64 = 1_500;
    // Only 3's check flips a coin.
    let flaky = "[ \"$BULLY_NODE\" != 3 ] || [ $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) -eq 0 ]";
    let cluster = &mut three(flaky, 2, BACKOFF_MS);
    let first = cluster.wait_for_start_above(None, PATIENCE);
    assert_eq!(first.token.leader.0, 3, "{}", cluster.all_logs());
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(BACKOFF_MS * 5));
    let elapsed = started.elapsed().as_millis() as u64;
    let status = cluster.status(3).expect("3's endpoint");
    let health = status.health.expect("3's checks");
    let most = elapsed / BACKOFF_MS + 1;
    assert!(
        (1..=most).contains(&health.stepped_aside),
        "3 stepped aside {} times in {elapsed} ms, back-off {BACKOFF_MS} ms\n{}",
        health.stepped_aside,
        cluster.all_logs()
    );
    std::thread::sleep(Duration::from_millis(TIMING.grace_ms + 300));
    let log = cluster.child_log();
    assert_eq!(
        log.overlaps(),
        [],
        "two jobs at once\n{}",
        cluster.all_logs()
    );
    assert_eq!(log.token_regressions(), [], "{}", cluster.all_logs());
    println!(
        "flaky check: 3 stepped aside {} times in {elapsed} ms ({} checks, {} failed)",
        health.stepped_aside, health.checks, health.failed
    );
}
