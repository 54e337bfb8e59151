//! The supervisor: a small process between the agent and the command, so that
//! the command stops on time even when the agent cannot stop it.
//!
//! The agent re-executes itself as `bully-agent supervise --grace-ms G -- CMD...`
//! with one end of a socket pair as its standard input. The supervisor stays in
//! the agent's process group and starts the command in a process group of its
//! own. It stops the command (SIGTERM to that group, the grace period, SIGKILL)
//! when any of these happens:
//!
//! - the agent says `stop` (the leadership ended, or the agent is leaving);
//! - the socket closes: the agent died, even by SIGKILL, which no handler sees;
//! - the lease deadline the agent last sent passes: the agent is alive but not
//!   running (paused, starved), or its renewals stopped reaching here.
//!
//! The protocol, one line each way:
//! - agent to supervisor: `until <CLOCK_MONOTONIC nanoseconds>`, `until none`, `stop`;
//! - supervisor to agent: `pid <command's pid>`, `exited <status>` (the exit code,
//!   or 128 + the signal number), after which it exits with that status.
//!
//! The deadline travels as an absolute `CLOCK_MONOTONIC` reading, which both
//! processes share, so a delay between the agent's computing it and the
//! supervisor's reading it cannot move it later.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
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
#[derive(Debug)]
enum StopReason {
    Asked,
    AgentGone,
    LeaseDeadline,
    Signal,
}

/// Runs the supervisor; returns the status to exit with.
pub async fn supervise(grace: Duration, command: Vec<OsString>) -> io::Result<i32> {
    let control = std::os::unix::net::UnixStream::from(io::stdin().as_fd().try_clone_to_owned()?);
    control.set_nonblocking(true)?;
    let control = UnixStream::from_std(control)?;
    let (read, mut write) = control.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;

    let (program, arguments) = command
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command"))?;
    let mut child = match Command::new(program)
        .args(arguments)
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
    let group = Pid::from_raw(i32::try_from(pid).expect("pids fit in i32"));
    // The agent may be gone already; the checks below notice.
    let _ = write.write_all(format!("pid {pid}\n").as_bytes()).await;

    let mut deadline: Option<Instant> = None;
    let reason = loop {
        tokio::select! {
            status = child.wait() => {
                // The command ended by itself; what it left in its group goes too.
                let _ = killpg(group, Signal::SIGKILL);
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
        }
    };
    tracing::debug!(?reason, pid, "supervisor: stopping the command");
    let code = stop(&mut child, group, grace).await?;
    let _ = write.write_all(format!("exited {code}\n").as_bytes()).await;
    Ok(code)
}

/// SIGTERM to the command's group, then SIGKILL `grace` later if it still runs;
/// whatever is left in the group is killed either way.
async fn stop(child: &mut tokio::process::Child, group: Pid, grace: Duration) -> io::Result<i32> {
    let _ = killpg(group, Signal::SIGTERM);
    let status = match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => status?,
        Err(_) => {
            let _ = killpg(group, Signal::SIGKILL);
            child.wait().await?
        }
    };
    let _ = killpg(group, Signal::SIGKILL);
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
