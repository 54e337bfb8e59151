//! How the job's whole process tree is held, so that stopping the job stops
//! every process it started, also those that left its process group (`setsid`,
//! `setpgid`, a double fork).
//!
//! - **A cgroup of the job's own** where the agent may create one
//!   ([`crate::cgroup`]): `bully-agent-CLUSTER-ID-PID` under `child.cgroup_parent`
//!   or, by default, under the agent's own cgroup. Under systemd with
//!   `Delegate=yes` the service owns its cgroup, so the agent's own cgroup is
//!   writable and the job's is a child of it; the agent and the supervisor stay
//!   where they are (no controller is enabled, so the rule against processes in
//!   a cgroup with controlled children does not apply). The agent proves at
//!   start that it can create one and move a process into it, then creates it
//!   for each run of the command, and it is removed when the run ends. While
//!   it exists it is recorded in `data_dir/job-cgroup`: should the agent and
//!   its supervisor die together, the next start of the agent kills what the
//!   cgroup still holds before it does anything else.
//! - **Else the supervisor as child subreaper** ([`crate::descendants`]): it
//!   adopts the job's orphans and kills every descendant it finds. The agent
//!   is a child subreaper too, so that what a supervisor killed on its own
//!   leaves behind comes to the agent, which kills it after the run. Nothing
//!   holds the tree once agent and supervisor are both dead.
//!
//! [`Containment`] is the agent's side (choose at start, clean up what a
//! previous run left, a cgroup per run); [`JobTree`] the supervisor's (signal,
//! wait for, kill, and remove the tree).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cgroup::{self, Cgroup};
use crate::config::{ContainmentMode, ContainmentSetting};
use crate::descendants;

/// How long a kill may take before it is reported as failed: SIGKILL ends a
/// process at once unless it is stuck in the kernel (a hung NFS read).
pub const KILL_PATIENCE: Duration = Duration::from_secs(5);

/// The file in the data directory that names the job's cgroup while it exists.
pub const RECORD: &str = "job-cgroup";

/// The agent's side: the mechanism chosen at start.
#[derive(Debug)]
pub struct Containment {
    cgroup: Option<Cgroup>,
    record: PathBuf,
}

impl Containment {
    /// Chooses the mechanism for this run, after the data directory is locked
    /// and before anything else: first kills what a previous run's job left in
    /// the cgroup recorded there, then creates this run's cgroup (unless
    /// `subreaper` is asked for). `name` names the cgroup. An error only when
    /// `containment = "cgroup"` and none can be made.
    pub async fn prepare(
        setting: &ContainmentSetting,
        data_dir: &Path,
        name: &str,
    ) -> Result<Containment, String> {
        let record = data_dir.join(RECORD);
        kill_leftovers(&record).await?;
        let cgroup = match setting.mode {
            ContainmentMode::Subreaper => None,
            ContainmentMode::Auto | ContainmentMode::Cgroup => {
                match create(setting.cgroup_parent.as_deref(), name) {
                    Ok(cgroup) => Some(cgroup),
                    Err(reason) if setting.mode == ContainmentMode::Auto => {
                        tracing::warn!(
                            %reason,
                            "no cgroup for the job: the supervisor holds its process tree as \
                             child subreaper (what that cannot do: see the README)"
                        );
                        None
                    }
                    Err(reason) => {
                        return Err(format!(
                            "`child.containment` = \"cgroup\": no cgroup for the job: {reason}"
                        ));
                    }
                }
            }
        };
        match &cgroup {
            // Made for each run; none between two.
            Some(cgroup) => cgroup
                .remove()
                .map_err(|error| format!("cannot remove {}: {error}", cgroup.path().display()))?,
            None => descendants::become_subreaper()
                .map_err(|error| format!("cannot become a child subreaper: {error}"))?,
        }
        let containment = Containment { cgroup, record };
        tracing::info!(containment = %containment.describe(), "the job's process tree");
        Ok(containment)
    }

    /// `cgroup PATH` or `subreaper`, as the status shows it.
    pub fn describe(&self) -> String {
        match &self.cgroup {
            Some(cgroup) => format!("cgroup {}", cgroup.path().display()),
            None => "subreaper".to_owned(),
        }
    }

    /// Before a run of the command: creates the job's cgroup (and records it),
    /// if the tree is held by one.
    pub fn open_for_run(&self) -> Result<Option<Cgroup>, String> {
        let Some(cgroup) = &self.cgroup else {
            return Ok(None);
        };
        let path = cgroup.path();
        write_record(&self.record, path)
            .map_err(|error| format!("{}: {error}", self.record.display()))?;
        let parent = path.parent().unwrap_or(Path::new("/"));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        Cgroup::create(parent, &name)
            .map(Some)
            .map_err(|error| format!("cannot create the job's cgroup {}: {error}", path.display()))
    }

    /// After a run, once its supervisor has exited (which removes the cgroup
    /// when all is well): kills what is left and removes the cgroup and its
    /// record.
    ///
    /// Without a cgroup, the agent's descendants at this point (its supervisor
    /// is reaped) are the job's processes its supervisor, killed on its own,
    /// left behind: the agent adopted them as subreaper, and kills them.
    pub async fn after_run(&self, cgroup: Option<Cgroup>) {
        let Some(cgroup) = cgroup else {
            let agent = own_pid();
            let left = descendants::descendants(agent).len();
            if left > 0 {
                tracing::warn!(
                    processes = left,
                    "processes of the job outlived its supervisor: killing them"
                );
                if !descendants::kill_all(agent, None, KILL_PATIENCE).await {
                    tracing::error!("processes of the job outlived SIGKILL");
                }
            }
            return;
        };
        if cgroup.is_populated() {
            tracing::warn!(
                cgroup = %cgroup.path().display(),
                "processes of the job outlived its supervisor: killing them"
            );
            if !cgroup.kill(KILL_PATIENCE).await {
                tracing::error!(cgroup = %cgroup.path().display(), "processes of the job outlived SIGKILL");
                return;
            }
        }
        if let Err(error) = cgroup.remove() {
            tracing::warn!(%error, cgroup = %cgroup.path().display(), "cannot remove the job's cgroup");
            return;
        }
        let _ = std::fs::remove_file(&self.record);
    }
}

