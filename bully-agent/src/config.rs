//! The configuration file: its TOML schema, and the checks that turn it into
//! [`Settings`] before anything binds.
//!
//! ```toml
//! cluster = 7                 # cluster id: frames of other clusters are refused
//! id = 1                      # this node; must be one of `members`
//! data_dir = "data/1"         # durable state (relative paths: to this file)
//! secret_file = "secret"      # or secret_env = "BULLY_SECRET"; never on the command line
//!                             # (a file only its owner may read: chmod 600)
//! algorithm = "classic"       # classic | modified | ring
//! quorum = "majority"         # majority (default) | none | a number of members
//! preemption = "always"       # always | never
//! listen = "127.0.0.1:9101"   # optional: /leader, /healthz, /metrics
//! lease_name = "nightly"      # /metrics' leader_election_master_status{name}
//!                             # (default: bully-agent-CLUSTER)
//!
//! [timing]
//! heartbeat_ms = 200
//! leader_timeout_ms = 3000
//!
//! [child]
//! grace_ms = 1000             # SIGTERM, then SIGKILL this much later (100 or more)
//! on_exit = "restart"         # restart | step-down | exit
//! failure_limit = 3           # quick failures in a row before stepping aside
//! containment = "auto"        # the job's process tree: auto | cgroup | subreaper
//!
//! [health]                    # optional: see `health`
//! command = ["/usr/local/bin/check-job"]
//!
//! [[members]]
//! id = 1
//! address = "10.0.0.1:7070"   # IPv4, [IPv6]:port, or host:port (resolved while running)
//! witness = false             # true: votes toward the quorum, never leads, runs no command
//! ```
//!
//! What a reload may change, and what it may not, is [`crate::reload`]'s.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Key, SetupError};
use bully_core::{Algorithm, Config, Node, NodeId, Preemption, Quorum};
use serde::Deserialize;

use crate::error::ConfigError;

mod child;
mod health;
mod members;
mod secret;
#[cfg(test)]
mod tests;

pub use child::{
    ChildPolicy, ContainmentMode, ContainmentSetting, FailurePolicy, MIN_BACKOFF, MIN_GRACE,
    MIN_RESTART_DELAY, OnExit,
};
pub use health::{HealthCheck, HealthPolicy, MIN_HEALTH_INTERVAL};
pub use members::{Address, MIN_RESOLVE_INTERVAL, Member, NamesPolicy};
pub use secret::{CREDENTIALS_DIRECTORY, KeySecret, MAX_KEYS, MIN_DISTINCT_BYTES, SINGLE_KEY_ID};

use child::ChildSection;
use health::HealthSection;
use members::{MemberEntry, NamesSection, check_members, witnesses};
use secret::{KeyEntry, SecretSource, read_keys};

/// The file as written: every key optional where a default makes sense, and
/// unknown keys refused (a misspelt key must not silently fall back to a default).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    cluster: u64,
    id: u64,
    data_dir: PathBuf,
    secret_file: Option<PathBuf>,
    secret_env: Option<String>,
    secret_credential: Option<String>,
    #[serde(default)]
    keys: Vec<KeyEntry>,
    #[serde(default = "File::secret_file_mode_check")]
    secret_file_mode_check: bool,
    #[serde(default)]
    algorithm: AlgorithmName,
    #[serde(default)]
    quorum: QuorumSetting,
    #[serde(default)]
    preemption: PreemptionName,
    listen: Option<SocketAddr>,
    bind: Option<SocketAddr>,
    lease_name: Option<String>,
    #[serde(default)]
    timing: Timing,
    #[serde(default)]
    child: ChildSection,
    #[serde(default)]
    names: NamesSection,
    health: Option<HealthSection>,
    members: Vec<MemberEntry>,
}

