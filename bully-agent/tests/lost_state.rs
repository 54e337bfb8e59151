//! A member that lost its data directory (a replaced disk, a pod rescheduled
//! without its volume) may have promised the sitting leader, in heartbeat
//! acknowledgements it forgot, not to vote against it; that leader's lease
//! counts on the promise. So an agent that finds no state file starts as a
//! restart: it votes for nobody, itself included, for a follower lease after
//! it starts, and says so in its log. Only `bully-agent init` declares a
//! member new, and `init` refuses a data directory that holds a state file.
//!
//! The scenario where voting at once would elect a second leader: three
//! members, 3 leads; 1 is cut off from 3 long enough for its promise to run
//! out, so 3's lease rests on 2's acknowledgements alone. Then 2's machine
//! dies, its disk is lost, and it comes back with an empty data directory
//! while 3 is cut off from it too. 3's lease, renewed by 2 just before, still
//! runs and so does its job; 1 and 2 are a majority that could elect 2 at
//! once. Started as a restart, 2 waits a follower lease first, and 3's job has
//! stopped by then. Declared new by `init` (what the documentation says never
//! to do after a loss), 2 leads at once and both jobs run together: the
//! second test shows the counterexample the wait prevents.

mod support;

use std::time::{Duration, Instant};

use support::cluster::{Cluster, Options, Ports, Timing, now_millis, without_escapes};

/// A grace period of a second and a leader timeout of 2.5 s: 3's job is told
/// to stop about 1.2 s after its lease's last renewal, and its lease ends
/// about 2.5 s after it, so a second leader elected at once overlaps it by a
/// second or more.
const TIMING: Timing = Timing::GRACE_OF_A_SECOND;

/// How long 3's job keeps working after SIGTERM: most of its grace period.
const STOP_MS: u64 = 800;

const PATIENCE: Duration = Duration::from_secs(30);

/// What the agent logs at start when it finds no state file.
const NO_STATE: &str = "no state file was found";

/// The cluster of the scenario, settled on 3, with 1 cut off from 3 for
/// longer than a follower lease: 3's lease now rests on 2's acknowledgements.
fn three_led_by_3_with_1_cut_from_3() -> Cluster {
    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing: TIMING,
        relay: true,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        // Member 2 starts again on its port while other tests run.
        ports: Ports::Reserved,
    });
    cluster.set_job_stop_ms(3, STOP_MS);
    for id in [3, 2, 1] {
        cluster.spawn(id);
    }
    let leader = cluster.wait_for_agreement(PATIENCE);
    assert_eq!(leader, 3, "{}", cluster.all_logs());
    cluster.relay().cut(1, 3);
    cluster.relay().cut(3, 1);
    // 1's last promise to 3 runs out; 2 keeps renewing 3's lease.
    std::thread::sleep(follower_lease() * 2);
    assert_eq!(
        cluster.agreed_leader(&[2, 3]),
        Some(3),
        "3 still leads with 2's acknowledgements\n{}",
        cluster.all_logs()
    );
    cluster
}

fn follower_lease() -> Duration {
    TIMING.core_config().follower_lease()
}

/// 2's machine dies and its disk is lost while 3 is cut off from it as well;
/// `declare_new` runs `bully-agent init` before 2 starts again. Returns when 2
/// was started (ms, the child log's clock) and the start line of its job.
fn lose_2_while_3_is_cut_off(
    cluster: &mut Cluster,
    declare_new: bool,
) -> (u64, support::child_log::Line) {
    let before = cluster.child_log().newest_token().expect("3's job has run");
    cluster.crash(2);
    cluster.relay().cut(2, 3);
    cluster.relay().cut(3, 2);
    cluster.lose_data_dir(2);
    if declare_new {
        cluster.init(2);
    }
    let started = now_millis();
    cluster.spawn(2);
    let next = cluster.wait_for_start_above(Some(before), PATIENCE);
    assert_eq!(
        next.token.leader.0,
        2,
        "1 and 2, the majority, elect 2\n{}",
        cluster.all_logs()
    );
    (started, next)
}

#[test]
fn a_member_that_lost_its_data_directory_waits_a_follower_lease_before_it_votes() {
    let mut cluster = three_led_by_3_with_1_cut_from_3();
    let (started, next) = lose_2_while_3_is_cut_off(&mut cluster, false);
    let waited = next.millis - started;
    let lease = follower_lease().as_millis();
    assert!(
        u128::from(waited) >= lease,
        "2's job started {waited} ms after 2 did, within a follower lease ({lease} ms)\n{}",
        cluster.all_logs()
    );
    // Let 3's job finish its stop, then read the whole log.
    std::thread::sleep(Duration::from_millis(STOP_MS + TIMING.grace_ms));
    let log = cluster.child_log();
    assert_eq!(
        log.overlaps(),
        [],
        "two jobs at once\n{}",
        cluster.all_logs()
    );
    assert_eq!(log.token_regressions(), []);
    let stopped = log
        .intervals()
        .into_iter()
        .filter(|interval| interval.token.leader.0 == 3)
        .map(|interval| interval.end_millis)
        .max()
        .expect("3's job ran");
    assert!(
        next.millis >= stopped,
        "2's job started at {} ms, before 3's stopped at {stopped} ms",
        next.millis
    );
    // The agent says once, at start, why it waits and how a new member is
    // declared; with `init` it would not (the next test).
    let log_2 = without_escapes(&cluster.node_log(2));
    let said: Vec<&str> = log_2.lines().filter(|l| l.contains(NO_STATE)).collect();
    assert_eq!(said.len(), 1, "2's log:\n{log_2}");
    assert!(
        said[0].contains("WARN")
            && said[0].contains("follower lease")
            && said[0].contains("bully-agent init"),
        "{}",
        said[0]
    );
    println!(
        "lost data directory: 2's job started {waited} ms after 2 (follower lease {lease} ms), \
         {} ms after 3's job stopped",
        next.millis - stopped
    );
}

