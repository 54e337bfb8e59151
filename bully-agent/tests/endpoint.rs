//! One agent, alone in its cluster (a quorum of one), seen through its endpoint:
//! `/leader`, `/healthz`, `/metrics` and `bully-agent status`; then SIGTERM stops
//! its command before the agent leaves with status 0.

mod support;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

use bully_agent::status::Status;
use bully_agent::token::parse_token;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use support::lone::LoneAgent;

#[test]
fn a_lone_agent_leads_reports_itself_and_leaves_on_sigterm() {
    let lone = LoneAgent::new("", "");
    let mut agent = lone.start(
        "echo \"token $BULLY_FENCING_TOKEN term $BULLY_TERM leader $BULLY_LEADER\"; \
         trap 'echo stopped; exit 0' TERM; while :; do sleep 0.05; done",
    );
    let (udp, endpoint, config) = (lone.udp, lone.endpoint.clone(), lone.config.clone());
    let mut out = BufReader::new(agent.0.stdout.take().unwrap()).lines();

    let status = lone.wait_for("node 4 running its command", |status| {
        status.child.running && status.child.pid.is_some()
    });
    assert_eq!((status.node, status.role.as_str()), (4, "leader"));
    assert_eq!(status.leader, Some(4));
    assert!(status.working);
    assert!(status.members.is_empty(), "no other members");
    let token = parse_token(status.fencing_token.as_deref().unwrap()).unwrap();
    assert_eq!(token.term.0, status.term);

    // The command got the same token, and the term and leader apart.
    let line = out.next().unwrap().unwrap();
    assert_eq!(
        line,
        format!(
            "token {} term {} leader 4",
            status.fencing_token.as_deref().unwrap(),
            status.term
        )
    );

    assert_eq!(lone.get("/healthz"), "ok\n");

    // A datagram that is no frame: refused by the codec, counted by reason.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.send_to(b"not a frame", ("127.0.0.1", udp)).unwrap();
    let metrics = {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let text = lone.get("/metrics");
            if text.contains("bully_frames_refused_total{reason=\"truncated\"} 1")
                || text.contains("bully_frames_refused_total{reason=\"bad_magic\"} 1")
            {
                break text;
            }
            assert!(
                Instant::now() < give_up,
                "the refusal was not counted:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for expected in [
        "# TYPE bully_elections_total counter",
        "bully_times_leader_total 1",
        "# TYPE bully_leaders_suspected_total counter",
        "bully_is_leader 1",
        "bully_child_running 1",
        "bully_child_starts_total 1",
        "bully_child_restarts_total 0",
        "bully_dropped_total{reason=\"no_quorum\"} 0",
        &format!("bully_term {}", status.term),
    ] {
        assert!(
            metrics.contains(expected),
            "{expected:?} missing from:\n{metrics}"
        );
    }

    // `bully-agent status`, from the configuration and from the endpoint.
    let printed = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args(["status", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(printed.status.success());
    let printed = String::from_utf8(printed.stdout).unwrap();
    assert!(printed.contains("node:    4 (leader)"), "{printed}");
    assert!(printed.contains("command: running"), "{printed}");
    let json = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args(["status", "--json", "--endpoint", &endpoint])
        .output()
        .unwrap();
    let parsed: Status = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(parsed.fencing_token, status.fencing_token);

    // SIGTERM: the command hears it first, then the agent leaves with 0.
    kill(Pid::from_raw(agent.0.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "stopped");
    assert!(agent.0.wait().unwrap().success());

    // The term survived in the state file: a restart resumes from it.
    let state = std::fs::read_to_string(lone.dir.path().join("data/state.json")).unwrap();
    assert!(
        state.contains(&format!("\"term\": {}", status.term)),
        "{state}"
    );
}

#[test]
fn status_without_an_endpoint_says_what_to_set() {
    let lone = LoneAgent::new("", "");
    let config = lone.config.clone();
    let text = std::fs::read_to_string(&config).unwrap();
    let without: String = text
        .lines()
        .filter(|line| !line.starts_with("listen"))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&config, without).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args(["status", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("error: ") && stderr.contains("`listen` is not set"),
        "{stderr}"
    );
}
