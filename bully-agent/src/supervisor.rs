//! The supervisor: a small process between the agent and the command, so that
//! the command stops on time even when the agent cannot stop it.
//!
//! The agent re-executes itself as `bully-agent supervise --grace-ms G
//! [--cgroup PATH] -- CMD...` with one end of a socket pair as its standard
//! input, in a process group of its own: a SIGKILL to the agent's group
//! (`kill -9 -PGID`) does not reach it. It starts the command in a process group
//! of its own too, and holds the command's whole process tree (see
//! [`crate::containment`]): the job's cgroup, which the command joins before it
//! is executed, or else the supervisor's descendants, whose orphans it adopts
//! as child subreaper. It stops the tree when any of these happens:
//!
//! - the agent says `stop` (the leadership ended, or the agent is leaving);
//! - the socket closes: the agent died, even by SIGKILL, which no handler sees;
//! - the lease deadline the agent last sent passes: the agent is alive but not
//!   running (paused, starved), or its renewals stopped reaching here.
//!
//! Stopping is SIGTERM to every process of the tree, the grace period for all
//! of them to end, then SIGKILL to whatever is left (`cgroup.kill`), until
//! nothing is. When the command ends by itself, whatever it left is killed at
//! once: the job's processes live and die with it. Either way the supervisor
//! removes the job's cgroup before it exits (the agent makes one per run).
//!
//! The protocol, one line each way:
//! - agent to supervisor: `until <CLOCK_MONOTONIC nanoseconds>`, `until none`, `stop`;
//! - supervisor to agent: `pid <command's pid>`, `exited <status>` (the exit code,
//!   or 128 + the signal number), after which it exits with that status;
//!   `lapsed <status>` instead when it stopped the command itself because the
//!   lease deadline passed (so that the agent does not take the SIGTERM's 143
//!   for the command's own exit); or `expired` instead of starting the command,
//!   when the deadline the agent gave on the command line (`--until`) has
//!   passed already.
//!
//! The command is started through one more re-execution, `bully-agent exec-child`,
//! which asks the kernel to SIGKILL it should the supervisor die
//! (`PR_SET_PDEATHSIG`, Linux), joins the job's cgroup, and then replaces itself
//! with the command: so even a SIGKILL to the supervisor ends the command.
//!
//! The deadline travels as an absolute `CLOCK_MONOTONIC` reading, which both
//! processes share, so a delay between the agent's computing it and the
//! supervisor's reading it cannot move it later.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use crate::cgroup::Cgroup;
use crate::containment::JobTree;

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn monotonic_now() -> u128 {
    let now = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always available");
    u128::from(now.tv_sec().unsigned_abs()) * 1_000_000_000
        + u128::from(now.tv_nsec().unsigned_abs())
}

/// `instant` as a `CLOCK_MONOTONIC` reading in nanoseconds (std's `Instant` is
/// that clock on Linux, but does not show its value).
pub fn to_monotonic(instant: std::time::Instant) -> u128 {
    let (mono, now) = (monotonic_now(), std::time::Instant::now());
    match instant.checked_duration_since(now) {
        Some(ahead) => mono + ahead.as_nanos(),
        None => mono.saturating_sub(now.duration_since(instant).as_nanos()),
    }
}

/// The exit status as one number: the code, or 128 + the signal, as shells do.
pub fn status_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

/// Why the supervisor stops the command.
#[derive(Debug, PartialEq, Eq)]
enum StopReason {
    Asked,
    AgentGone,
    LeaseDeadline,
    Signal,
}

