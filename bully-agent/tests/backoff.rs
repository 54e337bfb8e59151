//! A command that keeps failing makes its member step aside: three agents, and
//! the command of the highest, 3, does not exist. 3 leads at boot, its command
//! fails `failure_limit` times in a row (each run ends at once, status 127), it
//! steps down and abstains for `backoff_ms`; 2 leads and runs the job. 3's
//! status and `/metrics` show the back-off. The test then installs 3's
//! command: when the back-off ends, 3 takes the leadership back and runs the
//! job, and the child log shows one job at a time throughout.

mod support;

use std::time::Duration;

use support::child_log::format_token;
use support::cluster::{Cluster, Options, Ports, Timing, now_millis};

/// Runs in a row that fail before the member steps aside.
const FAILURE_LIMIT: u64 = 3;

/// The back-off, long enough for 2 to be elected and run the job meanwhile.
const BACKOFF_MS: u64 = 5_000;

/// How long the test waits for anything before it gives up.
const PATIENCE: Duration = Duration::from_secs(30);

/// What the take-back may take after the back-off, on top of the failover
/// bound: the agent spawns its supervisor and the child's shell, on a loaded
/// two-core machine.
const PROCESS_START_ALLOWANCE: Duration = Duration::from_millis(1_000);

/// The value of the metric `name` (without labels) in `metrics`.
fn metric(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|line| line.split(' ').next() == Some(name))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

#[test]
fn a_member_whose_command_keeps_failing_steps_aside_and_takes_back_when_it_works() {
    let timing = Timing::FAST;
    let cluster = Cluster::start(Options {
        size: 3,
        timing,
        relay: false,
        other_secret: None,
        missing_command: Some(3),
        child_settings: "failure_limit = 3\nmin_runtime_ms = 1000\nbackoff_ms = 5000\n\
                         max_backoff_ms = 20000",
        ports: Ports::Ephemeral,
    });

    // 3 leads first, fails, and steps aside: 2 runs the job.
    let first = cluster.wait_for_start_above(None, PATIENCE);
    assert_eq!(first.token.leader.0, 2, "{}", cluster.all_logs());
    let seen_at = now_millis();
    let status = cluster.status(3).expect("3 answers");
    assert!(!status.eligible, "{status:?}");
    let left_ms = status.child.backoff_ms.expect("3 backs off");
    assert!(left_ms <= BACKOFF_MS, "{status:?}");
    assert_eq!(
        status.child.starts, FAILURE_LIMIT,
        "3 tried {FAILURE_LIMIT} times before it stepped aside: {status:?}"
    );
    assert_eq!(status.child.restarts, FAILURE_LIMIT - 1);
    assert_eq!(status.child.backoffs, 1);
    assert!(!status.child.running);
    assert_ne!(status.role, "leader");
    let metrics = cluster.metrics(3);
    assert_eq!(metric(&metrics, "bully_eligible"), Some(0.0), "{metrics}");
    assert_eq!(metric(&metrics, "bully_child_backoffs_total"), Some(1.0));
    let backoff_seconds = metric(&metrics, "bully_child_backoff_seconds").expect("the gauge");
    assert!(
        backoff_seconds > 0.0 && backoff_seconds <= 5.0,
        "{backoff_seconds}"
    );
    let log_3 = cluster.node_log(3);
    let failures = log_3.matches("the command failed").count();
    assert_eq!(
        failures,
        usize::try_from(FAILURE_LIMIT).unwrap(),
        "one warning per failed run, the last one about stepping aside:\n{log_3}"
    );
    println!(
        "3 failed {} runs in a row, stepped aside for {BACKOFF_MS} ms; 2 started the job \
         under {}; {left_ms} ms of the back-off were left when the test looked",
        status.child.starts,
        format_token(first.token)
    );

    // 3's command works from now on; after its back-off it takes back.
    cluster.install_command(3);
    let back = cluster.wait_for_start_above(Some(first.token), PATIENCE);
    assert_eq!(back.token.leader.0, 3, "{}", cluster.all_logs());
    let backoff_end = seen_at + left_ms;
    assert!(
        back.millis + 50 >= backoff_end,
        "3 ran the job {} ms before its back-off ended",
        backoff_end - back.millis
    );
    let allowed = timing.failover_bound(3) + PROCESS_START_ALLOWANCE;
    let after = back.millis.saturating_sub(backoff_end);
    println!(
        "3 took back {after} ms after its back-off ended (allowed {} ms: failover bound + \
         process start)",
        allowed.as_millis()
    );
    assert!(
        u128::from(after) <= allowed.as_millis(),
        "{}",
        cluster.all_logs()
    );
    let status = cluster.status(3).expect("3 answers");
    assert!(
        status.eligible && status.child.backoff_ms.is_none(),
        "{status:?}"
    );

    // One job at a time, and 2's ran once, without a restart, until 3 took back.
    let log = cluster.child_log();
    assert_eq!(log.overlaps(), [], "{}", log.describe());
    assert_eq!(log.token_regressions(), []);
    let twos: Vec<_> = log
        .intervals()
        .into_iter()
        .filter(|i| i.token.leader.0 == 2)
        .collect();
    assert_eq!(twos.len(), 1, "{}", log.describe());
    assert!(
        twos[0].stopped,
        "2's job was told to stop: {}",
        log.describe()
    );
}