impl File {
    fn secret_file_mode_check() -> bool {
        true
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AlgorithmName {
    #[default]
    Classic,
    Modified,
    Ring,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PreemptionName {
    #[default]
    Always,
    Never,
}

/// `"majority"`, `"none"`, or a number of members.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum QuorumSetting {
    Named(String),
    Size(usize),
}

impl Default for QuorumSetting {
    fn default() -> Self {
        QuorumSetting::Named("majority".to_owned())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Timing {
    #[serde(default = "Timing::heartbeat_ms")]
    heartbeat_ms: u64,
    #[serde(default = "Timing::leader_timeout_ms")]
    leader_timeout_ms: u64,
    #[serde(default = "Timing::max_message_delay_ms")]
    max_message_delay_ms: u64,
    #[serde(default = "Timing::max_processing_ms")]
    max_processing_ms: u64,
    lease_margin_ms: Option<u64>,
}

impl Timing {
    fn heartbeat_ms() -> u64 {
        200
    }
    /// Three seconds: the lease (the leader timeout less a message delay) then
    /// outlasts the default lease margin (the 1 s grace period and 250 ms) by
    /// about 1.6 s, eight heartbeat intervals, so that under 30 % loss on every
    /// link a lease lapses, and the job restarts, less than once a minute
    /// (`bully-sim/tests/scenarios/lossy_lease.rs`); with 2 s it lapsed about four times a
    /// minute among three members.
    fn leader_timeout_ms() -> u64 {
        3000
    }
    fn max_message_delay_ms() -> u64 {
        50
    }
    fn max_processing_ms() -> u64 {
        20
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat_ms: Timing::heartbeat_ms(),
            leader_timeout_ms: Timing::leader_timeout_ms(),
            max_message_delay_ms: Timing::max_message_delay_ms(),
            max_processing_ms: Timing::max_processing_ms(),
            lease_margin_ms: None,
        }
    }
}

/// A checked configuration: every value checked and the keys read; nothing
/// resolved, nothing bound.
#[derive(Clone)]
pub struct Settings {
    /// The file it was read from (a reload reads it again).
    pub file: PathBuf,
    /// `--id`, when the command line gave this node's id instead of the file.
    pub id_override: Option<u64>,
    /// The cluster id every frame carries.
    pub cluster: ClusterId,
    /// This node.
    pub id: NodeId,
    /// Every member and its address as written, this node included, by id.
    pub members: Vec<Member>,
    /// The protocol's configuration.
    pub config: Config,
    /// The cluster keys: the first signs, every one is accepted (never printed).
    pub keys: Vec<KeySecret>,
    /// Where the durable state lives.
    pub data_dir: PathBuf,
    /// The HTTP endpoint, if any.
    pub listen: Option<SocketAddr>,
    /// The `name` label of `leader_election_master_status` in `/metrics`:
    /// `lease_name`, or `bully-agent-CLUSTER`.
    pub lease_name: String,
    /// The UDP address to bind, when it is not this node's member address
    /// (`0.0.0.0:7070` in a container whose name resolves only once it runs).
    pub bind: Option<SocketAddr>,
    /// When host names are resolved again.
    pub names: NamesPolicy,
    /// The child's treatment.
    pub child: ChildPolicy,
    /// How the child's process tree is held.
    pub containment: ContainmentSetting,
    /// The job's health check, if any (`[health]`).
    pub health: Option<HealthPolicy>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("file", &self.file)
            .field("cluster", &self.cluster)
            .field("id", &self.id)
            .field("members", &self.members)
            .field("config", &self.config)
            .field("keys", &self.keys)
            .field("data_dir", &self.data_dir)
            .field("listen", &self.listen)
            .field("lease_name", &self.lease_name)
            .field("bind", &self.bind)
            .field("names", &self.names)
            .field("child", &self.child)
            .field("containment", &self.containment)
            .field("health", &self.health)
            .finish()
    }
}

impl Settings {
    /// This node's own address as configured.
    pub fn own_address(&self) -> &Address {
        &self
            .members
            .iter()
            .find(|member| member.id == self.id)
            .expect("checked: the node is a member")
            .address
    }

    /// Whether this node is a witness: it votes and never leads, so it never
    /// runs the command.
    pub fn is_witness(&self) -> bool {
        self.config.is_observer(self.id)
    }

    /// The other members.
    pub fn peers(&self) -> impl Iterator<Item = &Member> + '_ {
        self.members.iter().filter(|member| member.id != self.id)
    }

    /// The member ids.
    pub fn member_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.members.iter().map(|member| member.id)
    }

    /// The codec's keys: the first signs, the second (if any) is accepted too.
    pub fn auth(&self) -> Result<Auth, SetupError> {
        let mut keys = self.keys.iter().map(|key| Key::new(key.id, &key.secret));
        let current = keys.next().expect("checked: at least one key")?;
        let previous = keys.next().transpose()?;
        Ok(Auth::Hmac { current, previous })
    }
}

/// The endpoint address only, for `status`: reads no secret, resolves nothing.
pub fn read_listen(path: &Path) -> Result<Option<SocketAddr>, ConfigError> {
    Ok(parse_file(path)?.listen)
}

/// Reads, parses and checks the configuration at `path`, and reads the keys;
/// resolves nothing. Every error names the field at fault.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    load_as(path, None)
}

