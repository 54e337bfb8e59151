//! raft-rs's `RawNode` as a [`Peer`], used for its election alone: ticked every
//! `tick`, its `Ready` handled as raft-rs's documentation asks (send the messages,
//! persist entries and hard state into its `MemStorage`, send the persisted
//! messages, advance, apply).

use std::time::Duration;

use raft::eraftpb::MessageType;
use raft::prelude::{ConfState, Message};
use raft::storage::MemStorage;
use raft::{RawNode, StateRole};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::peer::{Outbox, Peer, Time};

/// raft-rs settings, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaftSettings {
    /// The tick's length.
    pub tick: Duration,
    /// `Config::election_tick`: the randomized timeout is drawn from
    /// `[election_tick, 2 * election_tick)`.
    pub election_tick: usize,
    /// `Config::heartbeat_tick`.
    pub heartbeat_tick: usize,
    /// `Config::pre_vote`.
    pub pre_vote: bool,
    /// `Config::check_quorum`.
    pub check_quorum: bool,
}

/// One raft-rs member.
///
/// raft-rs draws a member's randomized election timeout from the unseeded
/// `rand::thread_rng()` whenever it resets its election clock. To make runs
/// repeatable the adapter overwrites that draw: after every call into raft-rs that
/// left `election_elapsed` at 0 (every reset does, and so does hearing the leader),
/// it draws the timeout from the member's own seeded generator, from the same range,
/// and sets it with `set_randomized_election_timeout`. Redrawing also when a
/// follower merely heard its leader leaves the distribution of the timeout in force
/// unchanged (each draw is uniform and independent), and the unseeded draw never
/// decides anything.
pub struct RaftPeer {
    node: RawNode<MemStorage>,
    settings: RaftSettings,
    rng: ChaCha8Rng,
    next_tick: Time,
    started: bool,
}

impl RaftPeer {
    /// Member `id` of `1..=n`; `seed` seeds its election timeouts and the phase of
    /// its ticks.
    pub fn new(id: u64, n: u64, settings: RaftSettings, seed: u64) -> Self {
        let config = raft::Config {
            id,
            election_tick: settings.election_tick,
            heartbeat_tick: settings.heartbeat_tick,
            pre_vote: settings.pre_vote,
            check_quorum: settings.check_quorum,
            ..Default::default()
        };
        let voters: Vec<u64> = (1..=n).collect();
        let storage = MemStorage::new_with_conf_state(ConfState::from((voters, vec![])));
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        let node = RawNode::new(&config, storage, &logger).expect("a valid raft config");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let phase = rng.random_range(1..=settings.tick.as_micros() as u64);
        let mut peer = RaftPeer {
            node,
            settings,
            rng,
            next_tick: Duration::from_micros(phase),
            started: false,
        };
        peer.redraw_timeout();
        peer
    }

    /// The raw node, to drive it directly.
    pub fn raw_mut(&mut self) -> &mut RawNode<MemStorage> {
        &mut self.node
    }

    fn redraw_timeout(&mut self) {
        if self.node.raft.election_elapsed == 0 {
            // raft-rs's range when `min_election_tick`/`max_election_tick` are unset.
            let min = self.settings.election_tick;
            let max = 2 * self.settings.election_tick;
            let t = self.rng.random_range(min..max);
            self.node.raft.set_randomized_election_timeout(t);
        }
    }

    /// Handles a `Ready` the way raft-rs's examples do, pushing every message.
    pub fn drain(&mut self, out: &mut Outbox<Message>) {
        drain_ready(&mut self.node, out);
        self.redraw_timeout();
    }
}

/// Handles every pending `Ready` of `node`: messages out, entries and hard state
/// into its `MemStorage`, persisted messages out, advance, apply.
pub fn drain_ready(node: &mut RawNode<MemStorage>, out: &mut Outbox<Message>) {
    while node.has_ready() {
        let mut rd = node.ready();
        out.extend(rd.take_messages().into_iter().map(|m| (m.to, m)));
        let store = node.store().clone();
        if !rd.entries().is_empty() {
            store
                .wl()
                .append(rd.entries())
                .expect("append to MemStorage");
        }
        if let Some(hs) = rd.hs() {
            store.wl().set_hardstate(hs.clone());
        }
        out.extend(rd.take_persisted_messages().into_iter().map(|m| (m.to, m)));
        let mut light = node.advance(rd);
        if let Some(commit) = light.commit_index() {
            store.wl().mut_hard_state().set_commit(commit);
        }
        out.extend(light.take_messages().into_iter().map(|m| (m.to, m)));
        node.advance_apply();
    }
}

impl Peer for RaftPeer {
    type Msg = Message;

    fn id(&self) -> u64 {
        self.node.raft.id
    }

    #[inline(never)]
    fn start(&mut self, _now: Time, out: &mut Outbox<Message>) {
        self.started = true;
        self.drain(out);
    }

    fn deadline(&self) -> Option<Time> {
        self.started.then_some(self.next_tick)
    }

    #[inline(never)]
    fn on_deadline(&mut self, now: Time, out: &mut Outbox<Message>) {
        while self.next_tick <= now {
            self.node.tick();
            self.next_tick += self.settings.tick;
            self.drain(out);
        }
    }

    #[inline(never)]
    fn on_message(&mut self, _now: Time, _from: u64, msg: Message, out: &mut Outbox<Message>) {
        // A message of a peer the member does not know is raft's to refuse.
        let _ = self.node.step(msg);
        self.drain(out);
    }

    fn leader(&self) -> Option<u64> {
        let raft = &self.node.raft;
        if raft.state == StateRole::Leader {
            Some(raft.id)
        } else {
            (raft.leader_id != raft::INVALID_ID).then_some(raft.leader_id)
        }
    }

    fn leads(&self) -> bool {
        self.node.raft.state == StateRole::Leader
    }

    fn term(&self) -> u64 {
        self.node.raft.term
    }

    fn kind(msg: &Message) -> &'static str {
        kind_name(msg.get_msg_type())
    }

    fn is_steady(kind: &'static str) -> bool {
        matches!(kind, "MsgHeartbeat" | "MsgHeartbeatResponse")
    }
}

fn kind_name(t: MessageType) -> &'static str {
    match t {
        MessageType::MsgHup => "MsgHup",
        MessageType::MsgBeat => "MsgBeat",
        MessageType::MsgPropose => "MsgPropose",
        MessageType::MsgAppend => "MsgAppend",
        MessageType::MsgAppendResponse => "MsgAppendResponse",
        MessageType::MsgRequestVote => "MsgRequestVote",
        MessageType::MsgRequestVoteResponse => "MsgRequestVoteResponse",
        MessageType::MsgSnapshot => "MsgSnapshot",
        MessageType::MsgHeartbeat => "MsgHeartbeat",
        MessageType::MsgHeartbeatResponse => "MsgHeartbeatResponse",
        MessageType::MsgUnreachable => "MsgUnreachable",
        MessageType::MsgSnapStatus => "MsgSnapStatus",
        MessageType::MsgCheckQuorum => "MsgCheckQuorum",
        MessageType::MsgTransferLeader => "MsgTransferLeader",
        MessageType::MsgTimeoutNow => "MsgTimeoutNow",
        MessageType::MsgReadIndex => "MsgReadIndex",
        MessageType::MsgReadIndexResp => "MsgReadIndexResp",
        MessageType::MsgRequestPreVote => "MsgRequestPreVote",
        MessageType::MsgRequestPreVoteResponse => "MsgRequestPreVoteResponse",
    }
}
