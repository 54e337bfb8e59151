//! Two machines and a witness: members 1 and 2 run the job, member 3 is a
//! witness (`witness = true`) that votes and never runs it. With a majority
//! quorum (two of three voters), the witness's vote lets the surviving machine
//! lead when the leading one is killed; with the witness down too, the
//! survivor alone is no majority and does not lead, until the witness returns.
//!
//! Each run also reads the endpoints: the witness says it is one
//! (`/leader`, `/healthz`, `bully_witness`), and client-go's
//! `leader_election_master_status{name=...}` is 1 on the leader only. And the
//! command line: a command given to the witness, or none to a machine, is
//! refused; `check` names the witnesses.

mod support;

use std::time::{Duration, Instant};

use support::child_log::Kind;
use support::cluster::{AGENT, CLUSTER_ID, Cluster, Options, Ports, Timing};

const TIMING: Timing = Timing::FAST;
const WITNESS: u64 = 3;
const PATIENCE: Duration = Duration::from_secs(30);

/// Members 1 and 2, and witness 3, configured; nothing started.
fn configured() -> Cluster {
    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing: TIMING,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    cluster.make_witness(WITNESS);
    cluster
}

/// Members 1 and 2, and witness 3, started (the witness first, with no command).
fn two_machines_and_a_witness() -> Cluster {
    let mut cluster = configured();
    for id in [3, 2, 1] {
        cluster.spawn(id);
    }
    cluster
}

