//! cgroup v2, as far as the agent needs it to hold a job's whole process tree:
//! where the unified hierarchy is mounted (`/proc/self/mountinfo`), which cgroup
//! this process is in (`/proc/self/cgroup`, the `0::` line), and a leaf cgroup
//! to create, join, signal, kill and remove.
//!
//! A process cannot leave its cgroup by `setsid`, `setpgid` or a double fork:
//! only a write to some `cgroup.procs`, which needs write access to the cgroups
//! involved. So signalling every member of the job's cgroup reaches every
//! process the job started, and `cgroup.kill` (Linux 5.14) kills them all at
//! once, forks in flight included. No controller is enabled anywhere: the leaf
//! needs none, so the rule that a cgroup with controllers for its children holds
//! no processes of its own never applies.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How often the emptiness of a cgroup is polled.
const POLL: Duration = Duration::from_millis(10);

/// A cgroup (v2) directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
}

/// Where the unified (v2) hierarchy is mounted, and which of its directories
/// is the mount's root: from `/proc/self/mountinfo`.
pub fn mount() -> io::Result<Option<(PathBuf, String)>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")?;
    Ok(parse_mountinfo(&text))
}

/// The cgroup2 mount in `mountinfo` text: its mount point and its root.
fn parse_mountinfo(text: &str) -> Option<(PathBuf, String)> {
    text.lines().find_map(|line| {
        // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = unescape(fields.nth(3)?);
        let mount_point = unescape(fields.next()?);
        Some((PathBuf::from(mount_point), root))
    })
}

/// mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)));
        match octal {
            Some(digits) => {
                let value = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup in the unified hierarchy (`/system.slice/x.service`),
/// from `/proc/self/cgroup`.
pub fn own_path() -> io::Result<Option<String>> {
    let text = std::fs::read_to_string("/proc/self/cgroup")?;
    Ok(text
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::to_owned))
}

/// The directory of this process's own cgroup, or why there is none.
pub fn own_dir() -> Result<PathBuf, String> {
    let (mount_point, root) = mount()
        .map_err(|error| format!("/proc/self/mountinfo: {error}"))?
        .ok_or("no cgroup2 file system is mounted")?;
    let own = own_path()
        .map_err(|error| format!("/proc/self/cgroup: {error}"))?
        .ok_or("this process is in no cgroup v2 (no `0::` line in /proc/self/cgroup)")?;
    // Inside a cgroup namespace both are relative to the namespace's root.
    let relative = own
        .strip_prefix(root.trim_end_matches('/'))
        .ok_or_else(|| format!("the cgroup {own} lies outside the cgroup2 mount's root {root}"))?;
    Ok(mount_point.join(relative.trim_start_matches('/')))
}

impl Cgroup {
    /// The cgroup at `path`, which must exist.
    pub fn open(path: &Path) -> io::Result<Cgroup> {
        if path.join("cgroup.procs").is_file() {
            Ok(Cgroup {
                path: path.to_owned(),
            })
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a cgroup v2 directory", path.display()),
            ))
        }
    }

    /// Creates the cgroup `name` under `parent` (an existing one is used as it
    /// is: the caller empties it).
    pub fn create(parent: &Path, name: &str) -> io::Result<Cgroup> {
        let path = parent.join(name);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
        Cgroup::open(&path)
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the calling process into this cgroup (its children follow it).
    pub fn join_self(&self) -> io::Result<()> {
        std::fs::write(self.path.join("cgroup.procs"), "0\n")
    }

    /// Whether any process is in it or in a cgroup below it.
    pub fn is_populated(&self) -> bool {
        match std::fs::read_to_string(self.path.join("cgroup.events")) {
            Ok(events) => events.lines().any(|line| line.trim() == "populated 1"),
            // Gone: nothing is in it.
            Err(_) => false,
        }
    }

    /// The processes in it and in the cgroups below it.
    pub fn processes(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        collect_processes(&self.path, &mut pids);
        pids
    }

    /// Sends `signal` to every process in it; how many it reached.
    pub fn signal(&self, signal: Signal) -> usize {
        self.processes()
            .into_iter()
            .filter(|&pid| kill(Pid::from_raw(pid), signal).is_ok())
            .count()
    }

    /// Kills every process in it (`cgroup.kill`, or SIGKILL to each member
    /// until none is left where the kernel has no `cgroup.kill`), and waits up
    /// to `patience` for it to be empty. Whether it is.
    pub async fn kill(&self, patience: Duration) -> bool {
        if !self.is_populated() {
            return true;
        }
        if std::fs::write(self.path.join("cgroup.kill"), "1\n").is_err() {
            return self.kill_by_signals(patience).await;
        }
        self.wait_empty(patience).await
    }

    /// The way to kill them without `cgroup.kill` (before Linux 5.14): SIGKILL
    /// to every member, again and again, until none is left; a process forked
    /// in between is in the cgroup too, and the next round finds it.
    pub async fn kill_by_signals(&self, patience: Duration) -> bool {
        let give_up = tokio::time::Instant::now() + patience;
        loop {
            self.signal(Signal::SIGKILL);
            if !self.is_populated() {
                return true;
            }
            if tokio::time::Instant::now() >= give_up {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits up to `patience` for no process to be left in it; whether none is.
    pub async fn wait_empty(&self, patience: Duration) -> bool {
        let give_up = tokio::time::Instant::now() + patience;
        while self.is_populated() {
            if tokio::time::Instant::now() >= give_up {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
        true
    }

    /// Removes it and every cgroup below it (they must be empty of
    /// processes). Already gone is fine.
    pub fn remove(&self) -> io::Result<()> {
        remove_tree(&self.path)
    }
}

fn collect_processes(dir: &Path, pids: &mut Vec<i32>) {
    if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        pids.extend(
            text.lines()
                .filter_map(|line| line.trim().parse::<i32>().ok()),
        );
    }
    for child in subdirectories(dir) {
        collect_processes(&child, pids);
    }
}

fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default()
}

/// A cgroup directory holds only the kernel's files, which go with it: rmdir
/// the children first, then the directory.
fn remove_tree(dir: &Path) -> io::Result<()> {
    for child in subdirectories(dir) {
        remove_tree(&child)?;
    }
    match std::fs::remove_dir(dir) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_among_v1_mounts() {
        let text = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
";
        assert_eq!(
            parse_mountinfo(text),
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/".to_owned()))
        );
        assert_eq!(
            parse_mountinfo("31 23 0:28 / /x rw - tmpfs tmpfs rw\n"),
            None
        );
    }

    #[test]
    fn escaped_mount_points_are_decoded() {
        let text = "41 31 0:38 /a\\040b /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            parse_mountinfo(text),
            Some((PathBuf::from("/mnt/my cgroups"), "/a b".to_owned()))
        );
        assert_eq!(unescape("back\\134slash\\"), "back\\slash\\");
    }
}
