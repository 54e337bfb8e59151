//! The `[[members]]` list and the `[names]` table: each member's id and its
//! address as written, an IP literal or a host name with a port. Nothing here
//! resolves a name: that is the running agent's job (`crate::resolve`), at start
//! and again while it runs, so that a member whose name does not resolve yet, or
//! that moves, does not stop anything.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::NodeId;
use serde::Deserialize;

use super::field;
use crate::error::ConfigError;

/// One `[[members]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MemberEntry {
    pub(super) id: u64,
    pub(super) address: String,
    /// A witness votes and never stands: it never leads, so it never runs the
    /// command. Every member's file must name the same witnesses.
    #[serde(default)]
    pub(super) witness: bool,
}

/// A member's address as the configuration gives it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Address {
    /// An IP address and port: nothing to resolve.
    Ip(SocketAddr),
    /// A host name and port, resolved by the system's resolver (`/etc/hosts`,
    /// DNS, as `getaddrinfo` does) at start and again while the agent runs.
    Name {
        /// The host name.
        host: String,
        /// The UDP port.
        port: u16,
    },
}

impl Address {
    /// Parses `IPv4:PORT`, `[IPv6]:PORT` or `HOST:PORT`; the message says what
    /// is wrong.
    pub fn parse(text: &str) -> Result<Address, String> {
        if let Ok(address) = text.parse::<SocketAddr>() {
            return Ok(Address::Ip(address));
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err("expected HOST:PORT, IP:PORT or [IPv6]:PORT".to_owned());
        };
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{port:?} is not a port (0 to 65535)"))?;
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
        if host.is_empty() || host.len() > 253 || !host.chars().all(valid) {
            return Err(format!(
                "{host:?} is neither an IP address nor a host name (letters, digits, \
                 '-', '.' and '_')"
            ));
        }
        Ok(Address::Name {
            host: host.to_owned(),
            port,
        })
    }

    /// The IP address, when the configuration gives one.
    pub fn ip(&self) -> Option<SocketAddr> {
        match self {
            Address::Ip(address) => Some(*address),
            Address::Name { .. } => None,
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Ip(address) => write!(f, "{address}"),
            Address::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

/// A member: its id and its address as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its id.
    pub id: NodeId,
    /// Its address.
    pub address: Address,
}

/// Checks the list: ids and addresses unique; sorted by id.
pub(super) fn check_members(entries: &[MemberEntry]) -> Result<Vec<Member>, ConfigError> {
    if entries.is_empty() {
        return Err(field("members", "at least one member is needed"));
    }
    let mut members: Vec<Member> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let name = format!("members[{index}]");
        if members.iter().any(|seen| seen.id == NodeId(entry.id)) {
            return Err(field(
                &format!("{name}.id"),
                format!("member {} is listed twice", entry.id),
            ));
        }
        let address = Address::parse(&entry.address).map_err(|message| {
            field(
                &format!("{name}.address"),
                format!("{:?}: {message}", entry.address),
            )
        })?;
        if let Some(other) = members.iter().position(|seen| seen.address == address) {
            return Err(field(
                &format!("{name}.address"),
                format!(
                    "{:?} is also the address of members[{other}] (node {}): every member \
                     needs an address of its own",
                    entry.address, members[other].id
                ),
            ));
        }
        members.push(Member {
            id: NodeId(entry.id),
            address,
        });
    }
    members.sort_by_key(|member| member.id);
    Ok(members)
}

/// The members marked `witness = true`, ascending.
pub(super) fn witnesses(entries: &[MemberEntry]) -> Vec<NodeId> {
    let mut witnesses: Vec<NodeId> = entries
        .iter()
        .filter(|entry| entry.witness)
        .map(|entry| NodeId(entry.id))
        .collect();
    witnesses.sort_unstable();
    witnesses
}

/// The `[names]` table: how often host names are resolved again.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NamesSection {
    #[serde(default = "NamesSection::refresh_ms")]
    refresh_ms: u64,
    #[serde(default = "NamesSection::retry_ms")]
    retry_ms: u64,
}

impl NamesSection {
    fn refresh_ms() -> u64 {
        5000
    }
    fn retry_ms() -> u64 {
        1000
    }

    pub(super) fn check(&self) -> Result<NamesPolicy, ConfigError> {
        let policy = NamesPolicy {
            refresh: Duration::from_millis(self.refresh_ms),
            retry: Duration::from_millis(self.retry_ms),
        };
        if policy.retry < MIN_RESOLVE_INTERVAL {
            return Err(field(
                "names.retry_ms",
                format!(
                    "{} ms is below the least allowed, {} ms: the resolver would be asked in a \
                     busy loop",
                    self.retry_ms,
                    MIN_RESOLVE_INTERVAL.as_millis()
                ),
            ));
        }
        if policy.refresh < policy.retry {
            return Err(field(
                "names.refresh_ms",
                format!(
                    "{} ms is below names.retry_ms ({} ms)",
                    self.refresh_ms, self.retry_ms
                ),
            ));
        }
        Ok(policy)
    }
}

impl Default for NamesSection {
    fn default() -> Self {
        NamesSection {
            refresh_ms: NamesSection::refresh_ms(),
            retry_ms: NamesSection::retry_ms(),
        }
    }
}

/// The least `names.retry_ms`.
pub const MIN_RESOLVE_INTERVAL: Duration = Duration::from_millis(100);

/// When host names are resolved again while the agent runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamesPolicy {
    /// Every name, this often (`names.refresh_ms`, 5 s): a member that moved
    /// is found at its new address within this time and one lookup.
    pub refresh: Duration,
    /// A name that did not resolve, this often (`names.retry_ms`, 1 s); every
    /// name is also resolved again at once when the leader is lost.
    pub retry: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_as_ip_literals_or_host_names() {
        assert_eq!(
            Address::parse("10.0.0.1:7070"),
            Ok(Address::Ip("10.0.0.1:7070".parse().unwrap()))
        );
        assert_eq!(
            Address::parse("[fd00::3]:7070"),
            Ok(Address::Ip("[fd00::3]:7070".parse().unwrap()))
        );
        assert_eq!(
            Address::parse("bully-0.bully.default.svc:7070"),
            Ok(Address::Name {
                host: "bully-0.bully.default.svc".to_owned(),
                port: 7070
            })
        );
        for (bad, says) in [
            ("localhost", "HOST:PORT"),
            ("node-3:70x", "not a port"),
            ("node-3:70000", "not a port"),
            (":7070", "neither"),
            ("two words:7070", "neither"),
            ("fd00::3:7070", "neither"),
        ] {
            let error = Address::parse(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