/// [`load`], with this node's id from the command line (`--id`) instead of
/// the file's `id` when `id` is given: one file then serves every member (the
/// pods of a Kubernetes StatefulSet).
pub fn load_as(path: &Path, id: Option<u64>) -> Result<Settings, ConfigError> {
    let mut file = parse_file(path)?;
    if let Some(id) = id {
        file.id = id;
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut settings = check(file, base)?;
    settings.file = path.to_owned();
    settings.id_override = id;
    Ok(settings)
}

/// Who this node is and where its state lives: what `bully-agent init`
/// needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The cluster id.
    pub cluster: ClusterId,
    /// This node.
    pub id: NodeId,
    /// Where the durable state lives.
    pub data_dir: PathBuf,
}

/// The cluster, this node (the file's `id`, or `id` from the command line)
/// and its data directory, for `init`: the member list is checked and must
/// hold this node, but no secret is read. Under systemd the key is a
/// credential only the service sees, and declaring a first boot needs none.
pub fn read_identity(path: &Path, id: Option<u64>) -> Result<Identity, ConfigError> {
    let file = parse_file(path)?;
    let id = NodeId(id.unwrap_or(file.id));
    let members = check_members(&file.members)?;
    check_is_member(id, &members)?;
    let base = path.parent().unwrap_or(Path::new("."));
    Ok(Identity {
        cluster: ClusterId(file.cluster),
        id,
        data_dir: base.join(file.data_dir),
    })
}

/// The data directory only, for `reload` (which finds the agent's pid file
/// there): reads no secret.
pub fn read_data_dir(path: &Path) -> Result<PathBuf, ConfigError> {
    let base = path.parent().unwrap_or(Path::new("."));
    Ok(base.join(parse_file(path)?.data_dir))
}

fn parse_file(path: &Path) -> Result<File, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|error| ConfigError::Parse {
        path: path.to_owned(),
        message: one_line(&text, &error),
    })
}

/// The parser's message on one line: toml's own `Display` draws the offending
/// line with a caret underneath, over several lines, and an error must be one
/// line. The line number and the line's text take the drawing's place, except
/// for an error about a whole table (a missing field), whose span is not one
/// line: the message names the field then.
fn one_line(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', " ");
    let Some(span) = error.span() else {
        return message;
    };
    let start = span.start.min(text.len());
    let end = span.end.min(text.len());
    // A missing field's span is empty or the whole table.
    if start == end || text[start..end].trim_end().contains('\n') {
        return message;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |at| start + at);
    let number = text[..start].matches('\n').count() + 1;
    format!(
        "line {number}: {message} (at `{}`)",
        text[line_start..line_end].trim()
    )
}

fn field(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Field {
        field: field.to_owned(),
        message: message.into(),
    }
}

fn check_is_member(id: NodeId, members: &[Member]) -> Result<(), ConfigError> {
    if members.iter().any(|member| member.id == id) {
        return Ok(());
    }
    Err(field(
        "id",
        format!("{id} is not one of the members (add a [[members]] entry with id = {id})"),
    ))
}

fn check(file: File, base: &Path) -> Result<Settings, ConfigError> {
    let id = NodeId(file.id);
    let members = check_members(&file.members)?;
    check_is_member(id, &members)?;

    let quorum = match &file.quorum {
        QuorumSetting::Named(name) if name == "majority" => Quorum::Majority,
        QuorumSetting::Named(name) if name == "none" => Quorum::None,
        QuorumSetting::Size(size) => Quorum::AtLeast(*size),
        QuorumSetting::Named(other) => {
            return Err(field(
                "quorum",
                format!("expected \"majority\", \"none\" or a number of members, got {other:?}"),
            ));
        }
    };
    let witnesses = check_witnesses(&file.members, &members, &file.quorum)?;
    let lease_name = check_lease_name(file.lease_name.as_deref(), file.cluster)?;
    let timing = &file.timing;
    let (child, containment) = file.child.check(base)?;
    let lease_margin = timing
        .lease_margin_ms
        .map_or(child.grace + KILL_ALLOWANCE, Duration::from_millis);
    let config = Config::default()
        .with_algorithm(match file.algorithm {
            AlgorithmName::Classic => Algorithm::Classic,
            AlgorithmName::Modified => Algorithm::Modified,
            AlgorithmName::Ring => Algorithm::Ring,
        })
        .with_preemption(match file.preemption {
            PreemptionName::Always => Preemption::Always,
            PreemptionName::Never => Preemption::Never,
        })
        .with_heartbeat_interval(Duration::from_millis(timing.heartbeat_ms))
        .with_leader_timeout(Duration::from_millis(timing.leader_timeout_ms))
        .with_max_message_delay(Duration::from_millis(timing.max_message_delay_ms))
        .with_max_processing_time(Duration::from_millis(timing.max_processing_ms))
        .with_quorum(quorum)
        // Witnesses never stand, and their votes count toward the quorum.
        .with_observers(witnesses)
        .with_observers_vote(true)
        // With a quorum, the child is told to stop this long before the lease
        // runs out (the node's permit to work ends then).
        .with_lease_margin(lease_margin)
        // A leader that yields to a higher member frees its followers' promises
        // only once its command has been stopped (see `run`).
        .with_resign_delay(lease_margin);
    // The core's own checks, with the member list: timings and quorum size.
    if let Err(error) = Node::new(id, members.iter().map(|member| member.id), config.clone()) {
        // A margin the lease cannot outlast: the agent's own check says why
        // in the file's terms.
        if matches!(error, bully_core::ConfigError::LeaseMarginTooLong { .. }) {
            check_lease_margin(&config, lease_margin, child.grace)?;
        }
        let name = match quorum {
            Quorum::AtLeast(_) if error.to_string().contains("quorum") => "quorum",
            _ => "timing",
        };
        return Err(field(name, error.to_string()));
    }

    if quorum != Quorum::None {
        check_lease_margin(&config, lease_margin, child.grace)?;
    }

    let names = file.names.check()?;
    let health = file.health.map(HealthSection::check).transpose()?;
    let keys = read_keys(
        &SecretSource {
            file: file.secret_file.as_deref(),
            env: file.secret_env.as_deref(),
            credential: file.secret_credential.as_deref(),
            mode_check: file.secret_file_mode_check,
        },
        &file.keys,
        base,
    )?;
    Ok(Settings {
        file: PathBuf::new(),
        id_override: None,
        cluster: ClusterId(file.cluster),
        id,
        members,
        config,
        keys,
        data_dir: base.join(&file.data_dir),
        listen: file.listen,
        lease_name,
        bind: file.bind,
        names,
        child,
        containment,
        health,
    })
}

