//! The `[child]` table: how the agent runs, stops, restarts and contains its
//! command, with the floors and relations its values must respect.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::field;
use crate::error::ConfigError;

/// The least `child.grace_ms`: the time a command gets between SIGTERM and
/// SIGKILL. Below it SIGTERM means nothing: on a loaded machine a shell's
/// `trap`, or a flush, does not get to run before the SIGKILL.
pub const MIN_GRACE: Duration = Duration::from_millis(100);

/// The least `child.restart_delay_ms`: at most ten starts a second, so that a
/// command that exits at once (`true`) cannot turn the agent into a busy loop
/// (with a delay and a grace period of 0 it started 681 times in 5 s; see the
/// README), even with the failure back-off turned off.
pub const MIN_RESTART_DELAY: Duration = Duration::from_millis(100);

/// The least `child.backoff_ms`: a back-off shorter than a second ends before
/// another member could be elected, and is no back-off.
pub const MIN_BACKOFF: Duration = Duration::from_secs(1);

/// The `[child]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChildSection {
    #[serde(default = "ChildSection::grace_ms")]
    grace_ms: u64,
    #[serde(default)]
    on_exit: OnExit,
    #[serde(default = "ChildSection::restart_delay_ms")]
    restart_delay_ms: u64,
    #[serde(default = "ChildSection::failure_limit")]
    failure_limit: u32,
    #[serde(default = "ChildSection::min_runtime_ms")]
    min_runtime_ms: u64,
    #[serde(default = "ChildSection::backoff_ms")]
    backoff_ms: u64,
    #[serde(default = "ChildSection::max_backoff_ms")]
    max_backoff_ms: u64,
    #[serde(default)]
    containment: ContainmentMode,
    cgroup_parent: Option<PathBuf>,
}

impl ChildSection {
    fn grace_ms() -> u64 {
        1000
    }
    fn restart_delay_ms() -> u64 {
        1000
    }
    fn failure_limit() -> u32 {
        3
    }
    fn min_runtime_ms() -> u64 {
        1000
    }
    fn backoff_ms() -> u64 {
        10_000
    }
    fn max_backoff_ms() -> u64 {
        300_000
    }
}

impl Default for ChildSection {
    fn default() -> Self {
        ChildSection {
            grace_ms: ChildSection::grace_ms(),
            on_exit: OnExit::default(),
            restart_delay_ms: ChildSection::restart_delay_ms(),
            failure_limit: ChildSection::failure_limit(),
            min_runtime_ms: ChildSection::min_runtime_ms(),
            backoff_ms: ChildSection::backoff_ms(),
            max_backoff_ms: ChildSection::max_backoff_ms(),
            containment: ContainmentMode::default(),
            cgroup_parent: None,
        }
    }
}

/// What the agent does when the command exits by itself while this node leads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnExit {
    /// Run it again after `child.restart_delay_ms`, as long as this node leads
    /// (`systemd`'s `Restart=always`, a Kubernetes sidecar's loop).
    #[default]
    Restart,
    /// Resign the leadership so that another member runs it (with
    /// `preemption = "always"` a higher member takes the leadership back when it
    /// can: choose `"never"` to hand the work over for good).
    StepDown,
    /// Stop the agent, leaving with the command's exit status (`consul lock`).
    Exit,
}

/// How the job's whole process tree is held, so that stopping it stops every
/// process it started, also those that left its process group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContainmentMode {
    /// A cgroup (v2) of the job's own where the agent may create one, else the
    /// supervisor as a child subreaper; the log says which at start.
    #[default]
    Auto,
    /// A cgroup, or the agent refuses to start.
    Cgroup,
    /// The supervisor as a child subreaper, even where a cgroup could be made.
    Subreaper,
}

/// When runs that fail make the member step aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailurePolicy {
    /// Failed runs in a row that make the member step down (0: never).
    pub limit: u32,
    /// A run that ends by itself sooner than this after its start failed
    /// (a command that cannot start ends at once).
    pub min_runtime: Duration,
    /// The first back-off; each one after it, without a good run between,
    /// lasts twice as long as the one before.
    pub backoff: Duration,
    /// The longest back-off.
    pub max_backoff: Duration,
}

/// How the agent treats its command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildPolicy {
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// When the command exits by itself.
    pub on_exit: OnExit,
    /// Before a restart under [`OnExit::Restart`].
    pub restart_delay: Duration,
    /// The back-off after failed runs.
    pub failures: FailurePolicy,
}

/// Where the job's process tree is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainmentSetting {
    /// How.
    pub mode: ContainmentMode,
    /// The cgroup under which the agent creates the job's (`None`: the agent's
    /// own cgroup).
    pub cgroup_parent: Option<PathBuf>,
}

impl ChildSection {
    /// Checks the values; `base` resolves a relative `cgroup_parent`.
    pub(super) fn check(
        &self,
        base: &std::path::Path,
    ) -> Result<(ChildPolicy, ContainmentSetting), ConfigError> {
        let grace = Duration::from_millis(self.grace_ms);
        at_least(
            "child.grace_ms",
            grace,
            MIN_GRACE,
            "SIGTERM would mean nothing",
        )?;
        let restart_delay = Duration::from_millis(self.restart_delay_ms);
        at_least(
            "child.restart_delay_ms",
            restart_delay,
            MIN_RESTART_DELAY,
            "a command that exits at once would be restarted in a busy loop",
        )?;
        let backoff = Duration::from_millis(self.backoff_ms);
        let max_backoff = Duration::from_millis(self.max_backoff_ms);
        if self.failure_limit > 0 {
            at_least(
                "child.backoff_ms",
                backoff,
                MIN_BACKOFF,
                "it would end before another member could be elected",
            )?;
            if max_backoff < backoff {
                return Err(field(
                    "child.max_backoff_ms",
                    format!(
                        "{} ms is below child.backoff_ms ({} ms)",
                        self.max_backoff_ms, self.backoff_ms
                    ),
                ));
            }
        }
        if self.cgroup_parent.is_some() && self.containment == ContainmentMode::Subreaper {
            return Err(field(
                "child.cgroup_parent",
                "set, but child.containment = \"subreaper\" uses no cgroup",
            ));
        }
        let policy = ChildPolicy {
            grace,
            on_exit: self.on_exit,
            restart_delay,
            failures: FailurePolicy {
                limit: self.failure_limit,
                min_runtime: Duration::from_millis(self.min_runtime_ms),
                backoff,
                max_backoff,
            },
        };
        let containment = ContainmentSetting {
            mode: self.containment,
            cgroup_parent: self.cgroup_parent.as_ref().map(|path| base.join(path)),
        };
        Ok((policy, containment))
    }
}

fn at_least(
    name: &str,
    value: Duration,
    floor: Duration,
    because: &str,
) -> Result<(), ConfigError> {
    if value < floor {
        return Err(field(
            name,
            format!(
                "{} ms is below the least allowed, {} ms: {because}",
                value.as_millis(),
                floor.as_millis()
            ),
        ));
    }
    Ok(())
}