/// The value of `leader_election_master_status` with this cluster's default
/// lease name in `metrics`.
fn master_status(metrics: &str) -> Option<f64> {
    let series = format!("leader_election_master_status{{name=\"bully-agent-{CLUSTER_ID}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series.as_str()))
        .and_then(|value| value.trim().parse().ok())
}

/// The value of the unlabelled metric `name` in `metrics`.
fn metric(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// The witness's view: it says it is a witness, it follows `leader`, and no
/// command ever started on it.
fn assert_witness_follows(cluster: &Cluster, leader: u64) {
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        let status = cluster.status(WITNESS).expect("the witness answers");
        if status.leader == Some(leader) || Instant::now() >= deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.config.witness, "{status:?}");
    assert_eq!(status.role, "follower", "{status:?}");
    assert_eq!(status.leader, Some(leader), "{status:?}");
    assert_eq!(status.child.starts, 0, "{status:?}");
    assert!(!status.child.running, "{status:?}");
}

/// Every job the child log shows ran on a machine, none on the witness.
fn assert_no_job_on_the_witness(cluster: &Cluster) {
    let log = cluster.child_log();
    let starts: Vec<u64> = log
        .lines()
        .iter()
        .filter(|line| line.kind == Kind::Start)
        .map(|line| line.token.leader.0)
        .collect();
    assert!(!starts.is_empty(), "no job ran at all");
    assert!(
        starts.iter().all(|&leader| leader != WITNESS),
        "a job ran under the witness's leadership: {starts:?}\n{}",
        cluster.all_logs()
    );
}

#[test]
fn the_witness_vote_keeps_a_machine_leading_and_the_witness_never_runs_the_job() {
    let mut cluster = two_machines_and_a_witness();
    let first = cluster.wait_for_start_above(None, PATIENCE);
    let leader = first.token.leader.0;
    assert!(leader == 1 || leader == 2, "a machine leads: {leader}");
    assert_eq!(cluster.wait_for_agreement(PATIENCE), leader);
    assert_witness_follows(&cluster, leader);
    assert_eq!(cluster.get(WITNESS, "/healthz"), "ok (witness)\n");
    assert_eq!(cluster.get(1, "/healthz"), "ok\n");

    // client-go's gauge: 1 on the leader, 0 elsewhere; the witness says so.
    for id in 1..=3 {
        let metrics = cluster.metrics(id);
        let expected = if id == leader { 1.0 } else { 0.0 };
        assert_eq!(master_status(&metrics), Some(expected), "{id}:\n{metrics}");
        assert_eq!(
            metric(&metrics, "bully_is_leader"),
            Some(expected),
            "{id}:\n{metrics}"
        );
        let witness = if id == WITNESS { 1.0 } else { 0.0 };
        assert_eq!(
            metric(&metrics, "bully_witness"),
            Some(witness),
            "{id}:\n{metrics}"
        );
    }

    // The leading machine dies; the other takes over with the witness's vote.
    cluster.kill9(leader);
    let other = 3 - leader;
    let second = cluster.wait_for_start_above(Some(first.token), PATIENCE);
    assert_eq!(
        second.token.leader.0,
        other,
        "the other machine takes over\n{}",
        cluster.all_logs()
    );
    assert_eq!(
        cluster.wait_for_agreement_among(&[other, WITNESS], PATIENCE),
        other
    );
    assert_witness_follows(&cluster, other);
    assert_eq!(master_status(&cluster.metrics(other)), Some(1.0));
    assert_eq!(master_status(&cluster.metrics(WITNESS)), Some(0.0));
    assert_no_job_on_the_witness(&cluster);
    assert_eq!(cluster.child_log().overlaps(), [], "two jobs at once");
}

#[test]
fn without_the_witness_the_surviving_machine_does_not_lead() {
    let mut cluster = two_machines_and_a_witness();
    let first = cluster.wait_for_start_above(None, PATIENCE);
    let leader = first.token.leader.0;
    assert_eq!(cluster.wait_for_agreement(PATIENCE), leader);
    let survivor = 3 - leader;

    // The witness goes, then the leading machine: the survivor is one vote
    // of three.
    cluster.kill9(WITNESS);
    cluster.kill9(leader);
    let deadline = Instant::now() + PATIENCE;
    while cluster
        .status(survivor)
        .expect("the survivor answers")
        .leader
        == Some(leader)
    {
        assert!(
            Instant::now() < deadline,
            "the survivor never noticed its leader was gone\n{}",
            cluster.all_logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Several failover bounds: ample time for it to lead, had it a quorum.
    std::thread::sleep(TIMING.failover_bound(3) * 5);
    let status = cluster.status(survivor).expect("the survivor answers");
    assert_ne!(status.role, "leader", "{status:?}\n{}", cluster.all_logs());
    assert_eq!(
        master_status(&cluster.metrics(survivor)),
        Some(0.0),
        "{status:?}"
    );
    assert_eq!(
        cluster.child_log().first_start_above(Some(first.token)),
        None,
        "a job started without a quorum\n{}",
        cluster.all_logs()
    );

    // The witness returns: its vote makes a majority again.
    cluster.spawn(WITNESS);
    let second = cluster.wait_for_start_above(Some(first.token), PATIENCE);
    assert_eq!(second.token.leader.0, survivor, "{}", cluster.all_logs());
    assert_witness_follows(&cluster, survivor);
    assert_no_job_on_the_witness(&cluster);
}

/// `bully-agent ARGS`: its exit code and stderr (stdout too, for `check`).
fn agent(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let output = std::process::Command::new(AGENT)
        .args(args)
        .output()
        .expect("run bully-agent");
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

#[test]
fn a_command_on_the_witness_and_none_on_a_machine_are_refused() {
    let cluster = configured();
    let witness = cluster.config_path(WITNESS).as_os_str();
    let machine = cluster.config_path(1).as_os_str();
    let (code, text) = agent(&[
        "run".as_ref(),
        "--config".as_ref(),
        witness,
        "--".as_ref(),
        "true".as_ref(),
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("node 3 is a witness"), "{text}");
    let (code, text) = agent(&["run".as_ref(), "--config".as_ref(), machine]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("only a witness runs none"), "{text}");
    // `check` names the witnesses, on a machine and on the witness.
    let (code, text) = agent(&["check".as_ref(), "--config".as_ref(), machine]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("witnesses [3]: they vote"), "{text}");
    let (code, text) = agent(&["check".as_ref(), "--config".as_ref(), witness]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("witnesses [3]: this node is one"), "{text}");
}
