//! [`DriverStats`]: the counters a driver keeps about its own loop, beside the
//! node's, with the node's state when they were read.

use bully_core::Node;
use bully_core::Stats;
use bully_core::Term;
use bully_core::wire::WireStats;
use bully_core::{Leader, Role};

/// The driver's counters and the node's, and the node's state when they were
/// read: from a driver handle's `stats()`, and its `shutdown()` (the final
/// ones).
///
/// They let tests check the loop by counting rather than by timing (no busy
/// loop, no missed deadline). [`DriverCore`](crate::DriverCore) counts the
/// ones every driver shares; the driver adds what only its transport knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverStats {
    /// Times the driver woke up for an input: a message, a command, or a
    /// deadline.
    pub wakeups: u64,
    /// Messages handed to the node.
    pub messages_received: u64,
    /// Calls to [`Node::handle_timeout`].
    pub timeouts: u64,
    /// Times the driver set its wait's deadline anew: only when the earliest of
    /// the node's deadline and the leadership's guard changed (and, in
    /// bully-tokio, when tokio woke the timer before the deadline had passed).
    pub timer_resets: u64,
    /// Messages the transport accepted.
    pub messages_sent: u64,
    /// Sends the transport failed locally (counted, never fatal; a lost datagram
    /// is not one).
    pub send_errors: u64,
    /// Errors the transport returned from `recv` (counted, never fatal).
    pub recv_errors: u64,
    /// Times the transport's `recv` handed the loop back after refusing a run of
    /// datagrams: not errors. Only bully-tokio's transports do this (their
    /// `recv` has no timeout); bully-std's `recv` returns at its timeout
    /// instead, and this stays 0.
    pub recv_yields: u64,
    /// Input the transport refused before it reached the node (the
    /// transport's `dropped()`).
    pub transport_dropped: u64,
    /// The wire codec's counters, frames refused by reason among them, when the
    /// transport speaks `bully_core::wire` (the transport's `wire_stats()`).
    pub wire: Option<WireStats>,
    /// The node's own counters.
    pub node: Stats,
    /// What the node was doing.
    pub role: Role,
    /// The highest term the node had seen.
    pub term: Term,
    /// The leader the node had accepted.
    pub leader: Option<Leader>,
}

impl Default for DriverStats {
    /// All counters at zero; a follower in term 0 with no leader.
    fn default() -> Self {
        DriverStats {
            wakeups: 0,
            messages_received: 0,
            timeouts: 0,
            timer_resets: 0,
            messages_sent: 0,
            send_errors: 0,
            recv_errors: 0,
            recv_yields: 0,
            transport_dropped: 0,
            wire: None,
            node: Stats::default(),
            role: Role::Follower,
            term: Term::default(),
            leader: None,
        }
    }
}

impl DriverStats {
    /// These counters with `node`'s counters, role, term and leader as they are
    /// now.
    #[must_use]
    pub fn with_node(self, node: &Node) -> DriverStats {
        DriverStats {
            node: *node.stats(),
            role: node.role(),
            term: node.term(),
            leader: node.leader(),
            ..self
        }
    }

    /// Counts one send: accepted by the transport, or failed.
    pub fn count_send(&mut self, accepted: bool) {
        if accepted {
            self.messages_sent += 1;
        } else {
            self.send_errors += 1;
        }
    }
}
