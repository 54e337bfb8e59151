//! omnipaxos's `OmniPaxos` as a [`Peer`]. Its `BallotLeaderElection` is crate-private
//! in omnipaxos 0.2, reachable only through `OmniPaxos`: the adapter drives the whole
//! server (BLE plus the Sequence Paxos prepare phase a new leader runs), with an
//! empty log, and counts the two protocols' messages under their own kinds.

use std::time::Duration;

use omnipaxos::messages::Message;
use omnipaxos::messages::ballot_leader_election::HeartbeatMsg;
use omnipaxos::messages::sequence_paxos::PaxosMsg;
use omnipaxos::storage::{Entry, NoSnapshot};
use omnipaxos::{ClusterConfig, OmniPaxos, OmniPaxosConfig, ServerConfig};
use omnipaxos_storage::memory_storage::MemoryStorage;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::peer::{Outbox, Peer, Time};

/// The log entry type: the runs propose nothing, so the log stays empty.
#[derive(Clone, Debug)]
pub struct NoEntry;

impl Entry for NoEntry {
    type Snapshot = NoSnapshot;
}

/// An OmniPaxos server over omnipaxos_storage's `MemoryStorage`.
pub type Server = OmniPaxos<NoEntry, MemoryStorage<NoEntry>>;

/// omnipaxos settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OmniSettings {
    /// The tick's length.
    pub tick: Duration,
    /// `ServerConfig::election_tick_timeout`: ticks per BLE heartbeat round.
    pub election_tick_timeout: u64,
}

/// One omnipaxos member.
pub struct OmniPeer {
    server: Server,
    id: u64,
    tick: Duration,
    next_tick: Time,
    started: bool,
    buffer: Vec<Message<NoEntry>>,
}

impl OmniPeer {
    /// Member `id` of `1..=n`; `seed` sets the phase of its ticks.
    pub fn new(id: u64, n: u64, settings: OmniSettings, seed: u64) -> Self {
        let config = OmniPaxosConfig {
            cluster_config: ClusterConfig {
                configuration_id: 1,
                nodes: (1..=n).collect(),
                flexible_quorum: None,
            },
            server_config: ServerConfig {
                pid: id,
                election_tick_timeout: settings.election_tick_timeout,
                // The default reserves room for 100,000 outgoing messages per server
                // (several MB each); 100 is BLE's own buffer size.
                buffer_size: 100,
                ..Default::default()
            },
        };
        let server = config
            .build(MemoryStorage::default())
            .expect("a valid omnipaxos config");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let phase = rng.random_range(1..=settings.tick.as_micros() as u64);
        OmniPeer {
            server,
            id,
            tick: settings.tick,
            next_tick: Duration::from_micros(phase),
            started: false,
            buffer: Vec::new(),
        }
    }

    /// The server, to drive it directly.
    pub fn server_mut(&mut self) -> &mut Server {
        &mut self.server
    }

    /// Moves the server's outgoing messages to `out`.
    pub fn drain(&mut self, out: &mut Outbox<Message<NoEntry>>) {
        self.server.take_outgoing_messages(&mut self.buffer);
        out.extend(self.buffer.drain(..).map(|m| (m.get_receiver(), m)));
    }
}

impl Peer for OmniPeer {
    type Msg = Message<NoEntry>;

    fn id(&self) -> u64 {
        self.id
    }

    #[inline(never)]
    fn start(&mut self, _now: Time, out: &mut Outbox<Self::Msg>) {
        self.started = true;
        self.drain(out);
    }

    fn deadline(&self) -> Option<Time> {
        self.started.then_some(self.next_tick)
    }

    #[inline(never)]
    fn on_deadline(&mut self, now: Time, out: &mut Outbox<Self::Msg>) {
        while self.next_tick <= now {
            self.server.tick();
            self.next_tick += self.tick;
        }
        self.drain(out);
    }

    #[inline(never)]
    fn on_message(&mut self, _now: Time, _from: u64, msg: Self::Msg, out: &mut Outbox<Self::Msg>) {
        self.server.handle_incoming(msg);
        self.drain(out);
    }

    fn on_reconnect(&mut self, peer: u64, out: &mut Outbox<Self::Msg>) {
        self.server.reconnected(peer);
        self.drain(out);
    }

    fn leader(&self) -> Option<u64> {
        self.server.get_current_leader().map(|(pid, _)| pid)
    }

    fn leads(&self) -> bool {
        self.leader() == Some(self.id)
    }

    fn term(&self) -> u64 {
        u64::from(self.server.get_promise().n)
    }

    fn kind(msg: &Self::Msg) -> &'static str {
        match msg {
            Message::BLE(b) => match b.msg {
                HeartbeatMsg::Request(_) => "HeartbeatRequest",
                HeartbeatMsg::Reply(_) => "HeartbeatReply",
            },
            Message::SequencePaxos(p) => match p.msg {
                PaxosMsg::PrepareReq(_) => "PrepareReq",
                PaxosMsg::Prepare(_) => "Prepare",
                PaxosMsg::Promise(_) => "Promise",
                PaxosMsg::AcceptSync(_) => "AcceptSync",
                PaxosMsg::AcceptDecide(_) => "AcceptDecide",
                PaxosMsg::Accepted(_) => "Accepted",
                PaxosMsg::NotAccepted(_) => "NotAccepted",
                PaxosMsg::Decide(_) => "Decide",
                PaxosMsg::ProposalForward(_) => "ProposalForward",
                PaxosMsg::Compaction(_) => "Compaction",
                PaxosMsg::AcceptStopSign(_) => "AcceptStopSign",
                PaxosMsg::ForwardStopSign(_) => "ForwardStopSign",
            },
        }
    }

    fn is_steady(kind: &'static str) -> bool {
        matches!(kind, "HeartbeatRequest" | "HeartbeatReply")
    }
}
