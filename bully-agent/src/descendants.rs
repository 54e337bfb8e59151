//! The job's process tree where no cgroup can be had: the supervisor makes
//! itself the child subreaper (`PR_SET_CHILD_SUBREAPER`, Linux 3.4) of what the
//! command starts, so an orphan (a double-forked daemon, the child of a process
//! that exited) is re-parented to the supervisor instead of to init. While the
//! supervisor lives, every process of the job is therefore one of its
//! descendants, found in `/proc` by parent pid, whatever process group or
//! session it moved to. The orphans it adopts are its children: it reaps them
//! when they die.
//!
//! What this cannot do, and a cgroup can: once the supervisor itself is dead
//! (SIGKILLed together with the agent), the job's surviving processes are
//! re-parented to init and nothing finds them again; see the README.

use std::io;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// How often the tree is looked at again while it is being killed.
const POLL: Duration = Duration::from_millis(10);

/// Makes this process the child subreaper of its descendants.
pub fn become_subreaper() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from);
    #[cfg(not(target_os = "linux"))]
    return Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "a child subreaper needs Linux",
    ));
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    pid: i32,
    parent: i32,
    /// Dead, waiting for its parent to reap it (`Z`), or being torn down (`X`).
    dead: bool,
}

/// Every process in `/proc` (those that exit while it is read are skipped).
fn table() -> Vec<Entry> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so the
/// fields are counted from the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<Entry> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Entry {
        pid,
        parent,
        dead: state == "Z" || state == "X",
    })
}

/// The living descendants of `root`, at any depth.
pub fn descendants(root: i32) -> Vec<i32> {
    let table = table();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for entry in table.iter().filter(|entry| entry.parent == parent) {
            if !found.contains(&entry.pid) && entry.pid != root {
                frontier.push(entry.pid);
                if !entry.dead {
                    found.push(entry.pid);
                }
            }
        }
    }
    found
}

/// Sends `signal` to every living descendant of `root`; how many it reached.
pub fn signal(root: i32, signal: Signal) -> usize {
    descendants(root)
        .into_iter()
        .filter(|&pid| kill(Pid::from_raw(pid), signal).is_ok())
        .count()
}

/// Reaps this process's dead children but `keep` (the one a `tokio::process`
/// handle waits for, which must reap it itself): the orphans it adopted as
/// the subreaper. How many it reaped.
pub fn reap_adopted(keep: Option<i32>) -> usize {
    let me = i32::try_from(std::process::id()).expect("pids fit in i32");
    table()
        .into_iter()
        .filter(|entry| entry.parent == me && entry.dead && Some(entry.pid) != keep)
        .filter(|entry| waitpid(Pid::from_raw(entry.pid), Some(WaitPidFlag::WNOHANG)).is_ok())
        .count()
}

/// SIGKILL to every descendant of `root` (this process), again until none is
/// left, reaping the adopted ones; gives up after `patience` (a process stuck
/// in the kernel). Whether none is left.
pub async fn kill_all(root: i32, keep: Option<i32>, patience: Duration) -> bool {
    let give_up = tokio::time::Instant::now() + patience;
    loop {
        let killed = signal(root, Signal::SIGKILL);
        reap_adopted(keep);
        if killed == 0 && descendants(root).is_empty() {
            return true;
        }
        if tokio::time::Instant::now() >= give_up {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits up to `patience` for `root` (this process) to have no living
/// descendant, reaping the adopted ones; whether it has none.
pub async fn wait_none(root: i32, keep: Option<i32>, patience: Duration) -> bool {
    let give_up = tokio::time::Instant::now() + patience;
    loop {
        reap_adopted(keep);
        if descendants(root).is_empty() {
            return true;
        }
        if tokio::time::Instant::now() >= give_up {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_are_parsed() {
        let entry = parse_stat(42, "42 (a (b) c) S 7 42 42 0 -1").unwrap();
        assert_eq!((entry.pid, entry.parent, entry.dead), (42, 7, false));
        let entry = parse_stat(43, "43 (sh) Z 1 43 43 0 -1").unwrap();
        assert!(entry.dead);
        assert!(parse_stat(44, "44 garbage").is_none());
    }
}
