//! [`MemCluster`]: members over one in-memory network, each on its driver's
//! threads, with the faults the stories inject (cut, isolate, heal, crash,
//! restart) and the waits they need.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bully_core::{Config, Leader, Node, NodeId, Term};
use bully_std::{Handle, MemNetwork, MemTransport};

/// How long any wait lasts before the test gives up (the machine is shared:
/// far above the protocol's bounds).
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// Members of one cluster over a [`MemNetwork`], each a driver; the faults
/// named as in raft-rs's test network.
pub(crate) struct MemCluster {
    /// The network, for what the cluster does not name (loss, delay, counters).
    pub(crate) network: MemNetwork,
    members: Vec<NodeId>,
    config: Config,
    handles: BTreeMap<NodeId, Handle>,
}

impl MemCluster {
    /// The members `ids` with `config`, none started yet.
    pub(crate) fn stopped(network: MemNetwork, ids: &[u64], config: Config) -> MemCluster {
        MemCluster {
            network,
            members: ids.iter().map(|&id| NodeId(id)).collect(),
            config,
            handles: BTreeMap::new(),
        }
    }

    /// The members `ids` with `config`, started in id order.
    pub(crate) fn new(ids: &[u64], config: Config) -> MemCluster {
        let mut cluster = MemCluster::stopped(MemNetwork::new(), ids, config);
        for &id in ids {
            cluster.start(id);
        }
        cluster
    }

    /// Starts member `id` with a fresh node.
    pub(crate) fn start(&mut self, id: u64) {
        self.start_with(id, bully_std::spawn);
    }

    /// Starts member `id` with `spawn` (a persisting one, say), from a fresh node.
    pub(crate) fn start_with(&mut self, id: u64, spawn: impl FnOnce(Node, MemTransport) -> Handle) {
        let node = Node::new(NodeId(id), self.members.clone(), self.config.clone()).unwrap();
        let handle = spawn(node, self.network.endpoint(NodeId(id)));
        self.handles.insert(NodeId(id), handle);
    }

    /// Member `id`'s handle.
    pub(crate) fn handle(&self, id: u64) -> &Handle {
        &self.handles[&NodeId(id)]
    }

    /// Takes member `id`'s handle out of the cluster (to shut it down, drop it).
    pub(crate) fn take(&mut self, id: u64) -> Handle {
        self.handles.remove(&NodeId(id)).expect("a running member")
    }

    /// Every running member's handle, in id order.
    pub(crate) fn running(&self) -> Vec<&Handle> {
        self.handles.values().collect()
    }

    /// Cuts every link between a member of `a` and a member of `b`, both ways.
    pub(crate) fn cut(&self, a: &[u64], b: &[u64]) {
        self.network.partition(&ids(a), &ids(b));
    }

    /// Cuts `id` off from everyone, both ways: to the others, a crash.
    pub(crate) fn isolate(&self, id: u64) {
        self.network.isolate(NodeId(id));
    }

    /// Restores every link.
    pub(crate) fn heal(&self) {
        self.network.heal();
    }

    /// Crashes member `id`: its driver stops without a word, and messages to it
    /// are undeliverable until it restarts.
    pub(crate) fn crash(&mut self, id: u64) {
        self.take(id).abort();
        self.network.detach(NodeId(id));
    }

    /// Starts member `id` again, with a fresh node.
    pub(crate) fn restart(&mut self, id: u64) {
        self.start(id);
    }

    /// Waits until member `at` names `leader`, in a term after `after`; returns
    /// that term.
    pub(crate) fn leader_is(&self, at: u64, leader: u64, after: Term) -> Term {
        let watch = self.handle(at).leader_watch();
        watch
            .wait_for(WAIT, |named| {
                named.is_some_and(|l| l.id == NodeId(leader) && l.term > after)
            })
            .unwrap_or_else(|error| {
                panic!("{at}'s leader is not {leader} ({error}): {:?}", watch.get())
            })
            .unwrap()
            .term
    }

    /// Waits until every running member names the same leader, and returns it.
    pub(crate) fn agreed_leader(&self) -> Leader {
        let handles = self.running();
        let deadline = Instant::now() + WAIT;
        loop {
            let first = handles[0].wait_for_leader(WAIT).unwrap();
            if handles.iter().all(|h| h.leader() == Some(first)) {
                return first;
            }
            assert!(Instant::now() < deadline, "no agreement");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn ids(group: &[u64]) -> Vec<NodeId> {
    group.iter().map(|&id| NodeId(id)).collect()
}
