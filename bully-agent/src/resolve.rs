//! Members by name: host names resolved at start (with a few tries), and again
//! while the agent runs, so that a member whose name resolves late (a pod whose
//! DNS record appears once it starts) or that moves to another address (a
//! rescheduled pod) is reached at its address as it is now.
//!
//! - **At start** every name is looked up, [`START_TRIES`] times at most,
//!   [`START_SPACING`] apart. A member whose name still does not resolve is a
//!   member all the same, one nobody can reach: it counts against the quorum
//!   as a member that is down would, and the log and `status` say so.
//! - **While running** a name that does not resolve is looked up again every
//!   `names.retry_ms` (1 s), and every name every `names.refresh_ms` (5 s) and
//!   at once when the leader is lost or a reload changed the members: a member
//!   that moved is sent to at its new address within `names.refresh_ms` and
//!   one lookup. The driver learns each new address through
//!   `Handle::set_member_address`; what the member sends is accepted from any
//!   address anyway (frames are authenticated, not their source).
//! - A name that stops resolving keeps its last address (a DNS server that is
//!   down for a moment must not cut the cluster off).
//!
//! The lookups go through [`Resolve`]: the system's resolver in the agent
//! (`getaddrinfo`: `/etc/hosts`, DNS, the search domains of a pod's
//! `resolv.conf`), another in tests.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bully_core::NodeId;
use bully_tokio::Handle;
use tokio::sync::{Mutex, MutexGuard, Notify};

use crate::config::{Address, Member, NamesPolicy};

/// How many times a name is looked up at start before the agent starts
/// without it.
pub const START_TRIES: u32 = 3;

/// The time between two lookups of a name at start.
pub const START_SPACING: Duration = Duration::from_millis(500);

