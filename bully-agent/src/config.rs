//! The configuration file: its TOML schema, and the checks that turn it into
//! [`Settings`] before anything binds.
//!
//! ```toml
//! cluster = 7                 # cluster id: frames of other clusters are refused
//! id = 1                      # this node; must be one of `members`
//! data_dir = "data/1"         # durable state (relative paths: to this file)
//! secret_file = "secret"      # or secret_env = "BULLY_SECRET"; never on the command line
//! algorithm = "classic"       # classic | modified | ring
//! quorum = "majority"         # majority (default) | none | a number of members
//! preemption = "always"       # always | never
//! listen = "127.0.0.1:9101"   # optional: /leader, /healthz, /metrics
//!
//! [timing]
//! heartbeat_ms = 200
//! leader_timeout_ms = 2000
//!
//! [child]
//! grace_ms = 1000             # SIGTERM, then SIGKILL this much later
//! on_exit = "restart"         # restart | step-down | exit
//!
//! [[members]]
//! id = 1
//! address = "10.0.0.1:7070"   # IPv4, [IPv6]:port, or host:port resolved at start
//! ```

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bully_core::wire::{ClusterId, MIN_KEY_LEN};
use bully_core::{Algorithm, Config, Node, NodeId, Preemption, Quorum};
use serde::Deserialize;