/// How many times the counterexample is staged before the test gives up. It
/// needs 2 elected before 3's job stops, about two seconds after 2's crash;
/// on some schedules 1 is still hearing of 3 through 2's earlier reports when
/// 2 comes back, and 2's election waits on 1's leader timeout instead, past
/// the stop. The scenario is then staged again from the start: what the test
/// shows is that the overlap is reachable once a member is declared new.
const ATTEMPTS: usize = 4;

#[test]
fn a_member_declared_new_after_losing_its_state_votes_at_once_and_two_jobs_overlap() {
    let lease = follower_lease().as_millis();
    let mut tried = Vec::new();
    for _ in 0..ATTEMPTS {
        let mut cluster = three_led_by_3_with_1_cut_from_3();
        let (started, next) = lose_2_while_3_is_cut_off(&mut cluster, true);
        let waited = next.millis - started;
        std::thread::sleep(Duration::from_millis(STOP_MS + TIMING.grace_ms));
        let log = cluster.child_log();
        assert!(
            !without_escapes(&cluster.node_log(2)).contains(NO_STATE),
            "a member declared new does not log a missing state"
        );
        let overlaps = log.overlaps();
        if u128::from(waited) < lease && !overlaps.is_empty() {
            println!(
                "declared new after the loss: 2's job started {waited} ms after 2, while 3's \
                 still ran ({} line(s) written by one job while the other ran; attempt {})",
                overlaps.len(),
                tried.len() + 1
            );
            return;
        }
        tried.push(format!(
            "2 led {waited} ms after it started (follower lease {lease} ms), {} overlapping \
             line(s)\n{}",
            overlaps.len(),
            cluster.all_logs()
        ));
    }
    panic!(
        "2, declared new, never led within a follower lease while 3's job still ran, in \
         {ATTEMPTS} attempts: the scenario no longer shows what the wait prevents\n{}",
        tried.join("\n")
    );
}

#[test]
fn a_new_cluster_started_without_init_elects_after_a_follower_lease() {
    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing: TIMING,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    // Nobody ran `init`: as if the operator just started the members.
    for id in cluster.ids() {
        cluster.lose_data_dir(id);
    }
    let started = now_millis();
    let clock = Instant::now();
    for id in [3, 2, 1] {
        cluster.spawn(id);
    }
    let first = cluster.wait_for_start_above(None, PATIENCE);
    let waited = first.millis - started;
    let lease = follower_lease().as_millis();
    assert!(
        u128::from(waited) >= lease,
        "the first job started {waited} ms after the members, within a follower lease \
         ({lease} ms)\n{}",
        cluster.all_logs()
    );
    assert_eq!(first.token.leader.0, 3, "{}", cluster.all_logs());
    for id in cluster.ids() {
        let log = without_escapes(&cluster.node_log(id));
        assert_eq!(
            log.lines().filter(|l| l.contains(NO_STATE)).count(),
            1,
            "member {id}'s log:\n{log}"
        );
    }
    println!(
        "a new cluster started without init: the first job after {waited} ms (follower lease \
         {lease} ms; {} ms of wall time)",
        clock.elapsed().as_millis()
    );
}

#[test]
fn init_refuses_a_data_directory_that_holds_a_state_file_with_one_error_line() {
    let mut cluster = Cluster::configure(Options {
        size: 1,
        timing: Timing::FAST,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    let state = cluster.data_dir(1).join("state.json");
    let refused = |cluster: &Cluster, what: &str| {
        let before = std::fs::read(&state).expect("a state file");
        let output = cluster.run_init(1);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
        assert!(output.stdout.is_empty(), "{what}: prints nothing on stdout");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{what}: one line: {stderr}");
        assert!(lines[0].starts_with("error: "), "{what}: {stderr}");
        assert_eq!(
            std::fs::read(&state).expect("the state file"),
            before,
            "{what}: the state file is untouched"
        );
        lines[0].to_owned()
    };

    // Declared once by `configure`: a second declaration is refused.
    let again = refused(&cluster, "init twice");
    assert!(
        again.contains("state.json") && again.contains("bully-agent run"),
        "{again}"
    );
    // While the agent runs, its lock keeps `init` out.
    cluster.spawn(1);
    let leader = cluster.wait_for_agreement(PATIENCE);
    assert_eq!(leader, 1);
    let running = refused(&cluster, "init while the agent runs");
    assert!(running.contains("another bully-agent"), "{running}");
    // Once the member has run (a term, a vote), its state is never replaced.
    assert!(cluster.terminate(1, PATIENCE).success());
    let ran = std::fs::read_to_string(&state).unwrap();
    assert!(
        !ran.contains("first_boot"),
        "its first vote ended it: {ran}"
    );
    let after = refused(&cluster, "init after a run");
    assert!(after.contains("a state file exists"), "{after}");
}
