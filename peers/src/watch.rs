//! A bully-core member watched closely: the same `Node` as [`crate::bully`]
//! drives, whose events are kept rather than discarded, and whose heartbeats carry
//! their send time so each follower's arrival trace can be replayed through other
//! failure detectors ([`crate::suspicion`]).

use std::time::Instant;

use bully_core::{Config, DurableState, Event, Message, Node, NodeId, Role};

use crate::peer::{Outbox, Peer, Time};

/// A bully-core message and the virtual time its sender sent it at (the loop does
/// not look inside messages; the stamp is for the receiver's trace only).
#[derive(Clone, Debug)]
pub struct Stamped {
    /// The message.
    pub message: Message,
    /// When it was sent.
    pub sent: Time,
}

/// A heartbeat as a follower received it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// When it arrived.
    pub at: Time,
    /// When the leader sent it.
    pub sent: Time,
}

/// One bully-core member whose failure detector's verdicts and heartbeat arrivals
/// are recorded.
pub struct Watched {
    node: Node,
    base: Instant,
    /// `(time, leader)`: this member stopped trusting its accepted leader on a
    /// deadline of its own, that is its leader timeout fired (`LeaderLost` from
    /// `handle_timeout`, not from a message telling it of a newer election).
    pub suspicions: Vec<(Time, u64)>,
    /// Elections this member started or joined (`ElectionStarted`).
    pub elections: u64,
    /// Leaderships it accepted (`LeaderElected`).
    pub leaders_accepted: u64,
    /// Heartbeats from [`Watched::watched_leader`], in arrival order.
    pub heartbeats: Vec<Arrival>,
    /// Whose heartbeats are recorded (the highest member: the leader of a
    /// classic Bully cluster whose members are all alive).
    pub watched_leader: u64,
}

impl Watched {
    /// Member `id` of `1..=n` with `config`, declared a first boot as
    /// [`crate::bully::BullyPeer::new`] builds it.
    pub fn new(id: u64, n: u64, config: Config, base: Instant) -> Self {
        let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
        let node =
            Node::with_durable_state(NodeId(id), members, config, DurableState::first_boot())
                .expect("a valid configuration");
        Watched {
            node,
            base,
            suspicions: Vec::new(),
            elections: 0,
            leaders_accepted: 0,
            heartbeats: Vec::new(),
            watched_leader: n,
        }
    }

    /// The core's node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    fn drain(&mut self, now: Time, out: &mut Outbox<Stamped>, on_deadline: bool) {
        while let Some(t) = self.node.poll_transmit() {
            out.push((
                t.to.0,
                Stamped {
                    message: t.message,
                    sent: now,
                },
            ));
        }
        while let Some(event) = self.node.poll_event() {
            match event {
                Event::LeaderLost { leader, .. } if on_deadline => {
                    self.suspicions.push((now, leader.0));
                }
                Event::ElectionStarted { .. } => self.elections += 1,
                Event::LeaderElected { .. } => self.leaders_accepted += 1,
                _ => {}
            }
        }
    }
}

impl Peer for Watched {
    type Msg = Stamped;

    fn id(&self) -> u64 {
        self.node.id().0
    }

    fn start(&mut self, now: Time, out: &mut Outbox<Stamped>) {
        self.node.start(self.base + now);
        self.drain(now, out, false);
    }

    fn deadline(&self) -> Option<Time> {
        self.node
            .poll_timeout()
            .map(|t| t.saturating_duration_since(self.base))
    }

    fn on_deadline(&mut self, now: Time, out: &mut Outbox<Stamped>) {
        self.node.handle_timeout(self.base + now);
        self.drain(now, out, true);
    }

    fn on_message(&mut self, now: Time, from: u64, msg: Stamped, out: &mut Outbox<Stamped>) {
        if matches!(msg.message, Message::Heartbeat { .. }) && from == self.watched_leader {
            self.heartbeats.push(Arrival {
                at: now,
                sent: msg.sent,
            });
        }
        self.node
            .handle_message(self.base + now, NodeId(from), msg.message);
        self.drain(now, out, false);
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

    fn kind(msg: &Stamped) -> &'static str {
        crate::bully::message_kind(&msg.message)
    }

    fn is_steady(kind: &'static str) -> bool {
        crate::bully::is_steady_kind(kind)
    }
}
