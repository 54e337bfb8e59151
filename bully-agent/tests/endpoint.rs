//! One agent, alone in its cluster (a quorum of one), seen through its endpoint:
//! `/leader`, `/healthz`, `/metrics` and `bully-agent status`; then SIGTERM stops
//! its command before the agent leaves with status 0.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bully_agent::status::{Status, fetch};
use bully_agent::token::parse_token;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn write_config(dir: &Path, udp: u16, http: u16) -> std::path::PathBuf {
    std::fs::write(dir.join("secret"), "endpoint test secret, 32 bytes..").unwrap();
    let path = dir.join("cluster.toml");
    std::fs::write(
        &path,
        format!(
            r#"
cluster = 11
id = 4
data_dir = "data"
secret_file = "secret"
listen = "127.0.0.1:{http}"
[timing]
heartbeat_ms = 50
leader_timeout_ms = 600
max_message_delay_ms = 20
[child]
grace_ms = 200
[[members]]
id = 4
address = "127.0.0.1:{udp}"
"#
        ),
    )
    .unwrap();
    path
}

/// Kills the agent if the test fails half-way.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(what: &str, mut check: impl FnMut() -> Option<Status>) -> Status {
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = check() {
            return status;
        }
        assert!(Instant::now() < give_up, "never saw: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn get(url: &str) -> String {
    ureq::get(url)
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}

#[test]
fn a_lone_agent_leads_reports_itself_and_leaves_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (udp, http) = (free_udp_port(), free_tcp_port());
    let config = write_config(dir.path(), udp, http);
    let endpoint = format!("127.0.0.1:{http}");
    let mut agent = Agent(
        Command::new(env!("CARGO_BIN_EXE_bully-agent"))
            .args(["run", "--config"])
            .arg(&config)
            .args(["--", "sh", "-c"])
            .arg("echo \"token $BULLY_FENCING_TOKEN term $BULLY_TERM leader $BULLY_LEADER\"; trap 'echo stopped; exit 0' TERM; while :; do sleep 0.05; done")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(agent.0.stdout.take().unwrap()).lines();

    let status = wait_for("node 4 running its command", || {
        fetch(&endpoint)
            .ok()
            .filter(|status| status.child.running && status.child.pid.is_some())
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

    assert_eq!(get(&format!("http://{endpoint}/healthz")), "ok\n");

    // A datagram that is no frame: refused by the codec, counted by reason.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.send_to(b"not a frame", ("127.0.0.1", udp)).unwrap();
    let metrics = {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let text = get(&format!("http://{endpoint}/metrics"));
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
    let state = std::fs::read_to_string(dir.path().join("data/state.json")).unwrap();
    assert!(
        state.contains(&format!("\"term\": {}", status.term)),
        "{state}"
    );
}

#[test]
fn status_without_an_endpoint_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), free_udp_port(), free_tcp_port());
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
