//! A cluster of real nodes over UDP on 127.0.0.1, in this process: one tokio task
//! and one socket per node, frames authenticated with a key generated at start.
//! Used by the `cluster` demo and the `failover` benchmark.
//!
//! This module keeps the bookkeeping (ports, crashes, restarts, waiting for
//! agreement); how one node is set up is a [`StartNode`] function, which the
//! `cluster` demo writes out in its own file.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, Leader, Node, NodeId};
use bully_tokio::{Handle, UdpTransport};
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// Anything that can go wrong setting up or running the loopback cluster.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Everything one node needs to start: what a [`StartNode`] function reads.
#[derive(Debug)]
pub struct NodeSetup<'a> {
    /// The node's id.
    pub id: NodeId,
    /// Its socket, bound on 127.0.0.1.
    pub socket: UdpSocket,
    /// Every member, this node included.
    pub members: &'a [NodeId],
    /// Every member's address.
    pub peers: &'a BTreeMap<NodeId, SocketAddr>,
    /// The cluster's id (random per run).
    pub cluster: ClusterId,
    /// The cluster's key (random per run).
    pub secret: &'a [u8; 32],
    /// This start's incarnation (grows at every restart).
    pub incarnation: Incarnation,
    /// The election's settings.
    pub config: &'a Config,
}

