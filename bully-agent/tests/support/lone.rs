//! One agent alone in its cluster (a quorum of one, declared new with
//! `bully-agent init`, so it leads at once): its configuration in a temporary
//! directory, its process, its endpoint.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bully_agent::status::{Status, fetch};

use super::cluster::{AGENT, free_tcp_address, free_udp_address, write_secret};

/// A configured, not yet started, agent.
pub(crate) struct LoneAgent {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) config: PathBuf,
    pub(crate) udp: u16,
    pub(crate) endpoint: String,
}

/// The agent's process, killed if the test fails half-way.
pub(crate) struct Running(pub(crate) Child);

impl Running {
    /// Waits for the agent to leave; its status, and what it wrote to standard
    /// error (started with [`LoneAgent::start_capturing_stderr`]).
    pub(crate) fn wait_with_stderr(&mut self) -> (ExitStatus, String) {
        let status = self.0.wait().unwrap();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.0.stderr.take() {
            pipe.read_to_string(&mut stderr).unwrap();
        }
        (status, stderr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl LoneAgent {
    /// Node 4 of cluster 11, fast timings; `extra` is appended to the top level
    /// (before any table) and `child` to the `[child]` table.
    pub(crate) fn new(extra: &str, child: &str) -> LoneAgent {
        let dir = tempfile::tempdir().unwrap();
        let udp = free_udp_address().port();
        let http = free_tcp_address().port();
        write_secret(
            &dir.path().join("secret"),
            "lone agent secret, 32 bytes.....",
        );
        let config = dir.path().join("cluster.toml");
        std::fs::write(
            &config,
            format!(
                r#"cluster = 11
id = 4
data_dir = "data"
secret_file = "secret"
listen = "127.0.0.1:{http}"
{extra}
[timing]
heartbeat_ms = 50
leader_timeout_ms = 600
max_message_delay_ms = 20
[child]
grace_ms = 200
{child}
[[members]]
id = 4
address = "127.0.0.1:{udp}"
"#
            ),
        )
        .unwrap();
        // A new cluster of one, declared so (it leads as it starts).
        let init = super::cluster::init_command(&config);
        assert!(
            init.status.success(),
            "bully-agent init: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        LoneAgent {
            dir,
            config,
            udp,
            endpoint: format!("127.0.0.1:{http}"),
        }
    }

    /// Starts `bully-agent run` with `sh -c script` as the command, its standard
    /// output piped.
    pub(crate) fn start(&self, script: &str) -> Running {
        self.spawn(script, Stdio::null())
    }

    /// [`LoneAgent::start`], with the agent's standard error piped as well.
    pub(crate) fn start_capturing_stderr(&self, script: &str) -> Running {
        self.spawn(script, Stdio::piped())
    }

    /// [`LoneAgent::start`] with `variables` added to the agent's environment
    /// (which its command inherits), its standard error appended to
    /// `agent.log` in the directory ([`LoneAgent::log`]).
    pub(crate) fn start_with(&self, script: &str, variables: &[(&str, &str)]) -> Running {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("agent.log"))
            .unwrap();
        self.spawn_with(script, Stdio::from(log), variables)
    }

    /// What the agents started with [`LoneAgent::start_with`] logged.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    fn spawn(&self, script: &str, stderr: Stdio) -> Running {
        self.spawn_with(script, stderr, &[])
    }

    /// In a process group of its own, so that a test can signal the group.
    fn spawn_with(&self, script: &str, stderr: Stdio, variables: &[(&str, &str)]) -> Running {
        use std::os::unix::process::CommandExt;
        Running(
            Command::new(AGENT)
                .current_dir(self.dir.path())
                .args(["run", "--config"])
                .arg(&self.config)
                .args(["--", "sh", "-c", script])
                .envs(variables.iter().copied())
                .stdout(Stdio::piped())
                .stderr(stderr)
                .process_group(0)
                .spawn()
                .unwrap(),
        )
    }

    /// Polls `/leader` until `check` accepts a status.
    pub(crate) fn wait_for(&self, what: &str, mut check: impl FnMut(&Status) -> bool) -> Status {
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(status) = fetch(&self.endpoint) {
                if check(&status) {
                    return status;
                }
            }
            assert!(Instant::now() < give_up, "never saw: {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// An HTTP GET of `path` on the endpoint.
    pub(crate) fn get(&self, path: &str) -> String {
        ureq::get(&format!("http://{}{path}", self.endpoint))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap()
    }
}
