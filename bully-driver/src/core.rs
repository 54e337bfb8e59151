//! [`DriverCore`]: everything a driver does around its [`Node`] that does not
//! depend on the runtime, in the order the core's rule asks for.

use std::collections::BTreeMap;
use std::time::Duration;

use bully_core::Instant;
use bully_core::Node;
use bully_core::PermitChange;
use bully_core::{Event, Leader};
use bully_core::{Message, NodeId, Transmit};

use crate::change::{Change, Peers, apply};
use crate::error::ChangeError;
use crate::heard::LastHeard;
use crate::persist::{Persist, Persister};
use crate::stats::DriverStats;

/// A [`Node`] with what both drivers keep beside it: the [`Persister`],
/// [`LastHeard`] and the [`DriverStats`]. The permit to work is the node's own
/// output ([`Node::poll_permit`]): the core hands it on, first.
///
/// The driver's loop, in either runtime:
///
/// 1. [`start`](DriverCore::start), then flush (below).
/// 2. Wait for the next input until [`poll_timeout`](DriverCore::poll_timeout); count
///    the wake-up ([`woke`](DriverCore::woke)).
/// 3. Hand it over: [`handle_message`](DriverCore::handle_message),
///    [`handle_timeout`](DriverCore::handle_timeout) (it checks that a timer is
///    due), [`change`](DriverCore::change), or a command on
///    [`node_mut`](DriverCore::node_mut).
/// 4. Flush: [`before_send`](DriverCore::before_send) (it has the driver
///    publish each change of the permit to work, then persists), then send every
///    [`poll_transmit`](DriverCore::poll_transmit) and count it
///    ([`sent`](DriverCore::sent)), then publish every
///    [`poll_event`](DriverCore::poll_event) and the node's leader.
#[derive(Debug)]
pub struct DriverCore {
    node: Node,
    persister: Persister,
    heard: LastHeard,
    stats: DriverStats,
}

impl DriverCore {
    /// Drives `node`, handing each new durable state to `persist`. Its permits
    /// to work end the node's lease margin before their lease
    /// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)).
    pub fn new(node: Node, persist: Option<Persist>) -> DriverCore {
        DriverCore {
            persister: Persister::new(&node, persist),
            heard: LastHeard::new(),
            stats: DriverStats::default(),
            node,
        }
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The node, for the commands a handle passes on (`step_down`, `suspect`,
    /// ...). Flush afterwards, as after any input.
    pub fn node_mut(&mut self) -> &mut Node {
        &mut self.node
    }

    /// The counters, for the ones only the driver can count (`timer_resets`,
    /// `recv_errors`, `recv_yields`).
    pub fn stats_mut(&mut self) -> &mut DriverStats {
        &mut self.stats
    }

    /// The counters with the node's, its role, term and leader; the driver adds
    /// what its transport counts (`transport_dropped`, `wire`).
    pub fn stats(&self) -> DriverStats {
        self.stats.with_node(&self.node)
    }

    /// Starts the node ([`Node::start`]): boot or recovery.
    pub fn start(&mut self, now: Instant) {
        self.node.start(now);
    }

    /// When the driver must look again without input ([`Node::poll_timeout`]):
    /// the node's next timer, or the end of the permit to work it published,
    /// whichever comes first.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.node.poll_timeout()
    }

    /// Counts a wake-up of the loop.
    pub fn woke(&mut self) {
        self.stats.wakeups += 1;
    }

    /// `from` sent `message`, received at `now`.
    pub fn handle_message(&mut self, now: Instant, from: NodeId, message: Message) {
        self.stats.messages_received += 1;
        self.heard.record(&self.node, from, now);
        self.node.handle_message(now, from, message);
    }

    /// Fires the node's timers if one is due at `now`, and ends its permit to
    /// work if the permit's end has come ([`Node::handle_timeout`]); returns
    /// whether either was due. A driver calls it after every input, not only
    /// when its wait timed out, so that a steady stream of input cannot starve
    /// the timers.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        if self.node.poll_timeout().is_none_or(|at| at > now) {
            return false;
        }
        // `timeouts` counts the protocol's timers: the end of a permit alone
        // is not one.
        if self.node.expired_timers(now) > 0 {
            self.stats.timeouts += 1;
        }
        self.node.handle_timeout(now);
        true
    }

    /// Makes the node abstain from leading for `duration` from `now`
    /// ([`Node::abstain_until`]); returns whether it stepped down. A zero
    /// duration, or one past the clock's range, ends an abstention.
    pub fn abstain_for(&mut self, now: Instant, duration: Duration) -> bool {
        // A duration past the clock's range cannot be an instant: it is taken as
        // zero (which ends an abstention) rather than a panic in the driver.
        let until = now.checked_add(duration).unwrap_or(now);
        self.node.abstain_until(now, until)
    }

    /// Hands the leadership over ([`Node::hand_over`]) to `to`, or to the next
    /// highest member, abstaining for `abstain` from `now` (as
    /// [`abstain_for`](Self::abstain_for) reads a duration past the clock's
    /// range: none).
    pub fn hand_over(
        &mut self,
        now: Instant,
        to: Option<NodeId>,
        abstain: Duration,
    ) -> Result<bool, bully_core::CommandError> {
        let until = now.checked_add(abstain).unwrap_or(now);
        self.node.hand_over(now, to, until)
    }

    /// Carries out a membership or key change on the node and on the
    /// transport's `peers` ([`apply`]).
    pub fn change<P: Peers + ?Sized>(
        &mut self,
        now: Instant,
        peers: &mut P,
        change: Change,
    ) -> Result<(), ChangeError<P::Error>> {
        apply(&mut self.node, peers, now, change)
    }

    /// The start of a flush, before any transmit: every change of the permit to
    /// work ([`Node::poll_permit`]), which `publish` carries out in order
    /// (first, so that work that must stop is told before anything else
    /// happens), then the durable state (written before any message that
    /// depends on it leaves).
    pub fn before_send(&mut self, mut publish: impl FnMut(PermitChange)) {
        while let Some(change) = self.node.poll_permit() {
            publish(change);
        }
        self.persister.before_send(&self.node);
    }

    /// The next message to send ([`Node::poll_transmit`]); count each with
    /// [`sent`](DriverCore::sent).
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.node.poll_transmit()
    }

    /// Counts a send: accepted by the transport, or failed (counted, never fatal).
    pub fn sent(&mut self, accepted: bool) {
        self.stats.count_send(accepted);
    }

    /// The next event to publish ([`Node::poll_event`]).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.node.poll_event()
    }

    /// The leader to publish after the events are drained ([`Node::leader`]).
    pub fn leader(&self) -> Option<Leader> {
        self.node.leader()
    }

    /// How long before `now` each member was last heard ([`LastHeard::ages`]).
    pub fn last_heard(&self, now: Instant) -> BTreeMap<NodeId, Duration> {
        self.heard.ages(now)
    }
}