/// Sets up one node over authenticated UDP and spawns its driver.
pub type StartNode = fn(NodeSetup<'_>) -> Result<Handle, Error>;

/// The setup the `failover` benchmark uses: the same as the `cluster` demo's.
pub fn start_node(setup: NodeSetup<'_>) -> Result<Handle, Error> {
    let auth = Auth::hmac(Key::new(KeyId(1), setup.secret)?);
    let members = setup.members.iter().copied();
    let codec = Codec::new(setup.cluster, setup.id, setup.incarnation, members, auth)?;
    let peers = setup.peers.iter().map(|(&id, &addr)| (id, addr));
    let transport = UdpTransport::new(setup.socket, codec, peers);
    let node = Node::new(
        setup.id,
        setup.members.iter().copied(),
        setup.config.clone(),
    )?;
    Ok(bully_tokio::spawn(node, transport))
}

/// Nodes `1..=n` on fresh loopback ports.
pub struct LoopbackCluster {
    start_node: StartNode,
    config: Config,
    cluster: ClusterId,
    secret: [u8; 32],
    members: Vec<NodeId>,
    addrs: BTreeMap<NodeId, SocketAddr>,
    incarnations: BTreeMap<NodeId, u64>,
    running: BTreeMap<NodeId, Handle>,
}

impl LoopbackCluster {
    /// Binds `n` sockets on 127.0.0.1 (ports chosen by the OS), generates a
    /// random key and cluster id, and starts every node with [`start_node`].
    pub async fn start(n: u64, config: Config) -> Result<LoopbackCluster, Error> {
        LoopbackCluster::start_with(n, config, start_node).await
    }

    /// [`start`](Self::start), setting up each node (now and at every restart)
    /// with `start_node`.
    pub async fn start_with(
        n: u64,
        config: Config,
        start_node: StartNode,
    ) -> Result<LoopbackCluster, Error> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| format!("no randomness for the key: {e}"))?;
        let cluster = ClusterId(getrandom::u64().map_err(|e| format!("no randomness: {e}"))?);
        let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
        let mut sockets = Vec::new();
        let mut addrs = BTreeMap::new();
        for &id in &members {
            let socket = UdpSocket::bind("127.0.0.1:0").await?;
            addrs.insert(id, socket.local_addr()?);
            sockets.push((id, socket));
        }
        // Incarnations grow at every restart; starting from the wall clock makes
        // them grow across runs of the program too.
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?;
        let first = Incarnation::from_duration_since_epoch(now).0;
        let mut cluster = LoopbackCluster {
            start_node,
            config,
            cluster,
            secret,
            incarnations: members.iter().map(|&id| (id, first)).collect(),
            members,
            addrs,
            running: BTreeMap::new(),
        };
        for (id, socket) in sockets {
            cluster.spawn(id, socket)?;
        }
        Ok(cluster)
    }

    /// The members' ids, ascending.
    pub fn members(&self) -> &[NodeId] {
        &self.members
    }

    /// Each member's address.
    pub fn addrs(&self) -> &BTreeMap<NodeId, SocketAddr> {
        &self.addrs
    }

    /// The ids of the nodes running now.
    pub fn running(&self) -> Vec<NodeId> {
        self.running.keys().copied().collect()
    }

    /// The running node `id`'s handle.
    pub fn handle(&self, id: NodeId) -> Option<&Handle> {
        self.running.get(&id)
    }

    /// [`Config::failover_bound`] for this cluster.
    pub fn failover_bound(&self) -> Duration {
        self.config.failover_bound(self.members.len())
    }

    /// The leader every running node names, if they agree.
    pub fn agreed_leader(&self) -> Option<Leader> {
        let mut named = self.running.values().map(|h| h.leader());
        let first = named.next()??;
        named.all(|l| l == Some(first)).then_some(first)
    }

    /// Waits until every running node names `expected` (in the same term) and
    /// returns when that happened; gives up after `give_up`.
    pub async fn wait_for_leader(
        &self,
        expected: NodeId,
        give_up: Duration,
    ) -> Result<Instant, Error> {
        let deadline = Instant::now() + give_up;
        let mut watches: Vec<_> = self.running.values().map(Handle::leader_watch).collect();
        loop {
            if let Some(leader) = self.agreed_leader() {
                if leader.id == expected {
                    return Ok(Instant::now());
                }
            }
            // Wake on any node's change.
            let changes = watches.iter_mut().map(|w| Box::pin(w.changed()));
            match tokio::time::timeout_at(deadline, first_of(changes)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err("a node's task stopped unexpectedly".into()),
                Err(_) => {
                    return Err(format!(
                        "no agreement on leader {expected} after {give_up:?}: {}",
                        self.describe()
                    )
                    .into());
                }
            }
        }
    }

    /// Who each running node names, as `id:leader` pairs.
    pub fn describe(&self) -> String {
        self.members
            .iter()
            .map(|id| match self.running.get(id) {
                None => format!("{id}:down"),
                Some(handle) => match handle.leader() {
                    Some(leader) => format!("{id}:{}", leader.id),
                    None => format!("{id}:-"),
                },
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Kills node `id` without warning (its task and socket vanish, as in a
    /// crash).
    pub async fn crash(&mut self, id: NodeId) {
        if let Some(handle) = self.running.remove(&id) {
            handle.abort().await;
        }
    }

    /// Shuts node `id` down gracefully: a leader resigns first.
    pub async fn shutdown(&mut self, id: NodeId) -> Result<(), Error> {
        if let Some(handle) = self.running.remove(&id) {
            handle.shutdown().await?;
        }
        Ok(())
    }

    /// Starts node `id` again on its old address, in a new incarnation.
    pub async fn restart(&mut self, id: NodeId) -> Result<(), Error> {
        let addr = self.addrs[&id];
        let socket = UdpSocket::bind(addr).await?;
        *self.incarnations.get_mut(&id).ok_or("not a member")? += 1;
        self.spawn(id, socket)
    }

    /// Shuts every node down gracefully, in ascending id order.
    pub async fn shutdown_all(mut self) -> Result<(), Error> {
        let ids: Vec<NodeId> = self.running.keys().copied().collect();
        for id in ids {
            self.shutdown(id).await?;
        }
        Ok(())
    }

    fn spawn(&mut self, id: NodeId, socket: UdpSocket) -> Result<(), Error> {
        let handle = (self.start_node)(NodeSetup {
            id,
            socket,
            members: &self.members,
            peers: &self.addrs,
            cluster: self.cluster,
            secret: &self.secret,
            incarnation: Incarnation(self.incarnations[&id]),
            config: &self.config,
        })?;
        self.running.insert(id, handle);
        Ok(())
    }
}

/// The output of whichever of `futures` finishes first (a tiny `select_all`, to
/// avoid a dependency for one call). Never resolves if there are none.
async fn first_of<F>(futures: impl Iterator<Item = F>) -> F::Output
where
    F: std::future::Future + Unpin,
{
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(|cx| {
        for future in futures.iter_mut() {
            if let std::task::Poll::Ready(output) = std::pin::Pin::new(future).poll(cx) {
                return std::task::Poll::Ready(output);
            }
        }
        std::task::Poll::Pending
    })
    .await
}
