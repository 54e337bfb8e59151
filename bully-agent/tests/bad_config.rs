//! What the agent refuses to start with: bad configuration files, a secret on
//! the command line, a corrupt or foreign state file, a data directory it cannot
//! write or that another agent holds. Each refusal is one `error:` line on
//! stderr naming the problem, exit status 1, no child started (the child would
//! create its log file) and nothing bound (its UDP and HTTP ports are still
//! free). And a node with the wrong secret never joins: the others refuse its
//! frames, and it leaves with an `error:` line that names the secret.

mod support;

use std::collections::BTreeMap;
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::child_log::ChildLog;
use support::cluster::{
    AGENT, Cluster, Options, Ports, SECRET, Timing, child_script, free_tcp_address,
    free_udp_address, is_free, node_config, write_secret,
};
use support::procs::processes;

/// A refused start exits at once; this is only how long the test waits before it
/// calls the agent's start a failure to refuse.
const REFUSAL_PATIENCE: Duration = Duration::from_secs(10);

/// How long the test waits for anything else.
const PATIENCE: Duration = Duration::from_secs(15);

/// A directory with a secret, and the addresses of node 1 of a three-member
/// cluster (2 and 3 are never started).
struct Setup {
    dir: tempfile::TempDir,
    udp: SocketAddr,
    http: SocketAddr,
    members: BTreeMap<u64, SocketAddr>,
}

