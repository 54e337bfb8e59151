//! `bully-agent reload --config FILE`: finds the agent that runs with that
//! file's `data_dir` by the pid file it keeps there (`agent.pid`, written
//! once it holds the directory's lock), sends it SIGHUP, and, when `listen`
//! is set, waits for the agent's endpoint to say whether it applied the
//! configuration or refused it.
//!
//! A pid file rather than a request to the endpoint: the endpoint answers
//! anyone who reaches its port, and a reload must need the rights to signal
//! the agent (its user, or root), as `systemctl reload` does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::config;
use crate::status::{ConfigStatus, fetch};

/// The pid file's name inside the data directory.
pub const PID_FILE: &str = "agent.pid";

/// How long `reload` waits for the agent's endpoint to report the outcome.
pub const WAIT: Duration = Duration::from_secs(10);

/// Writes this process's pid into `data_dir/agent.pid` (replaced atomically).
/// Call it only while holding the data directory's lock.
pub fn write_pid_file(data_dir: &Path) -> std::io::Result<()> {
    let path = data_dir.join(PID_FILE);
    let partial = data_dir.join(format!("{PID_FILE}.new"));
    std::fs::write(&partial, format!("{}\n", std::process::id()))?;
    std::fs::rename(&partial, &path)
}

/// Removes the pid file when the agent leaves (it would name a pid that may be
/// reused).
pub fn remove_pid_file(data_dir: &Path) {
    let _ = std::fs::remove_file(data_dir.join(PID_FILE));
}

/// The pid of the agent running with `data_dir`, checked against `/proc`.
pub fn find_agent(data_dir: &Path) -> Result<u32, String> {
    let path = data_dir.join(PID_FILE);
    let text = std::fs::read_to_string(&path).map_err(|error| {
        format!(
            "{}: {error}: is an agent running with data_dir {}?",
            path.display(),
            data_dir.display()
        )
    })?;
    let pid: u32 = text
        .trim()
        .parse()
        .map_err(|_| format!("{}: {:?} is not a pid", path.display(), text.trim()))?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).map_err(|_| {
        format!(
            "{}: process {pid} does not exist: the agent is not running (it left without \
             removing its pid file)",
            path.display()
        )
    })?;
    let mut args = cmdline.split(|&byte| byte == 0);
    let program = args.next().map(String::from_utf8_lossy).unwrap_or_default();
    let runs = args.any(|arg| arg == b"run");
    if !program.ends_with("bully-agent") || !runs {
        return Err(format!(
            "{}: process {pid} is {program:?}, not `bully-agent run` (a stale pid file)",
            path.display()
        ));
    }
    Ok(pid)
}

/// `bully-agent reload`: signals the agent, and reports what its endpoint says
/// (0: applied; 1: refused, or no answer).
pub fn reload(config_path: &Path) -> Result<i32, String> {
    ask_agent(
        config_path,
        Signal::SIGHUP,
        |_| Ok(()),
        |status| status.config.clone(),
        outcome,
        "its log says whether it applied the file",
    )
}

/// Sends `signal` to the agent running with `config_path`'s `data_dir`,
/// once `prepare` has done what the signal reads (given the data directory),
/// and, when `listen` is set, waits (at most [`WAIT`]) for its endpoint's
/// view of the request, `part` of its status, to change from what it was
/// into an `outcome`. Without `listen`, says that `log_says` and returns 0.
pub fn ask_agent<T>(
    config_path: &Path,
    signal: Signal,
    prepare: impl FnOnce(&Path) -> Result<(), String>,
    part: impl Fn(&crate::status::Status) -> T,
    outcome: impl Fn(&T, &T) -> Option<Result<i32, String>>,
    log_says: &str,
) -> Result<i32, String> {
    let data_dir: PathBuf =
        config::read_data_dir(config_path).map_err(|error| error.to_string())?;
    let pid = find_agent(&data_dir)?;
    let endpoint = config::read_listen(config_path)
        .map_err(|error| error.to_string())?
        .map(|address| address.to_string());
    let before = endpoint
        .as_deref()
        .and_then(|endpoint| fetch(endpoint).ok())
        .map(|status| part(&status));
    prepare(&data_dir)?;
    let agent =
        Pid::from_raw(i32::try_from(pid).map_err(|_| format!("pid {pid} is out of range"))?);
    kill(agent, signal).map_err(|error| format!("cannot signal the agent (pid {pid}): {error}"))?;
    let (Some(endpoint), Some(before)) = (endpoint, before) else {
        println!("sent {signal} to bully-agent (pid {pid}); {log_says}");
        return Ok(0);
    };
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let Ok(now) = fetch(&endpoint) else { continue };
        if let Some(verdict) = outcome(&before, &part(&now)) {
            return verdict;
        }
    }
    Err(format!(
        "sent {signal} to bully-agent (pid {pid}), but its endpoint {endpoint} reported \
         nothing within {} s: see its log",
        WAIT.as_secs()
    ))
}

/// What the endpoint's change from `before` to `now` says, once it says
/// something.
fn outcome(before: &ConfigStatus, now: &ConfigStatus) -> Option<Result<i32, String>> {
    if now.reloads > before.reloads {
        println!(
            "reloaded {} (reload {}): signing with key {}, accepting {:?}",
            now.file, now.reloads, now.signing_key, now.keys
        );
        Some(Ok(0))
    } else if now.refused > before.refused {
        Some(Err(format!(
            "the agent refused the configuration and keeps running the previous one: {}",
            now.last_error.as_deref().unwrap_or("(no reason given)")
        )))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_file_names_this_process_and_a_stale_one_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            find_agent(dir.path())
                .unwrap_err()
                .contains("is an agent running")
        );
        write_pid_file(dir.path()).unwrap();
        // This test binary runs, but it is not `bully-agent run`.
        let error = find_agent(dir.path()).unwrap_err();
        assert!(error.contains("not `bully-agent run`"), "{error}");
        std::fs::write(dir.path().join(PID_FILE), "4194305\n").unwrap();
        assert!(
            find_agent(dir.path())
                .unwrap_err()
                .contains("does not exist")
        );
        std::fs::write(dir.path().join(PID_FILE), "nonsense").unwrap();
        assert!(find_agent(dir.path()).unwrap_err().contains("not a pid"));
        remove_pid_file(dir.path());
        assert!(!dir.path().join(PID_FILE).exists());
    }

    #[test]
    fn the_outcome_is_read_from_the_counters() {
        let before = ConfigStatus::default();
        assert!(outcome(&before, &before).is_none());
        let applied = ConfigStatus {
            reloads: 1,
            ..ConfigStatus::default()
        };
        assert_eq!(outcome(&before, &applied), Some(Ok(0)));
        let refused = ConfigStatus {
            refused: 1,
            last_error: Some("`timing.heartbeat_ms`: cannot change".to_owned()),
            ..ConfigStatus::default()
        };
        assert!(
            outcome(&before, &refused)
                .unwrap()
                .unwrap_err()
                .contains("heartbeat_ms")
        );
    }
}