/// Looks host names up. Blocking: the agent calls it on tokio's blocking
/// threads.
pub trait Resolve: Send + Sync + 'static {
    /// The addresses `host` has now, each with `port`.
    fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo`), as every other program on the host
/// resolves names.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok((host, port).to_socket_addrs()?.collect())
    }
}

/// Looks `address` up once, off the async threads: the address to send to,
/// of the same family as `bound` where the name has one.
pub async fn lookup(
    resolver: &Arc<dyn Resolve>,
    address: &Address,
    bound: Option<SocketAddr>,
) -> Result<SocketAddr, String> {
    let (host, port) = match address {
        Address::Ip(address) => return Ok(*address),
        Address::Name { host, port } => (host.clone(), *port),
    };
    let resolver = resolver.clone();
    let found = tokio::task::spawn_blocking(move || resolver.lookup(&host, port))
        .await
        .map_err(|error| format!("the lookup failed: {error}"))?
        .map_err(|error| error.to_string())?;
    pick(&found, bound).ok_or_else(|| "the name has no address".to_owned())
}

/// The first address of the bound socket's family, else the first.
fn pick(found: &[SocketAddr], bound: Option<SocketAddr>) -> Option<SocketAddr> {
    found
        .iter()
        .find(|address| bound.is_none_or(|bound| bound.is_ipv4() == address.is_ipv4()))
        .or_else(|| found.first())
        .copied()
}

/// Looks `address` up at start: up to [`START_TRIES`] times.
pub async fn lookup_at_start(
    resolver: &Arc<dyn Resolve>,
    address: &Address,
    bound: Option<SocketAddr>,
) -> Result<SocketAddr, String> {
    let mut tries = 1;
    loop {
        match lookup(resolver, address, bound).await {
            Ok(found) => return Ok(found),
            Err(error) if tries >= START_TRIES => return Err(error),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(START_SPACING).await;
            }
        }
    }
}

/// What the agent knows of one other member's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// As configured.
    pub address: Address,
    /// Where it is sent to now (`None`: its name has never resolved).
    pub resolved: Option<SocketAddr>,
    /// The last lookup's error, while the name does not resolve.
    pub error: Option<String>,
    /// Added by a reload while its name did not resolve: not a member yet,
    /// added to the cluster once it resolves.
    pub pending: bool,
    /// When its name was last looked up.
    looked_up: Option<Instant>,
}

impl Entry {
    /// A member as known at start: `resolved` is its lookup's outcome.
    pub fn new(address: Address, resolved: Result<SocketAddr, String>) -> Entry {
        let (resolved, error) = match resolved {
            Ok(found) => (Some(found), None),
            Err(error) => (None, Some(error)),
        };
        Entry {
            address,
            resolved,
            error,
            pending: false,
            looked_up: Some(Instant::now()),
        }
    }

    /// A member a reload added while its name did not resolve (`error`): it
    /// joins the cluster once it does.
    pub fn pending(address: Address, error: String) -> Entry {
        Entry {
            pending: true,
            ..Entry::new(address, Err(error))
        }
    }

    /// A reload gave the member another address: an IP literal is its address
    /// at once; a name is looked up at the resolver's next turn, and until
    /// then the last address stays.
    pub fn readdress(&mut self, address: Address) {
        if let Some(ip) = address.ip() {
            self.resolved = Some(ip);
        }
        self.address = address;
        self.error = None;
        self.looked_up = None;
    }

    fn due(&self, now: Instant, policy: NamesPolicy, all: bool) -> bool {
        if self.address.ip().is_some() {
            return false;
        }
        let every = if self.resolved.is_none() {
            policy.retry
        } else {
            policy.refresh
        };
        all || self
            .looked_up
            .is_none_or(|at| now.saturating_duration_since(at) >= every)
    }
}

/// The other members' addresses, shared by the resolver, a reload and the
/// endpoint. Changes to the driver's view of a member (its address, its
/// membership) are made while holding the lock, so that a reload and the
/// resolver never interleave them.
#[derive(Debug)]
pub struct Book {
    entries: Mutex<BTreeMap<NodeId, Entry>>,
    wake: Notify,
    bound: SocketAddr,
}

impl Book {
    /// The book at start; `bound` is the address this node's socket is bound
    /// to (its family chooses between a name's IPv4 and IPv6 addresses).
    pub fn new(entries: BTreeMap<NodeId, Entry>, bound: SocketAddr) -> Book {
        Book {
            entries: Mutex::new(entries),
            wake: Notify::new(),
            bound,
        }
    }

    /// The entries, to read or change (see the type's docs).
    pub async fn lock(&self) -> MutexGuard<'_, BTreeMap<NodeId, Entry>> {
        self.entries.lock().await
    }

    /// The address family's hint: the bound socket's address.
    pub fn bound(&self) -> SocketAddr {
        self.bound
    }

    /// Every name is looked up at once (a reload changed the members).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Returns once [`Book::wake`] was called.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Looks up the names that are due (all of them with `all`) and tells the
    /// driver of every address that changed; adds a pending member once it
    /// resolves. Returns how many members got a new address.
    pub async fn refresh(
        &self,
        handle: &Handle,
        resolver: &Arc<dyn Resolve>,
        policy: NamesPolicy,
        all: bool,
    ) -> usize {
        let now = Instant::now();
        let due: Vec<(NodeId, Address)> = self
            .lock()
            .await
            .iter()
            .filter(|(_, entry)| entry.due(now, policy, all))
            .map(|(&id, entry)| (id, entry.address.clone()))
            .collect();
        let mut changed = 0;
        for (id, address) in due {
            let found = lookup(resolver, &address, Some(self.bound)).await;
            let mut entries = self.lock().await;
            // A reload may have removed or readdressed it meanwhile.
            let Some(entry) = entries
                .get_mut(&id)
                .filter(|entry| entry.address == address)
            else {
                continue;
            };
            entry.looked_up = Some(Instant::now());
            match found {
                Ok(found) if entry.resolved == Some(found) => entry.error = None,
                Ok(found) => {
                    if apply(handle, id, entry, found).await {
                        changed += 1;
                    }
                }
                Err(error) => {
                    if entry.error.is_none() {
                        tracing::warn!(
                            member = %id,
                            %address,
                            %error,
                            kept = ?entry.resolved,
                            "a member's name does not resolve; looked up again every {} ms",
                            policy.retry.as_millis()
                        );
                    }
                    entry.error = Some(error);
                }
            }
        }
        changed
    }
}

/// Tells the driver that `id` is at `found`: a new address, or, for a member
/// a reload added while its name did not resolve, its membership.
async fn apply(handle: &Handle, id: NodeId, entry: &mut Entry, found: SocketAddr) -> bool {
    let result = if entry.pending {
        handle.add_member(id, found).await
    } else {
        handle.set_member_address(id, found).await
    };
    match result {
        Ok(()) => {
            tracing::info!(
                member = %id,
                address = %entry.address,
                at = %found,
                was = ?entry.resolved,
                added = entry.pending,
                "a member's name resolves to a new address"
            );
            entry.resolved = Some(found);
            entry.error = None;
            entry.pending = false;
            true
        }
        Err(error) => {
            tracing::warn!(member = %id, at = %found, %error, "the driver refused the member's address");
            entry.error = Some(error.to_string());
            false
        }
    }
}

/// The book's entries for `members` other than `own`, each looked up at start.
pub async fn at_start(
    members: &[Member],
    own: NodeId,
    resolver: &Arc<dyn Resolve>,
    bound: SocketAddr,
) -> BTreeMap<NodeId, Entry> {
    let lookups = members
        .iter()
        .filter(|member| member.id != own)
        .map(|member| {
            let resolver = resolver.clone();
            let (id, address) = (member.id, member.address.clone());
            async move {
                let found = lookup_at_start(&resolver, &address, Some(bound)).await;
                (id, Entry::new(address, found))
            }
        });
    let entries: BTreeMap<NodeId, Entry> = futures_join_all(lookups).await.into_iter().collect();
    for (id, entry) in &entries {
        if let Some(error) = &entry.error {
            tracing::warn!(
                member = %id,
                address = %entry.address,
                %error,
                "a member's name does not resolve: it counts as unreachable until it does"
            );
        }
    }
    entries
}

/// Runs the futures concurrently (each on its own task) and collects their
/// outputs in order.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(tasks.len());
    for task in tasks {
        match task.await {
            Ok(output) => outputs.push(output),
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }
    outputs
}

#[cfg(test)]
mod tests;