/// What one agent run left behind.
struct Outcome {
    code: Option<i32>,
    stderr: String,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().expect("a temporary directory");
        write_secret(&dir.path().join("secret"), SECRET);
        let udp = free_udp_address();
        let members = BTreeMap::from([(1, udp), (2, free_udp_address()), (3, free_udp_address())]);
        Setup {
            dir,
            udp,
            http: free_tcp_address(),
            members,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A configuration the agent accepts (`check` says so in a test below).
    fn valid(&self) -> String {
        node_config(1, &self.members, Some(self.http), &Timing::FAST, "secret")
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write a configuration");
        path
    }

    /// The child log the agent's child would create.
    fn child_log(&self) -> PathBuf {
        self.path("child.log")
    }

    /// `bully-agent run --config CONFIG [extra] -- bash child.sh child.log`, in a
    /// process group of its own; waits for it to exit. An agent still running
    /// after [`REFUSAL_PATIENCE`] has accepted what it should have refused: it is
    /// killed (with its group) and the test fails.
    fn run(&self, config: &Path, extra: &[&str]) -> Outcome {
        let stderr_path = self.path("stderr");
        let stderr = File::create(&stderr_path).expect("create the stderr file");
        let mut agent = Command::new(AGENT)
            .arg("run")
            .arg("--config")
            .arg(config)
            .args(extra)
            .args(["--", "bash"])
            .arg(child_script())
            .arg(self.child_log())
            .env_remove("BULLY_AGENT_TEST_UNSET")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .expect("start bully-agent");
        let deadline = Instant::now() + REFUSAL_PATIENCE;
        let status = loop {
            if let Some(status) = agent.try_wait().expect("poll the agent") {
                break status;
            }
            if Instant::now() >= deadline {
                let group = nix::unistd::Pid::from_raw(agent.id() as i32);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                let _ = agent.wait();
                panic!(
                    "bully-agent started with {} instead of refusing it:\n{}",
                    config.display(),
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Outcome {
            code: status.code(),
            stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
        }
    }

    /// Runs the agent and checks the refusal: status 1, one `error:` line that
    /// mentions every one of `mentions`, no child, nothing bound. Says what is
    /// wrong, if anything.
    fn check_refused(
        &self,
        case: &str,
        config: &Path,
        extra: &[&str],
        mentions: &[&str],
    ) -> Result<(), String> {
        let outcome = self.run(config, extra);
        let errors: Vec<&str> = outcome
            .stderr
            .lines()
            .filter(|line| line.starts_with("error:"))
            .collect();
        let mut wrong = Vec::new();
        if outcome.code != Some(1) {
            wrong.push(format!("exit status {:?}, not 1", outcome.code));
        }
        if errors.len() != 1 {
            wrong.push(format!("{} `error:` lines, not 1", errors.len()));
        }
        for mention in mentions {
            if !errors.iter().any(|line| line.contains(mention)) {
                wrong.push(format!("the `error:` line does not mention {mention:?}"));
            }
        }
        if self.child_log().exists() {
            wrong.push("the child started".to_owned());
        }
        if !is_free(self.udp) {
            wrong.push(format!("the UDP port {} was left bound", self.udp));
        }
        if !is_free(self.http) {
            wrong.push(format!("the HTTP port {} was left bound", self.http));
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{case}: {}; stderr:\n{}",
                wrong.join("; "),
                outcome.stderr
            ))
        }
    }

    /// [`Setup::check_refused`], failing the test at once.
    fn assert_refused(&self, case: &str, config: &Path, extra: &[&str], mentions: &[&str]) {
        if let Err(wrong) = self.check_refused(case, config, extra, mentions) {
            panic!("{wrong}");
        }
    }
}

#[test]
fn the_valid_configuration_passes_check() {
    // The cases below are this file with one mistake each: it must be fine.
    let setup = Setup::new();
    let config = setup.write("cluster.toml", &setup.valid());
    let output = Command::new(AGENT)
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .expect("run bully-agent check");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !setup.path("data").exists(),
        "check created the data directory"
    );
}

#[test]
fn every_bad_configuration_is_refused_before_anything_starts() {
    let setup = Setup::new();
    write_secret(&setup.path("short-secret"), "fifteen bytes!!");
    write_secret(&setup.path("blank-secret"), "                \n");
    std::fs::write(setup.path("open-secret"), SECRET).expect("write a secret");
    std::fs::set_permissions(
        setup.path("open-secret"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("open the secret to everyone");
    let valid = setup.valid();
    let address_of_2 = setup.members[&2].to_string();
    let address_of_3 = setup.members[&3].to_string();
    let members_at = valid.find("\n[[members]]").expect("members");
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "missing field",
            valid.replace("cluster = 7\n", ""),
            vec!["missing field", "cluster"],
        ),
        (
            "no members",
            valid[..members_at].to_owned(),
            vec!["members"],
        ),
        (
            "unknown field",
            valid.replace("id = 1\ndata_dir", "id = 1\ncolour = \"blue\"\ndata_dir"),
            vec!["unknown field", "colour"],
        ),
        (
            "unknown field in [timing]",
            valid.replace("heartbeat_ms = 50", "heartbeat = 50"),
            vec!["unknown field", "heartbeat"],
        ),
        (
            "id not in members",
            valid.replace("id = 1\ndata_dir", "id = 9\ndata_dir"),
            vec!["`id`", "9"],
        ),
        (
            "duplicate member ids",
            valid.replace(
                &format!("id = 3\naddress = \"{address_of_3}\""),
                &format!("id = 2\naddress = \"{address_of_3}\""),
            ),
            vec!["members[2].id", "2"],
        ),
        (
            "bad address",
            valid.replace(&address_of_2, "127.0.0.1:notaport"),
            vec!["members[1].address", "notaport"],
        ),
        (
            "address without a port",
            valid.replace(&address_of_2, "localhost"),
            vec!["members[1].address"],
        ),
        (
            "not a host name",
            valid.replace(&address_of_2, "no such host:7002"),
            vec!["members[1].address", "no such host"],
        ),
        (
            "secret too short",
            valid.replace("secret_file = \"secret\"", "secret_file = \"short-secret\""),
            vec!["secret_file", "15 bytes"],
        ),
        (
            "two members at one address",
            valid.replace(&address_of_3, &address_of_2),
            vec!["members[2].address", "members[1]"],
        ),
        (
            "a secret file others may read",
            valid.replace("secret_file = \"secret\"", "secret_file = \"open-secret\""),
            vec![
                "secret_file",
                "mode 0644",
                "chmod 600",
                "secret_file_mode_check",
            ],
        ),
        (
            "a secret of 16 spaces",
            valid.replace("secret_file = \"secret\"", "secret_file = \"blank-secret\""),
            vec!["secret_file", "only 1 distinct byte values"],
        ),
        (
            "a grace period of 0",
            valid.replace("grace_ms = 200", "grace_ms = 0"),
            vec!["child.grace_ms", "100 ms"],
        ),
        (
            "a restart delay of 0",
            valid.replace("restart_delay_ms = 200", "restart_delay_ms = 0"),
            vec!["child.restart_delay_ms", "100 ms"],
        ),
        (
            "secret file missing",
            valid.replace("secret_file = \"secret\"", "secret_file = \"nowhere\""),
            vec!["secret_file", "nowhere"],
        ),
        (
            "both secret_file and secret_env",
            valid.replace(
                "secret_file = \"secret\"",
                "secret_file = \"secret\"\nsecret_env = \"BULLY_AGENT_TEST_UNSET\"",
            ),
            vec!["secret_file", "secret_env"],
        ),
        (
            "neither secret_file nor secret_env",
            valid.replace("secret_file = \"secret\"\n", ""),
            vec!["secret_file", "secret_env"],
        ),
        (
            "secret_env names an unset variable",
            valid.replace(
                "secret_file = \"secret\"",
                "secret_env = \"BULLY_AGENT_TEST_UNSET\"",
            ),
            vec!["secret_env", "BULLY_AGENT_TEST_UNSET"],
        ),
        (
            "lease margin not above the grace period",
            valid.replace("[timing]\n", "[timing]\nlease_margin_ms = 200\n"),
            vec!["timing.lease_margin_ms", "grace"],
        ),
        (
            "unknown algorithm",
            valid.replace("algorithm = \"classic\"", "algorithm = \"raft\""),
            vec!["algorithm", "raft"],
        ),
        (
            "unknown quorum",
            valid.replace("quorum = \"majority\"", "quorum = \"most\""),
            vec!["quorum", "most"],
        ),
        (
            "bad listen address",
            valid.replace(
                &format!("listen = \"{}\"", setup.http),
                "listen = \"nowhere\"",
            ),
            vec!["listen"],
        ),
        (
            "leader timeout below the heartbeat",
            valid.replace("leader_timeout_ms = 600", "leader_timeout_ms = 40"),
            vec!["timing"],
        ),
        (
            "not TOML",
            "cluster = = 7\n".to_owned(),
            vec!["cluster.toml"],
        ),
    ];
    // Every case runs, and the failure lists every case that is wrong.
    let mut wrong = Vec::new();
    for (case, text, mentions) in cases {
        assert_ne!(text, valid, "{case}: the mutation did not apply");
        let config = setup.write("cluster.toml", &text);
        if let Err(what) = setup.check_refused(case, &config, &[], &mentions) {
            wrong.push(what);
        }
        if setup.path("data").exists() {
            wrong.push(format!("{case}: the data directory was created"));
        }
    }
    let missing = setup.path("missing.toml");
    if let Err(what) = setup.check_refused("no such file", &missing, &[], &["missing.toml"]) {
        wrong.push(what);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_secret_on_the_command_line_is_refused() {
    let setup = Setup::new();
    let config = setup.write("cluster.toml", &setup.valid());
    setup.assert_refused(
        "--secret",
        &config,
        &["--secret", "a secret every user can read in ps"],
        &["--secret"],
    );
    let outcome = setup.run(&config, &["--secret", "a secret every user can read in ps"]);
    assert!(
        !outcome.stderr.contains("every user can read"),
        "the refusal echoed the secret: {}",
        outcome.stderr
    );
}

#[test]
fn a_data_directory_it_cannot_write_is_refused() {
    // Root ignores permission bits, so chmod cannot make a directory unwritable
    // here; a path under a regular file cannot be created by anyone.
    let setup = Setup::new();
    std::fs::write(setup.path("a-file"), "not a directory").expect("write a file");
    let config = setup.write(
        "cluster.toml",
        &setup
            .valid()
            .replace("data_dir = \"data/1\"", "data_dir = \"a-file/data\""),
    );
    setup.assert_refused("data_dir under a file", &config, &[], &["a-file"]);

    // A directory that exists but where no one may create a file: procfs's
    // (what chmod 500 would be for a user other than root).
    let config = setup.write(
        "cluster.toml",
        &setup
            .valid()
            .replace("data_dir = \"data/1\"", "data_dir = \"/proc/self/fdinfo\""),
    );
    setup.assert_refused("data_dir in /proc", &config, &[], &["/proc/self/fdinfo"]);
}

#[test]
fn a_corrupt_state_file_is_refused_not_ignored() {
    let setup = Setup::new();
    let config = setup.write("cluster.toml", &setup.valid());
    let state = setup.path("data/1/state.json");
    std::fs::create_dir_all(state.parent().expect("a parent")).expect("create data/1");
    for (case, garbage) in [
        ("garbage", "this is not JSON\n"),
        ("empty", ""),
        ("truncated", "{\"state\":{\"format\":\"bully-agent-state\""),
    ] {
        std::fs::write(&state, garbage).expect("write the state file");
        setup.assert_refused(case, &config, &[], &["state.json"]);
        assert_eq!(
            std::fs::read_to_string(&state).expect("the state file"),
            garbage,
            "{case}: the refused state file was overwritten"
        );
    }
}

/// Runs a one-member cluster (id 1 of cluster 7) on `setup` until its state file
/// exists, and keeps it running: the state file is one the agent wrote itself.
fn lone_agent(setup: &Setup, data_dir: &str) -> std::process::Child {
    let udp = free_udp_address();
    let http = free_tcp_address();
    let text = node_config(
        1,
        &BTreeMap::from([(1, udp)]),
        Some(http),
        &Timing::FAST,
        "secret",
    )
    .replace(
        "data_dir = \"data/1\"",
        &format!("data_dir = \"{data_dir}\""),
    );
    let config = setup.write("lone.toml", &text);
    let agent = Command::new(AGENT)
        .arg("run")
        .arg("--config")
        .arg(&config)
        .args(["--", "bash"])
        .arg(child_script())
        .arg(setup.path("lone-child.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(setup.path("lone.log")).expect("a log file"))
        .process_group(0)
        .spawn()
        .expect("start bully-agent");
    let deadline = Instant::now() + PATIENCE;
    while support::cluster::status(http).is_none_or(|status| status.leader != Some(1)) {
        assert!(
            Instant::now() < deadline,
            "a one-member cluster did not elect itself:\n{}",
            std::fs::read_to_string(setup.path("lone.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(setup.path(data_dir).join("state.json").exists());
    agent
}

/// SIGTERM, and the agent's exit status.
fn terminate(mut agent: std::process::Child) -> std::process::ExitStatus {
    let pid = nix::unistd::Pid::from_raw(agent.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = agent.wait().expect("reap the agent");
    // Its child's group, in case the agent failed to stop it.
    for process in processes() {
        if process.cmdline.contains("lone-child.log") {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(process.pgid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    status
}

#[test]
fn a_data_directory_in_use_or_a_foreign_state_file_is_refused() {
    let setup = Setup::new();
    let lone = lone_agent(&setup, "data/1");

    // A second agent on the data directory another one holds.
    let config = setup.write("cluster.toml", &setup.valid());
    setup.assert_refused(
        "data directory in use",
        &config,
        &[],
        &["another bully-agent"],
    );

    let status = terminate(lone);
    assert!(status.success(), "the lone agent left with {status}");
    let log = ChildLog::read(&setup.path("lone-child.log")).expect("the lone child's log");
    assert_eq!(log.overlaps(), [], "one agent cannot overlap itself");
    assert!(
        log.intervals().iter().all(|i| i.stopped),
        "SIGTERM stops the child before the agent leaves: {}",
        log.describe()
    );

    // Its state, read by a node of another cluster.
    let other_cluster = setup.valid().replace("cluster = 7", "cluster = 8");
    let config = setup.write("cluster.toml", &other_cluster);
    setup.assert_refused(
        "another cluster's state",
        &config,
        &[],
        &["state.json", "cluster"],
    );

    // Its state, read by another node of the same cluster.
    let node_2 = node_config(2, &setup.members, Some(setup.http), &Timing::FAST, "secret")
        .replace("data_dir = \"data/2\"", "data_dir = \"data/1\"");
    let config = setup.write("cluster.toml", &node_2);
    // Node 2 binds member 2's address: check that one too.
    let setup_2 = Setup {
        udp: setup.members[&2],
        ..setup
    };
    setup_2.assert_refused(
        "another node's state",
        &config,
        &[],
        &["state.json", "node"],
    );
}

#[test]
fn a_node_with_the_wrong_secret_never_joins() {
    // Three members; 3 has another secret. 1 and 2 are a majority: they elect 2.
    // 3 can authenticate nothing it hears, and they nothing of what it sends: it
    // never joins, and it leaves with an error that names the secret.
    let timing = Timing::FAST;
    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing,
        relay: false,
        other_secret: Some(3),
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    cluster.spawn(1);
    cluster.spawn(2);
    let leader = cluster.wait_for_agreement_among(&[1, 2], PATIENCE);
    assert_eq!(leader, 2);
    // 3 starts once 1 and 2 listen: declared new, as every member of a new
    // cluster (`Cluster::configure` runs `bully-agent init`), it probes at
    // once, and a probe sent before 2 was bound would reach nobody to refuse
    // it. Started without state instead, it would send nothing for a follower
    // lease, and leave before it sent the frames this test counts.
    cluster.spawn(3);

    let status = cluster.wait_exit(3, PATIENCE).unwrap_or_else(|| {
        panic!(
            "node 3 runs on with the wrong secret\n{}",
            cluster.all_logs()
        )
    });
    assert_eq!(status.code(), Some(1), "node 3's exit status");
    let log_3 = cluster.node_log(3);
    let errors: Vec<&str> = log_3.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "node 3's `error:` lines:\n{log_3}");
    assert!(
        errors[0].contains("secret"),
        "node 3's error does not name the secret: {}",
        errors[0]
    );

    for id in [1, 2] {
        let status = cluster.status(id).expect("answers");
        let heard_3 = status.members.iter().find(|m| m.id == 3).expect("member 3");
        assert_eq!(
            heard_3.last_heard_ms, None,
            "node {id} accepted a frame of 3"
        );
        let metrics = cluster.metrics(id);
        assert!(
            refused_frames(&metrics) > 0,
            "node {id} counts no refused frame, though 3 sent to it:\n{metrics}"
        );
    }
    let log = cluster.child_log();
    assert!(
        log.lines().iter().all(|line| line.token.leader.0 == 2),
        "a child ran for another leader than 2: {}",
        log.describe()
    );
}

/// The sum of `bully_frames_refused_total` over its reasons.
fn refused_frames(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|line| line.starts_with("bully_frames_refused_total"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}
