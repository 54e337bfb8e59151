//! [`MemCluster`]: members over one in-memory network, in paused time, with the
//! faults the stories inject (cut, isolate, heal, crash, restart).

use std::collections::BTreeMap;
use std::time::Duration;

use bully_core::{Config, Node, NodeId};
use bully_tokio::{Handle, MemNetwork, MemTransport};

use super::agree::agree_on;

/// Members 1 to `n` of one cluster over a [`MemNetwork`], each a driver task;
/// the faults named as in raft-rs's test network.
pub(crate) struct MemCluster {
    /// The network, for what the cluster does not name (loss, delay, counters).
    pub(crate) network: MemNetwork,
    members: Vec<NodeId>,
    config: Config,
    handles: BTreeMap<NodeId, Handle>,
}

impl MemCluster {
    /// Members 1 to `n` with `config`, none started yet.
    pub(crate) fn stopped(network: MemNetwork, n: u64, config: Config) -> MemCluster {
        MemCluster {
            network,
            members: (1..=n).map(NodeId).collect(),
            config,
            handles: BTreeMap::new(),
        }
    }

    /// Members 1 to `n` with `config`, started in id order.
    pub(crate) fn new(n: u64, config: Config) -> MemCluster {
        MemCluster::on(MemNetwork::new(), n, config)
    }

    /// [`new`](Self::new) on `network` (seeded, lossy, slow).
    pub(crate) fn on(network: MemNetwork, n: u64, config: Config) -> MemCluster {
        let mut cluster = MemCluster::stopped(network, n, config);
        for id in 1..=n {
            cluster.start(id);
        }
        cluster
    }

    /// The members.
    pub(crate) fn members(&self) -> &[NodeId] {
        &self.members
    }

    /// The configuration every member starts with.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Starts member `id` with a fresh node.
    pub(crate) fn start(&mut self, id: u64) {
        self.start_with(id, bully_tokio::spawn);
    }

    /// Starts member `id` with `spawn` (a persisting one, say), from a fresh node.
    pub(crate) fn start_with(&mut self, id: u64, spawn: impl FnOnce(Node, MemTransport) -> Handle) {
        let node = Node::new(NodeId(id), self.members.clone(), self.config.clone()).unwrap();
        self.start_node(node, spawn);
    }

    /// Starts `node` with `spawn`, on its member's endpoint.
    pub(crate) fn start_node(
        &mut self,
        node: Node,
        spawn: impl FnOnce(Node, MemTransport) -> Handle,
    ) {
        let id = node.id();
        let handle = spawn(node, self.network.endpoint(id));
        self.handles.insert(id, handle);
    }

    /// Member `id`'s handle.
    pub(crate) fn handle(&self, id: u64) -> &Handle {
        &self.handles[&NodeId(id)]
    }

    /// Takes member `id`'s handle out of the cluster (to shut it down, drop it).
    pub(crate) fn take(&mut self, id: u64) -> Handle {
        self.handles.remove(&NodeId(id)).expect("a running member")
    }

    /// The running members' handles, among `ids`.
    pub(crate) fn handles(&self, ids: &[u64]) -> Vec<&Handle> {
        ids.iter()
            .filter_map(|&id| self.handles.get(&NodeId(id)))
            .collect()
    }

    /// Every running member's handle.
    pub(crate) fn running(&self) -> Vec<&Handle> {
        self.handles.values().collect()
    }

    /// Cuts every link between a member of `a` and a member of `b`, both ways.
    pub(crate) fn cut(&self, a: &[u64], b: &[u64]) {
        let ids = |group: &[u64]| group.iter().map(|&id| NodeId(id)).collect::<Vec<_>>();
        self.network.partition(&ids(a), &ids(b));
    }

    /// Cuts `id` off from everyone, both ways.
    pub(crate) fn isolate(&self, id: u64) {
        self.network.isolate(NodeId(id));
    }

    /// Restores every link.
    pub(crate) fn heal(&self) {
        self.network.heal();
    }

    /// Crashes member `id`: its task stops without a word, and messages to it
    /// are undeliverable until it restarts.
    pub(crate) async fn crash(&mut self, id: u64) {
        self.take(id).abort().await;
        self.network.detach(NodeId(id));
    }

    /// Starts member `id` again, with a fresh node.
    pub(crate) fn restart(&mut self, id: u64) {
        self.start(id);
    }

    /// Waits (in virtual time) until every running member among `ids` names
    /// `expected`; returns how long that took. Gives up after a simulated
    /// minute.
    pub(crate) async fn agree_on(&self, ids: &[u64], expected: u64) -> Duration {
        agree_on(self.handles(ids), NodeId(expected), Duration::from_secs(60)).await
    }

    /// [`agree_on`](Self::agree_on) for every running member.
    pub(crate) async fn all_agree_on(&self, expected: u64) -> Duration {
        agree_on(self.running(), NodeId(expected), Duration::from_secs(60)).await
    }
}
