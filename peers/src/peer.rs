//! What the event loop needs from an election library: one member's state machine,
//! driven by messages and by its own deadline, and what it names as leader.

use std::time::Duration;

/// Simulated time since the run began.
pub type Time = Duration;

/// Messages a member wants sent: `(receiver id, message)`.
pub type Outbox<M> = Vec<(u64, M)>;

/// One member of a cluster, as the event loop drives it.
///
/// Every library's adapter implements this the way its documentation asks to be
/// driven: bully-core by its `poll_timeout` deadline, raft-rs and omnipaxos by a
/// periodic `tick()` (the adapter's deadline is its next tick).
pub trait Peer: 'static {
    /// The library's message type.
    type Msg: 'static;

    /// This member's id (members are `1..=N`).
    fn id(&self) -> u64;
    /// Boots the member at `now`.
    fn start(&mut self, now: Time, out: &mut Outbox<Self::Msg>);
    /// The next time the member wants [`Peer::on_deadline`], if any.
    fn deadline(&self) -> Option<Time>;
    /// The deadline passed: fire timers or tick.
    fn on_deadline(&mut self, now: Time, out: &mut Outbox<Self::Msg>);
    /// A message from `from` arrived.
    fn on_message(&mut self, now: Time, from: u64, msg: Self::Msg, out: &mut Outbox<Self::Msg>);
    /// The network reports that the link to `peer` works again (omnipaxos asks to be
    /// told; the others ignore it).
    fn on_reconnect(&mut self, _peer: u64, _out: &mut Outbox<Self::Msg>) {}
    /// The leader this member names (itself if it leads), if any.
    fn leader(&self) -> Option<u64>;
    /// Whether this member considers itself the leader.
    fn leads(&self) -> bool;
    /// The member's term (raft's term, omnipaxos's promised ballot number, bully's term).
    fn term(&self) -> u64;
    /// A message's kind, for the counters.
    fn kind(msg: &Self::Msg) -> &'static str;
    /// Whether a kind is steady-state traffic (heartbeats and their replies), as
    /// opposed to election traffic.
    fn is_steady(kind: &'static str) -> bool;
}
