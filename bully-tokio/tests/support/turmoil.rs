//! [`TurmoilCluster`]: hosts under turmoil (simulated hosts, UDP and time), each
//! running the real driver over the real `UdpTransport`, with the faults the
//! stories inject (cut, isolate, heal, crash, restart) and, for the stories that
//! watch the leader, a [`Board`] of what each host names.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, Leader, Node, NodeId};
use bully_tokio::{DatagramSocket, UdpTransport};

use super::sim_socket::SimSocket;

/// The port every host listens on.
const PORT: u16 = 7000;
const SECRET: &[u8] = b"turmoil test secret, 32 bytes!!!";

/// The host that runs member `id`.
pub(crate) fn host(id: u64) -> String {
    format!("n{id}")
}

/// Members 1 to `n`.
pub(crate) fn members(n: u64) -> Vec<NodeId> {
    (1..=n).map(NodeId).collect()
}

/// The timings of the stories that do not need the defaults: turmoil delivers
/// within 1..=5 ms here; its 1 ms tick adds a millisecond of processing
/// granularity.
pub(crate) fn config() -> Config {
    super::config::instant().with_max_message_delay(Duration::from_millis(6))
}

/// How many simulator seeds each story runs (`BULLY_TURMOIL_SEEDS`, default 16).
pub(crate) fn seeds() -> u64 {
    std::env::var("BULLY_TURMOIL_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16)
}

/// Binds member `id`'s socket on its host and builds its transport to the other
/// members of 1 to `n`, authenticated with the cluster's key; `wrap` may put
/// something between the transport and turmoil's socket (loss, say).
pub(crate) async fn transport<S: DatagramSocket>(
    id: NodeId,
    incarnation: Incarnation,
    n: u64,
    wrap: impl FnOnce(SimSocket) -> S,
) -> Result<UdpTransport<S>, Box<dyn Error>> {
    let socket = turmoil::net::UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    let peers: Vec<(NodeId, SocketAddr)> = members(n)
        .into_iter()
        .map(|peer| (peer, SocketAddr::new(turmoil::lookup(host(peer.0)), PORT)))
        .collect();
    let auth = Auth::hmac(Key::new(KeyId(1), SECRET)?);
    let codec = Codec::new(ClusterId(5), id, incarnation, members(n), auth)?;
    Ok(UdpTransport::new(wrap(SimSocket(socket)), codec, peers))
}

/// What one host's node reports: the leader it names, and the highest term it
/// has persisted (its durable term, which every election raises).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) leader: Option<Leader>,
    pub(crate) term: u64,
}

impl Seen {
    /// The highest term this node has shown: its durable term, or its leader's.
    pub(crate) fn term(&self) -> u64 {
        self.term.max(self.leader.map_or(0, |leader| leader.term.0))
    }
}

/// What each host reports, by member.
pub(crate) type Board = Arc<Mutex<BTreeMap<NodeId, Seen>>>;

/// One host's software for the stories that watch the leader: a node over
/// turmoil UDP with `config`, reporting its leader and its term on `board`.
pub(crate) async fn report_on(
    board: Board,
    config: Config,
    n: u64,
    id: NodeId,
    incarnation: Incarnation,
) -> turmoil::Result {
    let transport = transport(id, incarnation, n, |socket| socket).await?;
    let node = Node::new(id, members(n), config)?;
    let terms = board.clone();
    let handle = bully_tokio::spawn_persisting(node, transport, move |state| {
        terms.lock().unwrap().entry(id).or_default().term = state.term.0;
    });
    let mut leader = handle.leader_watch();
    loop {
        let named = *leader.borrow_and_update();
        board.lock().unwrap().entry(id).or_default().leader = named;
        if leader.changed().await.is_err() {
            return Ok(());
        }
    }
}

/// `n` hosts under one seed, and the faults the stories inject, named as in
/// raft-rs's test network: [`cut`](Self::cut), [`isolate`](Self::isolate),
/// [`heal`](Self::heal), [`crash`](Self::crash), [`restart`](Self::restart).
pub(crate) struct TurmoilCluster {
    /// The simulation, for what the cluster does not name (holding and
    /// releasing datagrams, stepping).
    pub(crate) sim: turmoil::Sim<'static>,
    /// What each host reports, when its software reports ([`report_on`]).
    pub(crate) board: Board,
    n: u64,
    down: BTreeSet<u64>,
}