/// The witnesses (`witness = true` in `[[members]]`): somebody must be left to
/// lead, and a witness is there to vote, which only a quorum asks for.
fn check_witnesses(
    entries: &[MemberEntry],
    members: &[Member],
    quorum: &QuorumSetting,
) -> Result<Vec<NodeId>, ConfigError> {
    let witnesses = witnesses(entries);
    if witnesses.is_empty() {
        return Ok(witnesses);
    }
    if witnesses.len() == members.len() {
        return Err(field(
            "members",
            "every member is a witness: nobody could lead and run the command",
        ));
    }
    if matches!(quorum, QuorumSetting::Named(name) if name == "none") {
        return Err(field(
            "members",
            format!(
                "member {} is a witness, but quorum = \"none\": a witness only votes toward a \
                 quorum (use quorum = \"majority\", or remove `witness = true`)",
                witnesses[0]
            ),
        ));
    }
    Ok(witnesses)
}

/// The `name` label of `leader_election_master_status`: `lease_name`, or
/// `bully-agent-CLUSTER`, so that the series of different clusters scraped by
/// one Prometheus stay apart.
fn check_lease_name(name: Option<&str>, cluster: u64) -> Result<String, ConfigError> {
    let Some(name) = name else {
        return Ok(format!("bully-agent-{cluster}"));
    };
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(field(
            "lease_name",
            format!("{name:?}: expected a non-empty name without control characters"),
        ));
    }
    Ok(name.to_owned())
}

/// The time SIGKILL and the kernel need, after the grace period, to end the
/// command: the default lease margin is the grace period plus this.
pub const KILL_ALLOWANCE: Duration = Duration::from_millis(250);

/// With a quorum, the child is told to stop `margin` before the lease runs out and
/// killed `grace` later: the margin must cover the grace period, and leave the
/// lease room to be renewed (a heartbeat interval and a round trip) in between.
fn check_lease_margin(
    config: &Config,
    margin: Duration,
    grace: Duration,
) -> Result<(), ConfigError> {
    if margin <= grace {
        return Err(field(
            "timing.lease_margin_ms",
            format!(
                "{} ms does not exceed child.grace_ms ({} ms): the command could outlive the lease",
                margin.as_millis(),
                grace.as_millis()
            ),
        ));
    }
    let lease = config.leader_lease();
    let renewal = config.heartbeat_interval() + config.round_trip();
    if margin + renewal >= lease {
        return Err(field(
            "timing.lease_margin_ms",
            format!(
                "{} ms (child.grace_ms + {} ms by default) leaves no time to work: the leader's lease \
                 is {} ms and a renewal takes up to {} ms; raise timing.leader_timeout_ms or lower \
                 child.grace_ms",
                margin.as_millis(),
                KILL_ALLOWANCE.as_millis(),
                lease.as_millis(),
                renewal.as_millis()
            ),
        ));
    }
    Ok(())
}
