//! The machine's process table, read from `/proc`: what the tests look for
//! after a fault (a child that outlived its agent, anything left after the
//! end), and freezing a whole process tree the way a paused machine would
//! freeze it (SIGSTOP to every group in it, until every process in it stopped).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// A process as `/proc` shows it.
#[derive(Clone, Debug)]
pub(crate) struct Process {
    /// Its pid.
    pub(crate) pid: u32,
    /// Its parent's pid.
    pub(crate) parent: u32,
    /// Its process group.
    pub(crate) pgid: u32,
    /// Its state letter (`R`, `S`, `D`, `T` stopped, `t` traced, `Z` zombie...).
    pub(crate) state: char,
    /// Its command line, arguments joined by spaces (empty for a zombie).
    pub(crate) cmdline: String,
}

impl Process {
    /// Whether it no longer runs: stopped, or dead and not yet reaped.
    pub(crate) fn is_stopped_or_dead(&self) -> bool {
        matches!(self.state, 'T' | 't' | 'Z' | 'X')
    }
}

/// Every process on the machine, from `/proc` (those that exit while it is read
/// are skipped).
pub(crate) fn processes() -> Vec<Process> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state parent pgrp ...": comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|end| &stat[end + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        let (Some(state), Some(parent), Some(pgid)) = (
            fields.first().and_then(|s| s.chars().next()),
            fields.get(1).and_then(|s| s.parse().ok()),
            fields.get(2).and_then(|s| s.parse().ok()),
        ) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline"))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        found.push(Process {
            pid,
            parent,
            pgid,
            state,
            cmdline,
        });
    }
    found
}

/// The processes below `root` in `table` (children, their children...), not
/// `root` itself.
pub(crate) fn descendants(table: &[Process], root: u32) -> Vec<Process> {
    let mut below: BTreeSet<u32> = BTreeSet::from([root]);
    let mut found = Vec::new();
    // Parents come before children in no particular order: sweep until no new
    // one is found.
    loop {
        let before = found.len();
        for process in table {
            if !below.contains(&process.pid) && below.contains(&process.parent) {
                below.insert(process.pid);
                found.push(process.clone());
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// What [`freeze_tree`] stopped.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frozen {
    /// The process groups it sent SIGSTOP, `root`'s first.
    pub(crate) groups: Vec<u32>,
    /// Every process of the tree it saw, `root` included.
    pub(crate) pids: BTreeSet<u32>,
}

/// Stops `root`'s process group and the group of every process below `root`,
/// as a machine that pauses stops everything on it: `root`'s group first (so
/// that nothing in it starts another process), then the groups of its
/// descendants, again until every process of the tree shows as stopped (a
/// process forked a moment before its parent stopped may have moved to a group
/// of its own). Gives up after `patience` (a process in uninterruptible sleep
/// stops later; the caller's checks see what it wrote meanwhile).
pub(crate) fn freeze_tree(root: u32, patience: Duration) -> Frozen {
    let mut frozen = Frozen {
        groups: vec![root],
        pids: BTreeSet::from([root]),
    };
    let _ = killpg(pid(root), Signal::SIGSTOP);
    let give_up = Instant::now() + patience;
    loop {
        let table = processes();
        let tree = descendants(&table, root);
        let mut settled = table
            .iter()
            .filter(|p| p.pid == root)
            .all(Process::is_stopped_or_dead);
        for process in &tree {
            frozen.pids.insert(process.pid);
            if !frozen.groups.contains(&process.pgid) {
                let _ = killpg(pid(process.pgid), Signal::SIGSTOP);
                frozen.groups.push(process.pgid);
                settled = false;
            }
            settled &= process.is_stopped_or_dead();
        }
        if settled || Instant::now() >= give_up {
            return frozen;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// SIGCONT to each of `groups`.
pub(crate) fn thaw_groups(groups: &[u32]) {
    for &group in groups {
        let _ = killpg(pid(group), Signal::SIGCONT);
    }
}

fn pid(pid: u32) -> Pid {
    Pid::from_raw(i32::try_from(pid).expect("a pid fits in i32"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, parent: u32) -> Process {
        Process {
            pid,
            parent,
            pgid: pid,
            state: 'S',
            cmdline: String::new(),
        }
    }

    #[test]
    fn descendants_follow_the_parent_links_in_any_order() {
        // 10 -> 11 -> 12 -> 13, listed child first; 20 is not in the tree.
        let table = [
            process(13, 12),
            process(12, 11),
            process(20, 1),
            process(11, 10),
            process(10, 1),
        ];
        let mut below: Vec<u32> = descendants(&table, 10).iter().map(|p| p.pid).collect();
        below.sort_unstable();
        assert_eq!(below, [11, 12, 13]);
        assert!(descendants(&table, 13).is_empty());
    }

    #[test]
    fn a_frozen_tree_stops_and_thaws_with_its_children() {
        use std::os::unix::process::CommandExt;
        // A shell in a group of its own that starts a child in another group,
        // as the agent starts its supervisor and the supervisor its command.
        let mut shell = std::process::Command::new("bash")
            .args(["-c", "set -m; sleep 30 & wait"])
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("bash");
        let root = shell.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while descendants(&processes(), root).is_empty() {
            assert!(Instant::now() < deadline, "the shell never started sleep");
            std::thread::sleep(Duration::from_millis(10));
        }
        let frozen = freeze_tree(root, Duration::from_secs(5));
        let table = processes();
        let tree: Vec<&Process> = table
            .iter()
            .filter(|p| frozen.pids.contains(&p.pid))
            .collect();
        assert!(tree.len() >= 2, "the shell and its sleep: {tree:?}");
        assert!(tree.iter().all(|p| p.state == 'T'), "{tree:?}");
        assert!(
            frozen.groups.len() >= 2,
            "`set -m` put sleep in a group of its own: {frozen:?}"
        );
        thaw_groups(&frozen.groups);
        std::thread::sleep(Duration::from_millis(100));
        let running = processes()
            .into_iter()
            .filter(|p| frozen.pids.contains(&p.pid))
            .all(|p| p.state != 'T');
        for &group in &frozen.groups {
            let _ = killpg(pid(group), Signal::SIGKILL);
        }
        let _ = shell.wait();
        assert!(running, "every process runs again after the thaw");
    }
}