impl TurmoilCluster {
    /// `n` hosts, each running `software(id, incarnation)`; each (re)start of a
    /// host is a new incarnation, so its peers do not take its fresh sequence
    /// numbers for replays.
    pub(crate) fn new<F, Fut>(seed: u64, n: u64, software: F) -> TurmoilCluster
    where
        F: Fn(NodeId, Incarnation) -> Fut + Clone + 'static,
        Fut: Future<Output = turmoil::Result> + 'static,
    {
        let mut sim = turmoil::Builder::new()
            .simulation_duration(Duration::from_secs(120))
            .min_message_latency(Duration::from_millis(1))
            .max_message_latency(Duration::from_millis(5))
            .rng_seed(seed)
            .build();
        for id in 1..=n {
            let software = software.clone();
            let starts = Arc::new(AtomicU64::new(0));
            sim.host(host(id), move || {
                let incarnation = Incarnation(starts.fetch_add(1, Ordering::Relaxed) + 1);
                software(NodeId(id), incarnation)
            });
        }
        TurmoilCluster {
            sim,
            board: Board::default(),
            n,
            down: BTreeSet::new(),
        }
    }

    /// `n` hosts running [`report_on`] with `config`.
    pub(crate) fn reporting(seed: u64, n: u64, config: Config) -> TurmoilCluster {
        let board = Board::default();
        let software = {
            let board = board.clone();
            move |id, incarnation| report_on(board.clone(), config.clone(), n, id, incarnation)
        };
        TurmoilCluster {
            board,
            ..TurmoilCluster::new(seed, n, software)
        }
    }

    /// Simulated time since the start.
    pub(crate) fn now(&self) -> Duration {
        self.sim.elapsed()
    }

    /// One step of the simulation.
    pub(crate) fn step(&mut self) {
        self.sim.step().unwrap();
    }

    /// Steps for `duration` of simulated time.
    pub(crate) fn run_for(&mut self, duration: Duration) {
        let until = self.sim.elapsed() + duration;
        while self.sim.elapsed() < until {
            self.step();
        }
    }

    /// Cuts every link between a member of `a` and a member of `b`, both ways.
    pub(crate) fn cut(&self, a: &[u64], b: &[u64]) {
        for &x in a {
            for &y in b {
                self.sim.partition(host(x), host(y));
            }
        }
    }

    /// Cuts every link from a member of `from` to a member of `to`, one way.
    pub(crate) fn cut_oneway(&self, from: &[u64], to: &[u64]) {
        for &x in from {
            for &y in to {
                self.sim.partition_oneway(host(x), host(y));
            }
        }
    }

    /// Restores every link between a member of `a` and a member of `b`, both
    /// ways.
    pub(crate) fn repair(&self, a: &[u64], b: &[u64]) {
        for &x in a {
            for &y in b {
                self.sim.repair(host(x), host(y));
            }
        }
    }

    /// Restores every link from a member of `from` to a member of `to`.
    pub(crate) fn repair_oneway(&self, from: &[u64], to: &[u64]) {
        for &x in from {
            for &y in to {
                self.sim.repair_oneway(host(x), host(y));
            }
        }
    }

    /// Every member but `id`.
    pub(crate) fn others(&self, id: u64) -> Vec<u64> {
        (1..=self.n).filter(|&other| other != id).collect()
    }

    /// Cuts `id` off from every other member, both ways.
    pub(crate) fn isolate(&self, id: u64) {
        self.cut(&[id], &self.others(id));
    }

    /// Restores every link.
    pub(crate) fn heal(&self) {
        for a in 1..=self.n {
            self.repair(&[a], &((a + 1)..=self.n).collect::<Vec<_>>());
        }
    }

    /// Crashes `id`'s host: its software stops, its state is gone.
    pub(crate) fn crash(&mut self, id: u64) {
        self.sim.crash(host(id));
        self.board.lock().unwrap().remove(&NodeId(id));
        self.down.insert(id);
    }

    /// Starts `id`'s software again, afresh (a crash first if it runs: a
    /// bounce).
    pub(crate) fn restart(&mut self, id: u64) {
        self.sim.bounce(host(id));
        self.board.lock().unwrap().remove(&NodeId(id));
        self.down.remove(&id);
    }

    /// Steps until every live host names `expected`, in the same term (one
    /// leadership, one fencing token); returns the simulated time that took.
    /// Fails after four times `limit`.
    pub(crate) fn agree_on(&mut self, expected: u64, limit: Duration) -> Duration {
        let start = self.now();
        loop {
            if self.agreed(expected) {
                return self.now() - start;
            }
            let waited = self.now() - start;
            assert!(
                waited <= limit * 4,
                "no agreement on {expected} after {waited:?}: {:?}",
                self.board.lock().unwrap()
            );
            self.step();
        }
    }

    /// Whether every live host names `expected`, in the same term.
    pub(crate) fn agreed(&self, expected: u64) -> bool {
        let board = self.board.lock().unwrap();
        let mut named = (1..=self.n)
            .filter(|id| !self.down.contains(id))
            .map(|id| board.get(&NodeId(id)).and_then(|seen| seen.leader));
        let Some(Some(first)) = named.next() else {
            return false;
        };
        first.id == NodeId(expected) && named.all(|leader| leader == Some(first))
    }
}
