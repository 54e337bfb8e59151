//! The processes of one test's job, found by a marker in their environment: the
//! test starts the agent with `BULLY_TEST_MARK=<unique>`, which the supervisor,
//! the command and everything the command starts inherit, whatever process
//! group or session they move to and whoever their parent becomes. The agent's
//! own processes (the agent, its supervisor: the agent's binary) are left out.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::cluster::AGENT;

/// The variable that carries the marker.
pub(crate) const MARK: &str = "BULLY_TEST_MARK";

/// A process of the job, as `/proc/PID/stat` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Marked {
    pub(crate) pid: i32,
    pub(crate) parent: i32,
    pub(crate) group: i32,
    pub(crate) session: i32,
    /// Its command line, arguments joined by spaces.
    pub(crate) cmdline: String,
}

/// A marker no other test uses.
pub(crate) fn new_mark(name: &str) -> String {
    format!("{name}-{}-{:?}", std::process::id(), Instant::now())
}

/// The living processes carrying `mark`, but the agent's binary.
pub(crate) fn marked(mark: &str) -> Vec<Marked> {
    let needle = format!("{MARK}={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A zombie's environment reads empty: the dead are not counted.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !environ
            .split(|&byte| byte == 0)
            .any(|variable| variable == needle.as_bytes())
        {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline"))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        if cmdline.starts_with(AGENT) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(fields) = stat.rfind(')').map(|end| &stat[end + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = fields.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        let number = |index: usize| fields.get(index).and_then(|s| s.parse().ok());
        let (Some(parent), Some(group), Some(session)) = (number(1), number(2), number(3)) else {
            continue;
        };
        found.push(Marked {
            pid,
            parent,
            group,
            session,
            cmdline: cmdline.trim_end().to_owned(),
        });
    }
    found
}

/// Waits up to `patience` for `check` to accept the marked processes; returns
/// them, or `Err` with the last ones seen.
pub(crate) fn wait_marked(
    mark: &str,
    patience: Duration,
    mut check: impl FnMut(&[Marked]) -> bool,
) -> Result<Vec<Marked>, Vec<Marked>> {
    let give_up = Instant::now() + patience;
    loop {
        let found = marked(mark);
        if check(&found) {
            return Ok(found);
        }
        if Instant::now() >= give_up {
            return Err(found);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILL to every marked process: the cleanup after a test that proves
/// some survive.
pub(crate) fn kill_marked(mark: &str) {
    for _ in 0..3 {
        for process in marked(mark) {
            let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
