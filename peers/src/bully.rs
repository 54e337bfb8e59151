//! bully-core's `Node` as a [`Peer`]: driven by its own `poll_timeout` deadline.

use std::time::Instant;

use bully_core::{Config, DurableState, Message, Node, NodeId, Role};

use crate::peer::{Outbox, Peer, Time};

/// One bully-core member. The core takes `Instant`s; the adapter maps the loop's
/// virtual time onto one base instant fixed at construction (the core only ever
/// compares and subtracts instants, so the base does not change what it does).
pub struct BullyPeer {
    node: Node,
    base: Instant,
}

impl BullyPeer {
    /// Member `id` of `1..=n` with `config`: a member that persists its
    /// state, at the declared first boot of a new cluster
    /// ([`DurableState::first_boot`], as raft-rs's and omnipaxos's members
    /// start from empty storage), so that with a quorum it votes at once rather
    /// than waiting out a promise it might have forgotten.
    pub fn new(id: u64, n: u64, config: Config, base: Instant) -> Self {
        BullyPeer::with_state(id, n, config, base, DurableState::first_boot())
    }

    /// Member `id` of `1..=n` with `config`, restored from `state`: with
    /// `DurableState::default()`, a member not declared a first boot (built
    /// with `Node::new`, or whose state file was lost), which with a quorum
    /// votes for nobody for a follower lease after its start.
    pub fn with_state(id: u64, n: u64, config: Config, base: Instant, state: DurableState) -> Self {
        let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
        let node = Node::with_durable_state(NodeId(id), members, config, state)
            .expect("a valid configuration");
        BullyPeer { node, base }
    }

    /// The core's node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The core's node, to drive it directly.
    pub fn node_mut(&mut self) -> &mut Node {
        &mut self.node
    }

    /// The instant the adapter maps virtual time zero to.
    pub fn base(&self) -> Instant {
        self.base
    }

    fn drain(&mut self, out: &mut Outbox<Message>) {
        while let Some(t) = self.node.poll_transmit() {
            out.push((t.to.0, t.message));
        }
        while self.node.poll_event().is_some() {}
    }
}

impl Peer for BullyPeer {
    type Msg = Message;

    fn id(&self) -> u64 {
        self.node.id().0
    }

    #[inline(never)]
    fn start(&mut self, now: Time, out: &mut Outbox<Message>) {
        self.node.start(self.base + now);
        self.drain(out);
    }

    fn deadline(&self) -> Option<Time> {
        self.node
            .poll_timeout()
            .map(|t| t.saturating_duration_since(self.base))
    }

    #[inline(never)]
    fn on_deadline(&mut self, now: Time, out: &mut Outbox<Message>) {
        self.node.handle_timeout(self.base + now);
        self.drain(out);
    }

    #[inline(never)]
    fn on_message(&mut self, now: Time, from: u64, msg: Message, out: &mut Outbox<Message>) {
        self.node.handle_message(self.base + now, NodeId(from), msg);
        self.drain(out);
    }

    fn leader(&self) -> Option<u64> {
        self.node.leader().map(|l| l.id.0)
    }

    fn leads(&self) -> bool {
        self.node.role() == Role::Leader
    }

    fn term(&self) -> u64 {
        self.node.term().0
    }

    fn kind(msg: &Message) -> &'static str {
        message_kind(msg)
    }

    fn is_steady(kind: &'static str) -> bool {
        is_steady_kind(kind)
    }
}

/// A bully-core message's kind as the tables count it (every bully-core peer
/// counts alike).
pub fn message_kind(msg: &Message) -> &'static str {
    match msg {
        // Round 0 is a member's vote for a claim's first ask: election
        // traffic. (A claim asked again numbers its later asks on; their
        // rare votes count with the acknowledgements here.)
        Message::Ack { round: 0, .. } => "Vote",
        m => m.kind().name(),
    }
}

/// Whether a kind of [`message_kind`] is steady-state traffic (a leader's
/// heartbeats and their acknowledgements), not election traffic.
pub fn is_steady_kind(kind: &'static str) -> bool {
    matches!(kind, "Heartbeat" | "Ack")
}
