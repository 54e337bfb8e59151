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
//! [[members]]
//! id = 1
//! address = "10.0.0.1:7070"   # IPv4, [IPv6]:port, or host:port resolved at start
//! ```

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bully_core::wire::ClusterId;
use bully_core::{Algorithm, Config, Node, NodeId, Preemption, Quorum};
use serde::Deserialize;

use crate::error::ConfigError;

mod child;
mod secret;
#[cfg(test)]
mod tests;

pub use child::{
    ChildPolicy, ContainmentMode, ContainmentSetting, FailurePolicy, MIN_BACKOFF, MIN_GRACE,
    MIN_RESTART_DELAY, OnExit,
};
pub use secret::MIN_DISTINCT_BYTES;

use child::ChildSection;
use secret::{SecretSource, read_secret};

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
    #[serde(default = "File::secret_file_mode_check")]
    secret_file_mode_check: bool,
    #[serde(default)]
    algorithm: AlgorithmName,
    #[serde(default)]
    quorum: QuorumSetting,
    #[serde(default)]
    preemption: PreemptionName,
    listen: Option<SocketAddr>,
    #[serde(default)]
    timing: Timing,
    #[serde(default)]
    child: ChildSection,
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
    /// (`bully-core/tests/lossy_lease.rs`); with 2 s it lapsed about four times a
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberEntry {
    id: u64,
    address: String,
}

/// A checked configuration: everything resolved and read, nothing bound.
pub struct Settings {
    /// The cluster id every frame carries.
    pub cluster: ClusterId,
    /// This node.
    pub id: NodeId,
    /// Every member and its resolved address, this node included, by id.
    pub members: Vec<(NodeId, SocketAddr)>,
    /// The protocol's configuration.
    pub config: Config,
    /// The shared secret's bytes (never printed).
    pub secret: Vec<u8>,
    /// Where the durable state lives.
    pub data_dir: PathBuf,
    /// The HTTP endpoint, if any.
    pub listen: Option<SocketAddr>,
    /// With a quorum, how long before the lease runs out the child is told to stop.
    pub lease_margin: Duration,
    /// The child's treatment.
    pub child: ChildPolicy,
    /// How the child's process tree is held.
    pub containment: ContainmentSetting,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("cluster", &self.cluster)
            .field("id", &self.id)
            .field("members", &self.members)
            .field("config", &self.config)
            .field("secret", &"<redacted>")
            .field("data_dir", &self.data_dir)
            .field("listen", &self.listen)
            .field("lease_margin", &self.lease_margin)
            .field("child", &self.child)
            .field("containment", &self.containment)
            .finish()
    }
}

impl Settings {
    /// This node's own UDP address.
    pub fn own_address(&self) -> SocketAddr {
        self.members
            .iter()
            .find(|(id, _)| *id == self.id)
            .map(|&(_, address)| address)
            .expect("checked: the node is a member")
    }

    /// The other members and their addresses.
    pub fn peers(&self) -> impl Iterator<Item = (NodeId, SocketAddr)> + '_ {
        self.members
            .iter()
            .copied()
            .filter(|&(id, _)| id != self.id)
    }

    /// The member ids.
    pub fn member_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.members.iter().map(|&(id, _)| id)
    }
}

/// The endpoint address only, for `status`: reads no secret, resolves nothing.
pub fn read_listen(path: &Path) -> Result<Option<SocketAddr>, ConfigError> {
    Ok(parse_file(path)?.listen)
}

/// Reads, parses and checks the configuration at `path`; resolves host names and
/// reads the secret. Every error names the field at fault.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let file = parse_file(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    check(file, base)
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

fn check(file: File, base: &Path) -> Result<Settings, ConfigError> {
    let id = NodeId(file.id);
    if file.members.is_empty() {
        return Err(field("members", "at least one member is needed"));
    }
    let mut members = Vec::with_capacity(file.members.len());
    for (index, member) in file.members.iter().enumerate() {
        let name = format!("members[{index}]");
        if members.iter().any(|&(seen, _)| seen == NodeId(member.id)) {
            return Err(field(
                &format!("{name}.id"),
                format!("member {} is listed twice", member.id),
            ));
        }
        let address = resolve(&member.address).map_err(|message| {
            field(
                &format!("{name}.address"),
                format!("{:?}: {message}", member.address),
            )
        })?;
        if let Some(other) = members.iter().position(|&(_, seen)| seen == address) {
            return Err(field(
                &format!("{name}.address"),
                format!(
                    "{:?} is also the address of members[{other}] (node {}): every member \
                     needs an address of its own",
                    member.address, members[other].0
                ),
            ));
        }
        members.push((NodeId(member.id), address));
    }
    members.sort_by_key(|&(id, _)| id);
    if !members.iter().any(|&(member, _)| member == id) {
        return Err(field(
            "id",
            format!("{id} is not one of the members (add a [[members]] entry with id = {id})"),
        ));
    }

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
        // A leader that yields to a higher member frees its followers' promises
        // only once its command has been stopped (see `run`).
        .with_resign_delay(lease_margin);
    // The core's own checks, with the member list: timings and quorum size.
    Node::new(id, members.iter().map(|&(id, _)| id), config.clone()).map_err(|error| {
        let name = match quorum {
            Quorum::AtLeast(_) if error.to_string().contains("quorum") => "quorum",
            _ => "timing",
        };
        field(name, error.to_string())
    })?;

    if quorum != Quorum::None {
        check_lease_margin(&config, lease_margin, child.grace)?;
    }

    let secret = read_secret(
        &SecretSource {
            file: file.secret_file.as_deref(),
            env: file.secret_env.as_deref(),
            mode_check: file.secret_file_mode_check,
        },
        base,
    )?;
    Ok(Settings {
        cluster: ClusterId(file.cluster),
        id,
        members,
        config,
        secret,
        data_dir: base.join(&file.data_dir),
        listen: file.listen,
        lease_margin,
        child,
        containment,
    })
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

/// An IP address with a port, or a host name with a port, resolved now.
fn resolve(address: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = address.parse::<SocketAddr>() {
        return Ok(address);
    }
    if !address.contains(':') {
        return Err("expected HOST:PORT, IP:PORT or [IPv6]:PORT".to_owned());
    }
    let mut resolved = address
        .to_socket_addrs()
        .map_err(|error| format!("could not resolve: {error}"))?;
    resolved
        .next()
        .ok_or_else(|| "the name resolved to no address".to_owned())
}