/// Runs the supervisor; returns the status to exit with. `cgroup`: the job's
/// cgroup, which the agent made (else the supervisor is the subreaper).
pub async fn supervise(
    grace: Duration,
    cgroup: Option<PathBuf>,
    until: Option<u128>,
    command: Vec<OsString>,
) -> io::Result<i32> {
    let control = std::os::unix::net::UnixStream::from(io::stdin().as_fd().try_clone_to_owned()?);
    control.set_nonblocking(true)?;
    let control = UnixStream::from_std(control)?;
    let (read, mut write) = control.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut children = signal(SignalKind::child())?;

    if command.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    }
    let tree = match JobTree::for_supervisor(cgroup.as_deref()) {
        Ok(tree) => tree,
        Err(error) => {
            let _ = write
                .write_all(
                    format!("failed cannot hold the job's process tree: {error}\n").as_bytes(),
                )
                .await;
            return Ok(127);
        }
    };
    if until.is_some_and(|until| until <= monotonic_now()) {
        // The lease deadline the agent knew has passed already (the agent was
        // paused, or starved, between its check and this start): the command
        // must not start under a leadership that may have ended.
        tree.remove();
        let _ = write.write_all(b"expired\n").await;
        return Ok(0);
    }
    // Through `exec-child`, so that the command dies with this process. The
    // death signal is tied to the thread that spawns it: this one, the runtime's
    // only thread (`main` runs the supervisor on a current-thread runtime).
    let mut exec_child = Command::from(crate::own_binary::own_binary()?);
    exec_child
        .arg("exec-child")
        .arg("--parent")
        .arg(std::process::id().to_string());
    if let Some(path) = &cgroup {
        exec_child.arg("--cgroup").arg(path);
    }
    let mut child = match exec_child
        .arg("--")
        .args(&command)
        .process_group(0)
        .stdin(Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            let _ = write
                .write_all(format!("failed {error}\n").as_bytes())
                .await;
            return Ok(127);
        }
    };
    let pid = child.id().expect("a child that was not awaited has a pid");
    let pid = i32::try_from(pid).expect("pids fit in i32");
    let group = Pid::from_raw(pid);
    // The agent may be gone already; the checks below notice.
    let _ = write.write_all(format!("pid {pid}\n").as_bytes()).await;

    let mut deadline: Option<Instant> =
        until.and_then(|until| parse_until(&format!("until {until}")).flatten());
    let reason = loop {
        tokio::select! {
            status = child.wait() => {
                // The command ended by itself; what it left goes too.
                let _ = killpg(group, Signal::SIGKILL);
                tree.kill_all(None).await;
                tree.remove();
                let code = status_code(status?);
                let _ = write.write_all(format!("exited {code}\n").as_bytes()).await;
                return Ok(code);
            }
            line = lines.next_line() => match line {
                Ok(Some(line)) if line == "stop" => break StopReason::Asked,
                Ok(Some(line)) => match parse_until(&line) {
                    Some(until) => deadline = until,
                    None => tracing::warn!(line, "supervisor: unknown instruction ignored"),
                },
                Ok(None) | Err(_) => break StopReason::AgentGone,
            },
            () = sleep_until(deadline), if deadline.is_some() => break StopReason::LeaseDeadline,
            _ = terminate.recv() => break StopReason::Signal,
            _ = interrupt.recv() => break StopReason::Signal,
            // An orphan of the job died: as its subreaper, this process reaps it.
            _ = children.recv() => tree.reap_adopted(Some(pid)),
        }
    };
    tracing::debug!(?reason, pid, "supervisor: stopping the command");
    let code = stop(&mut child, group, &tree, grace).await?;
    tree.remove();
    let report = if reason == StopReason::LeaseDeadline {
        "lapsed"
    } else {
        "exited"
    };
    let _ = write
        .write_all(format!("{report} {code}\n").as_bytes())
        .await;
    Ok(code)
}

/// `bully-agent exec-child`: arranges to be killed when the supervisor (`parent`)
/// dies, joins the job's `cgroup` if there is one, then becomes `command`.
/// Returns only if that fails.
pub fn exec_child(parent: u32, cgroup: Option<&Path>, command: &[OsString]) -> io::Error {
    use std::os::unix::process::CommandExt;

    #[cfg(target_os = "linux")]
    {
        if let Err(error) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
            return io::Error::from(error);
        }
        // The supervisor may have died before the line above: then no signal
        // will come, and the command must not start.
        if nix::unistd::getppid().as_raw() != i32::try_from(parent).unwrap_or(-1) {
            return io::Error::other("the supervisor is gone");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    if let Some(path) = cgroup {
        // Before the command runs, so that nothing it starts is outside.
        if let Err(error) = Cgroup::open(path).and_then(|cgroup| cgroup.join_self()) {
            return io::Error::new(
                error.kind(),
                format!("cannot join the cgroup {}: {error}", path.display()),
            );
        }
    }
    let Some((program, arguments)) = command.split_first() else {
        return io::Error::new(io::ErrorKind::InvalidInput, "no command");
    };
    std::process::Command::new(program).args(arguments).exec()
}

/// SIGTERM to every process of the job, the grace period for all of them to
/// end, then SIGKILL to whatever is left, until nothing is. The command's
/// group is signalled as well: it may not have joined the cgroup yet.
async fn stop(
    child: &mut tokio::process::Child,
    group: Pid,
    tree: &JobTree,
    grace: Duration,
) -> io::Result<i32> {
    let _ = killpg(group, Signal::SIGTERM);
    tree.signal(Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    let status = match tokio::time::timeout_at(deadline, child.wait()).await {
        Ok(status) => Some(status?),
        Err(_) => None,
    };
    let keep = match status {
        // The command is reaped; its tree gets the rest of the grace period.
        Some(_) => {
            let left = deadline.saturating_duration_since(Instant::now());
            tree.wait_empty(None, left).await;
            None
        }
        None => child.id().and_then(|pid| i32::try_from(pid).ok()),
    };
    let _ = killpg(group, Signal::SIGKILL);
    tree.kill_all(keep).await;
    let status = match status {
        Some(status) => status,
        None => child.wait().await?,
    };
    // Anything the command started while it was being killed.
    tree.kill_all(None).await;
    Ok(status_code(status))
}

fn parse_until(line: &str) -> Option<Option<Instant>> {
    let value = line.strip_prefix("until ")?;
    if value == "none" {
        return Some(None);
    }
    let target: u128 = value.parse().ok()?;
    let remaining = target.saturating_sub(monotonic_now());
    let remaining = Duration::from_nanos(u64::try_from(remaining).unwrap_or(u64::MAX));
    Some(Some(
        Instant::now() + remaining.min(Duration::from_secs(86_400 * 365)),
    ))
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