/// Creates the job's cgroup `name` under `parent` (default: the agent's own
/// cgroup), and proves a process can be moved into it: a write to its
/// `cgroup.procs` also needs write access where the process comes from.
fn create(parent: Option<&Path>, name: &str) -> Result<Cgroup, String> {
    let parent = match parent {
        Some(parent) => parent.to_owned(),
        None => cgroup::own_dir()?,
    };
    let cgroup = Cgroup::create(&parent, name)
        .map_err(|error| format!("cannot create {}: {error}", parent.join(name).display()))?;
    if let Err(reason) = probe(&cgroup) {
        let _ = cgroup.remove();
        return Err(reason);
    }
    Ok(cgroup)
}

/// Runs `bully-agent --version` through `exec-child --cgroup`, the way the
/// command will be run: it must join the cgroup first.
fn probe(cgroup: &Cgroup) -> Result<(), String> {
    let mut agent =
        crate::own_binary::own_binary().map_err(|error| format!("the agent's binary: {error}"))?;
    let output = agent
        .arg("exec-child")
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--cgroup")
        .arg(cgroup.path())
        .arg("--")
        .arg("/proc/self/exe")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|error| format!("cannot run the agent's binary: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

fn write_record(record: &Path, cgroup: &Path) -> io::Result<()> {
    // No fsync: a cgroup does not outlive a reboot, and neither need its record.
    let temporary = record.with_extension("tmp");
    std::fs::write(&temporary, format!("{}\n", cgroup.display()))?;
    std::fs::rename(&temporary, record)
}

/// The cgroup a previous run recorded, if any: everything in it is killed and
/// it is removed, before this run starts anything.
async fn kill_leftovers(record: &Path) -> Result<(), String> {
    let text = match std::fs::read_to_string(record) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(format!("{}: {error}", record.display())),
    };
    let path = PathBuf::from(text.trim_end_matches('\n'));
    if let Ok(cgroup) = Cgroup::open(&path) {
        let left = cgroup.processes().len();
        if !cgroup.kill(KILL_PATIENCE).await {
            return Err(format!(
                "{}: processes of a previous run's job outlive SIGKILL; it is not safe to start \
                 another",
                path.display()
            ));
        }
        if left > 0 {
            tracing::warn!(
                processes = left,
                cgroup = %path.display(),
                "killed what a previous run's job left (its agent and supervisor died together)"
            );
        }
        cgroup
            .remove()
            .map_err(|error| format!("cannot remove {}: {error}", path.display()))?;
    }
    std::fs::remove_file(record).map_err(|error| format!("{}: {error}", record.display()))
}

/// The supervisor's side: the job's tree, by cgroup or as its subreaper.
#[derive(Debug)]
pub enum JobTree {
    /// Every process in the cgroup.
    Cgroup(Cgroup),
    /// Every descendant of the supervisor, its child subreaper.
    Descendants,
}

impl JobTree {
    /// In the supervisor, before the command starts: the cgroup the agent
    /// made, or this process as the subreaper.
    pub fn for_supervisor(cgroup: Option<&Path>) -> io::Result<JobTree> {
        match cgroup {
            Some(path) => Ok(JobTree::Cgroup(Cgroup::open(path)?)),
            None => {
                descendants::become_subreaper()?;
                Ok(JobTree::Descendants)
            }
        }
    }

    /// Sends `signal` to every process of the job.
    pub fn signal(&self, signal: Signal) {
        match self {
            JobTree::Cgroup(cgroup) => {
                cgroup.signal(signal);
            }
            JobTree::Descendants => {
                descendants::signal(own_pid(), signal);
            }
        }
    }

    /// Reaps the orphans adopted as subreaper, but `keep` (the command, which
    /// its handle reaps).
    pub fn reap_adopted(&self, keep: Option<i32>) {
        if let JobTree::Descendants = self {
            descendants::reap_adopted(keep);
        }
    }

    /// Waits up to `patience` for no process of the job to be left.
    pub async fn wait_empty(&self, keep: Option<i32>, patience: Duration) -> bool {
        match self {
            JobTree::Cgroup(cgroup) => cgroup.wait_empty(patience).await,
            JobTree::Descendants => descendants::wait_none(own_pid(), keep, patience).await,
        }
    }

    /// Kills every process of the job; whether none is left.
    pub async fn kill_all(&self, keep: Option<i32>) -> bool {
        let gone = match self {
            JobTree::Cgroup(cgroup) => cgroup.kill(KILL_PATIENCE).await,
            JobTree::Descendants => descendants::kill_all(own_pid(), keep, KILL_PATIENCE).await,
        };
        if !gone {
            tracing::error!("supervisor: processes of the job outlived SIGKILL");
        }
        gone
    }

    /// Removes the cgroup, once the job is gone (the agent makes one per run).
    pub fn remove(&self) {
        if let JobTree::Cgroup(cgroup) = self {
            let _ = cgroup.remove();
        }
    }
}

fn own_pid() -> i32 {
    i32::try_from(std::process::id()).expect("pids fit in i32")
}
