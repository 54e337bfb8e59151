//! The agent's side of one run of the command: starts the supervisor
//! ([`crate::supervisor`]) with the fencing token in the environment, hands it
//! lease deadlines, and stops it. Should the supervisor vanish, or not answer,
//! the agent kills the job's cgroup itself.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use bully_core::FencingToken;
use bully_core::wire::ClusterId;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::process::Command;

use crate::cgroup::Cgroup;
use crate::containment::KILL_PATIENCE;
use crate::own_binary::own_binary;
use crate::supervisor::{status_code, to_monotonic};
use crate::token::format_token;

/// What the supervisor reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// The command started with this pid.
    Started(u32),
    /// The command ended with this status (exit code, or 128 + signal).
    Exited(i32),
    /// The supervisor stopped the command itself, with this status, because
    /// the lease deadline the agent last gave it passed (the agent was paused
    /// or starved): the leadership's permission ran out, the command did not
    /// end by itself.
    Lapsed(i32),
    /// The supervisor is gone without saying how the command ended.
    Gone,
    /// The lease deadline passed before the command could start: it did not.
    Expired,
}

/// One run of the command under its supervisor.
#[derive(Debug)]
pub struct Supervised {
    supervisor: tokio::process::Child,
    control: OwnedWriteHalf,
    reports: Lines<BufReader<OwnedReadHalf>>,
    pid: Option<u32>,
    grace: Duration,
    cgroup: Option<Cgroup>,
}

impl Supervised {
    /// Starts `command` under a supervisor, with the token in its environment;
    /// the job's tree in `cgroup`, or held by the supervisor as subreaper.
    pub fn spawn(
        command: &[OsString],
        token: FencingToken,
        cluster: ClusterId,
        grace: Duration,
        cgroup: Option<&Cgroup>,
        until: Option<std::time::Instant>,
    ) -> io::Result<Supervised> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let mut supervisor = Command::from(own_binary()?);
        supervisor
            .arg("supervise")
            .arg("--grace-ms")
            .arg(grace.as_millis().to_string());
        if let Some(cgroup) = cgroup {
            supervisor.arg("--cgroup").arg(cgroup.path());
        }
        if let Some(until) = until {
            supervisor
                .arg("--until")
                .arg(to_monotonic(until).to_string());
        }
        let supervisor = supervisor
            .arg("--")
            .args(command)
            .env("BULLY_TERM", token.term.0.to_string())
            .env("BULLY_LEADER", token.leader.0.to_string())
            .env("BULLY_NODE", token.leader.0.to_string())
            .env("BULLY_CLUSTER", cluster.0.to_string())
            .env("BULLY_FENCING_TOKEN", format_token(token))
            // systemd's notifications are the agent's to send, not the job's.
            .env_remove(crate::systemd::NOTIFY_SOCKET)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            // Out of the agent's process group: `kill -9 -PGID` of the agent
            // leaves the supervisor to stop the job.
            .process_group(0)
            .spawn()?;
        let (read, control) = UnixStream::from_std(ours)?.into_split();
        Ok(Supervised {
            supervisor,
            control,
            reports: BufReader::new(read).lines(),
            pid: None,
            grace,
            cgroup: cgroup.cloned(),
        })
    }

    /// The command's pid, once the supervisor reported it.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Tells the supervisor to stop the command at `deadline` unless told a later
    /// one (`None`: no deadline, without a quorum).
    pub async fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        let line = match deadline {
            Some(at) => format!("until {}\n", to_monotonic(at)),
            None => "until none\n".to_owned(),
        };
        // A supervisor that is gone reports so in `next_report`.
        let _ = self.control.write_all(line.as_bytes()).await;
    }

    /// The next report. Cancel safe.
    pub async fn next_report(&mut self) -> Report {
        loop {
            match self.reports.next_line().await {
                Ok(Some(line)) => {
                    if let Some(pid) = line.strip_prefix("pid ").and_then(|p| p.parse().ok()) {
                        self.pid = Some(pid);
                        return Report::Started(pid);
                    }
                    if let Some(code) = line.strip_prefix("exited ").and_then(|c| c.parse().ok()) {
                        return Report::Exited(code);
                    }
                    if let Some(code) = line.strip_prefix("lapsed ").and_then(|c| c.parse().ok()) {
                        return Report::Lapsed(code);
                    }
                    if line == "expired" {
                        return Report::Expired;
                    }
                    if let Some(error) = line.strip_prefix("failed ") {
                        tracing::error!(%error, "the command could not be started");
                        return Report::Exited(127);
                    }
                }
                Ok(None) | Err(_) => return Report::Gone,
            }
        }
    }

    /// Waits for the command to end by itself; returns its status.
    pub async fn exited(&mut self) -> i32 {
        loop {
            match self.next_report().await {
                Report::Started(_) => {}
                Report::Expired => {
                    let _ = self.supervisor.wait().await;
                    return 0;
                }
                Report::Exited(code) | Report::Lapsed(code) => {
                    let _ = self.supervisor.wait().await;
                    return code;
                }
                Report::Gone => {
                    let code = self.supervisor.wait().await.map_or(1, status_code);
                    // It died without a word (killed): what it held is the
                    // agent's to kill.
                    self.kill_cgroup().await;
                    return code;
                }
            }
        }
    }

    /// Waits for the supervisor to exit, after it said it did not start the
    /// command (`Report::Expired`).
    pub async fn reap(&mut self) {
        let _ = self.supervisor.wait().await;
    }

    /// Stops the command (SIGTERM, the grace period, SIGKILL) and waits for it.
    /// Should the supervisor not answer in time, the agent kills the command's
    /// group, its cgroup and the supervisor itself.
    pub async fn stop(&mut self) -> i32 {
        let _ = self.control.write_all(b"stop\n").await;
        let patience = self.grace + Duration::from_secs(1);
        match tokio::time::timeout(patience, self.exited()).await {
            Ok(code) => code,
            Err(_) => {
                tracing::warn!("the supervisor did not stop the command in time: killing both");
                if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
                    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                }
                let _ = self.supervisor.kill().await;
                self.kill_cgroup().await;
                137
            }
        }
    }

    async fn kill_cgroup(&self) {
        if let Some(cgroup) = &self.cgroup {
            if !cgroup.kill(KILL_PATIENCE).await {
                tracing::error!(cgroup = %cgroup.path().display(), "processes of the job outlived SIGKILL");
            }
        }
    }
}
