//! What `/leader` answers and `bully-agent status` prints: who leads, the term,
//! this node's role, the members it hears, and the command.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A node's view, as `/leader` serves it (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// This node's id.
    pub node: u64,
    /// `leader`, `follower`, or `candidate` (no leader known: an election runs).
    pub role: String,
    /// The leader this node follows (itself when it leads).
    pub leader: Option<u64>,
    /// The term: the leader's, or the highest this node has seen.
    pub term: u64,
    /// The leadership's fencing token as the command gets it, when this node leads.
    pub fencing_token: Option<String>,
    /// Whether this node may run the command now (it leads and, with a quorum, its
    /// lease has more than the margin left).
    pub working: bool,
    /// Whether this node may stand for leader: `false` during a back-off after
    /// runs of the command that kept failing (`child.backoff_ms`).
    #[serde(default = "eligible_by_default")]
    pub eligible: bool,
    /// The other members.
    pub members: Vec<MemberStatus>,
    /// The command on this node.
    pub child: ChildStatus,
    /// The configuration: reloads applied and refused.
    #[serde(default)]
    pub config: ConfigStatus,
    /// Hand-overs asked of this node (`bully-agent handover`).
    #[serde(default)]
    pub handover: HandoverStatus,
    /// The job's health check on this node (`[health]`), if configured.
    #[serde(default)]
    pub health: Option<HealthStatus>,
}

/// The job's health checks on this node since its agent started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthStatus {
    /// Checks run.
    pub checks: u64,
    /// Checks that failed.
    pub failed: u64,
    /// Failures in a row now (0 after a healthy check).
    pub failures_in_a_row: u32,
    /// Times this member stepped aside because the checks kept failing.
    pub stepped_aside: u64,
    /// Why the last failed check failed.
    pub last_error: Option<String>,
}

/// The hand-overs asked of this node since its agent started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoverStatus {
    /// Requests received (SIGUSR1).
    pub requests: u64,
    /// Requests carried out: the node stepped down naming its successor.
    pub handed_over: u64,
    /// What the last request did, or why it was refused.
    pub last: Option<String>,
}

/// The configuration as the agent runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigStatus {
    /// The file.
    pub file: String,
    /// Reloads applied since the agent started (a reload that changed nothing
    /// counts too).
    pub reloads: u64,
    /// Reloads refused since the agent started.
    pub refused: u64,
    /// Why the last reload was refused, if the last one was.
    pub last_error: Option<String>,
    /// The key frames are signed with.
    pub signing_key: u32,
    /// Every key frames are accepted with.
    pub keys: Vec<u32>,
    /// Whether this node is a witness: it votes, never leads, and runs no
    /// command.
    #[serde(default)]
    pub witness: bool,
    /// The `name` label of `leader_election_master_status` in `/metrics`.
    #[serde(default)]
    pub lease_name: String,
}

/// One other member as this node hears it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberStatus {
    /// Its id.
    pub id: u64,
    /// Its address, as configured.
    pub address: String,
    /// Where it is sent to now: its address, or what its name resolved to
    /// (`None`: its name has not resolved yet, so it is unreachable).
    #[serde(default)]
    pub resolved: Option<String>,
    /// Added by a reload while its name did not resolve: it joins once it does.
    #[serde(default)]
    pub pending: bool,
    /// Milliseconds since this node last received a message from it (`None`:
    /// never since this agent started).
    pub last_heard_ms: Option<u64>,
}

/// The command on this node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildStatus {
    /// Whether it runs.
    pub running: bool,
    /// Its pid while it runs.
    pub pid: Option<u32>,
    /// Runs started since the agent started.
    pub starts: u64,
    /// Runs started again after the command exited by itself.
    pub restarts: u64,
    /// Runs in a row that failed (ended by themselves within
    /// `child.min_runtime_ms`), since the last back-off or good run.
    #[serde(default)]
    pub failures_in_a_row: u32,
    /// Back-offs entered since the agent started.
    #[serde(default)]
    pub backoffs: u64,
    /// What is left of the back-off, in milliseconds, during one.
    #[serde(default)]
    pub backoff_ms: Option<u64>,
    /// How the job's process tree is held: `cgroup PATH` or `subreaper`.
    #[serde(default)]
    pub containment: String,
}

fn eligible_by_default() -> bool {
    true
}

impl MemberStatus {
    /// Whether it was heard within `window`.
    pub fn heard_within(&self, window: Duration) -> bool {
        self.last_heard_ms
            .is_some_and(|ms| Duration::from_millis(ms) <= window)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.config.witness {
            writeln!(f, "node:    {} ({}, witness)", self.node, self.role)?;
        } else {
            writeln!(f, "node:    {} ({})", self.node, self.role)?;
        }
        match self.leader {
            Some(leader) => writeln!(f, "leader:  {leader} (term {})", self.term)?,
            None => writeln!(f, "leader:  none known (term {})", self.term)?,
        }
        if let Some(token) = &self.fencing_token {
            writeln!(f, "token:   {token}")?;
        }
        write!(f, "members:")?;
        for member in &self.members {
            match (member.last_heard_ms, &member.resolved) {
                (_, None) if member.pending => write!(
                    f,
                    " {} ({} does not resolve: joins once it does)",
                    member.id, member.address
                )?,
                (_, None) => write!(
                    f,
                    " {} ({} does not resolve: unreachable)",
                    member.id, member.address
                )?,
                (Some(ms), _) => write!(f, " {} (heard {ms} ms ago)", member.id)?,
                (None, _) => write!(f, " {} (not heard)", member.id)?,
            }
        }
        writeln!(f)?;
        match (self.child.running, self.child.pid) {
            (true, Some(pid)) => write!(f, "command: running, pid {pid}")?,
            (true, None) => write!(f, "command: starting")?,
            (false, _) => write!(f, "command: not running")?,
        }
        write!(
            f,
            " ({} starts, {} restarts)",
            self.child.starts, self.child.restarts
        )?;
        if let Some(ms) = self.child.backoff_ms {
            write!(
                f,
                "\nbackoff: not eligible for another {ms} ms (the command kept failing)"
            )?;
        } else if self.child.failures_in_a_row > 0 {
            write!(
                f,
                "\nfailed:  {} runs in a row",
                self.child.failures_in_a_row
            )?;
        }
        if !self.child.containment.is_empty() {
            write!(f, "\ntree:    {}", self.child.containment)?;
        }
        if !self.config.file.is_empty() {
            write!(
                f,
                "\nconfig:  {} ({} reloads, {} refused; signing with key {}, accepting {:?})",
                self.config.file,
                self.config.reloads,
                self.config.refused,
                self.config.signing_key,
                self.config.keys
            )?;
        }
        if let Some(error) = &self.config.last_error {
            write!(f, "\nrefused: {error}")?;
        }
        Ok(())
    }
}

/// Asks the endpoint at `address` (`host:port`) for its status.
pub fn fetch(address: &str) -> Result<Status, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let url = format!("http://{address}/leader");
    agent
        .get(&url)
        .call()
        .map_err(|error| format!("{url}: {error}"))?
        .body_mut()
        .read_json::<Status>()
        .map_err(|error| format!("{url}: not a bully-agent status: {error}"))
}