use crate::error::ConfigError;

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
    fn leader_timeout_ms() -> u64 {
        2000
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
struct ChildSection {
    #[serde(default = "ChildSection::grace_ms")]
    grace_ms: u64,
    #[serde(default)]
    on_exit: OnExit,
    #[serde(default = "ChildSection::restart_delay_ms")]
    restart_delay_ms: u64,
}

impl ChildSection {
    fn grace_ms() -> u64 {
        1000
    }
    fn restart_delay_ms() -> u64 {
        1000
    }
}

impl Default for ChildSection {
    fn default() -> Self {
        ChildSection {
            grace_ms: ChildSection::grace_ms(),
            on_exit: OnExit::default(),
            restart_delay_ms: ChildSection::restart_delay_ms(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberEntry {
    id: u64,
    address: String,
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

/// How the agent treats its command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildPolicy {
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// When the command exits by itself.
    pub on_exit: OnExit,
    /// Before a restart under [`OnExit::Restart`].
    pub restart_delay: Duration,
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
        .with_quorum(quorum);
    // The core's own checks, with the member list: timings and quorum size.
    Node::new(id, members.iter().map(|&(id, _)| id), config.clone()).map_err(|error| {
        let name = match quorum {
            Quorum::AtLeast(_) if error.to_string().contains("quorum") => "quorum",
            _ => "timing",
        };
        field(name, error.to_string())
    })?;

    let child = ChildPolicy {
        grace: Duration::from_millis(file.child.grace_ms),
        on_exit: file.child.on_exit,
        restart_delay: Duration::from_millis(file.child.restart_delay_ms),
    };
    let lease_margin = timing
        .lease_margin_ms
        .map_or(child.grace + KILL_ALLOWANCE, Duration::from_millis);
    if quorum != Quorum::None {
        check_lease_margin(&config, lease_margin, child.grace)?;
    }

    let secret = read_secret(&file, base)?;
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

fn read_secret(file: &File, base: &Path) -> Result<Vec<u8>, ConfigError> {
    let secret = match (&file.secret_file, &file.secret_env) {
        (Some(_), Some(_)) => {
            return Err(field(
                "secret_file",
                "give secret_file or secret_env, not both",
            ));
        }
        (None, None) => {
            return Err(field(
                "secret_file",
                "no secret: set secret_file (a file holding it) or secret_env (a variable holding it)",
            ));
        }
        (Some(path), None) => {
            let path = base.join(path);
            let mut bytes = std::fs::read(&path)
                .map_err(|error| field("secret_file", format!("{}: {error}", path.display())))?;
            // `echo secret > file` adds a newline that is not part of the secret.
            while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                bytes.pop();
            }
            bytes
        }
        (None, Some(name)) => std::env::var_os(name)
            .ok_or_else(|| field("secret_env", format!("the variable {name} is not set")))?
            .into_encoded_bytes(),
    };
    if secret.len() < MIN_KEY_LEN {
        let name = if file.secret_file.is_some() {
            "secret_file"
        } else {
            "secret_env"
        };
        return Err(field(
            name,
            format!(
                "the secret is {} bytes; at least {MIN_KEY_LEN} are needed",
                secret.len()
            ),
        ));
    }
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        std::fs::write(dir.join("secret"), "a secret of at least sixteen bytes\n").unwrap();
        let path = dir.join("cluster.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    const THREE: &str = r#"
cluster = 7
id = 2
data_dir = "data"
secret_file = "secret"
[[members]]
id = 1
address = "127.0.0.1:7001"
[[members]]
id = 2
address = "[::1]:7002"
[[members]]
id = 3
address = "localhost:7003"
"#;

    #[test]
    fn a_three_member_file_resolves_ipv4_ipv6_and_host_names() {
        let dir = tempfile::tempdir().unwrap();
        let settings = load(&write(dir.path(), THREE)).unwrap();
        assert_eq!(settings.id, NodeId(2));
        assert_eq!(settings.own_address(), "[::1]:7002".parse().unwrap());
        assert_eq!(settings.peers().count(), 2);
        assert!(settings.members[2].1.ip().is_loopback());
        assert_eq!(
            settings.config.quorum(),
            Quorum::Majority,
            "quorum is on by default"
        );
        assert_eq!(settings.secret, b"a secret of at least sixteen bytes");
        assert_eq!(settings.data_dir, dir.path().join("data"));
        assert_eq!(settings.lease_margin, Duration::from_millis(1250));
        assert!(
            !format!("{settings:?}").contains("sixteen"),
            "the secret leaked into Debug"
        );
    }

    #[test]
    fn every_mistake_names_its_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (THREE.replacen("id = 2\n", "id = 9\n", 1), "`id`"),
            (THREE.replace("id = 3", "id = 1"), "`members[2].id`"),
            (
                THREE.replace("localhost:7003", "localhost"),
                "`members[2].address`",
            ),
            (
                THREE.replace("[::1]:7002", "no.such.host.invalid:7002"),
                "`members[1].address`",
            ),
            (
                THREE.replace("cluster = 7\n", ""),
                "missing field `cluster`",
            ),
            (
                THREE.replace("cluster = 7", "cluster = 7\nclustr = 8"),
                "unknown field `clustr`",
            ),
            (
                THREE.replace("secret_file = \"secret\"", "secret_file = \"nope\""),
                "`secret_file`",
            ),
            (
                THREE.replace("secret_file = \"secret\"", ""),
                "`secret_file`",
            ),
            (
                THREE.replace(
                    "secret_file = \"secret\"",
                    "secret_file = \"secret\"\nsecret_env = \"X\"",
                ),
                "not both",
            ),
            (
                THREE.replace(
                    "secret_file = \"secret\"",
                    "secret_env = \"BULLY_AGENT_TEST_UNSET\"",
                ),
                "`secret_env`",
            ),
            (
                THREE.replace("data_dir", "quorum = \"most\"\ndata_dir"),
                "`quorum`",
            ),
            (
                THREE.replace("data_dir", "algorithm = \"raft\"\ndata_dir"),
                "algorithm",
            ),
            (
                format!(
                    "{}\n[timing]\nleader_timeout_ms = 100\nheartbeat_ms = 200\n",
                    THREE
                ),
                "`timing`",
            ),
            (
                format!("{}\n[child]\ngrace_ms = 5000\n", THREE),
                "`timing.lease_margin_ms`",
            ),
            (
                format!(
                    "{}\n[timing]\nlease_margin_ms = 500\n[child]\ngrace_ms = 500\n",
                    THREE
                ),
                "does not exceed child.grace_ms",
            ),
        ];
        for (text, expected) in cases {
            let error = load(&write(dir.path(), &text)).unwrap_err().to_string();
            assert!(error.contains(expected), "{expected:?} not in: {error}");
        }
    }

    #[test]
    fn a_short_secret_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), THREE);
        std::fs::write(dir.path().join("secret"), "short\n").unwrap();
        let error = load(&path).unwrap_err().to_string();
        assert!(
            error.contains("`secret_file`") && error.contains("5 bytes"),
            "{error}"
        );
    }

    #[test]
    fn quorum_none_and_a_number_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let none = THREE.replace("data_dir", "quorum = \"none\"\ndata_dir");
        assert_eq!(
            load(&write(dir.path(), &none)).unwrap().config.quorum(),
            Quorum::None
        );
        let two = THREE.replace("data_dir", "quorum = 2\ndata_dir");
        assert_eq!(
            load(&write(dir.path(), &two)).unwrap().config.quorum(),
            Quorum::AtLeast(2)
        );
    }

    #[test]
    fn the_shipped_example_is_a_valid_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let example = include_str!("../cluster.example.toml")
            .replace("/etc/bully-agent/secret", "secret")
            .replace("/var/lib/bully-agent", "data");
        let settings = load(&write(dir.path(), &example)).unwrap();
        assert_eq!(settings.members.len(), 3);
        assert!(settings.members[2].1.is_ipv6());
        assert_eq!(settings.listen, Some("127.0.0.1:9101".parse().unwrap()));
    }
}
