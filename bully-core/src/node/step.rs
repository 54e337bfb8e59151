//! The node's inputs and outputs: every message and timer enters here, passes
//! the guards every input shares (a member's, a term not too far ahead: G1),
//! and goes to the rule that handles it; what the rules send and announce
//! leaves through the `poll_*` queues.

use std::time::Duration;

use super::Node;
use crate::event::Event;
use crate::message::{Message, NodeId, Transmit};
use crate::stats::DropReason;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// Feeds a message that member `from` sent.
    ///
    /// Never fails: input that is malformed, forged, stale or unexpected is dropped
    /// and counted in [`Stats::dropped`](crate::Stats::dropped).
    ///
    /// docs/protocol.md: G1, terms only move up; a message too far ahead is dropped.
    pub fn handle_message(&mut self, now: Instant, from: NodeId, message: Message) {
        let now = self.clock(now);
        if from == self.id {
            self.drop_input(DropReason::FromSelf);
            return;
        }
        if self.members.index_of(from).is_none() {
            self.drop_input(DropReason::NotMember);
            return;
        }
        let limit = self.term.0.saturating_add(self.config.max_term_lead());
        if message.term().0 > limit {
            self.drop_input(DropReason::TermTooFarAhead);
            return;
        }
        self.stats.received[message.kind()] += 1;
        // Whatever it says, the sender is alive.
        self.members.clear_suspicion(from);
        self.connectivity
            .heard_from(from, |from| self.members.is_voter(from));
        self.step(now, from, message);
    }

    /// Does the work of every timer that has expired at `now`, and ends the
    /// permit to work if its end has come (see [`poll_permit`](Node::poll_permit)).
    /// Calling it early is a harmless no-op.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        for timer in Timer::ALL {
            if self.timers.take_expired(timer, now) {
                self.on_timer(now, timer);
            }
        }
    }

    /// The next message to send, until `None`.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event, until `None`.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Node::handle_timeout) next has work to do: the
    /// earliest armed timer, or the end of the permit to work that
    /// [`poll_permit`](Node::poll_permit) said started, if that comes first
    /// (`handle_timeout` then ends it).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let timer = self.timers.next_timeout();
        match self.permit_deadline() {
            Some(end) => Some(timer.map_or(end, |timer| timer.min(end))),
            None => timer,
        }
    }

    /// How many timers [`handle_timeout(now)`](Node::handle_timeout) would fire:
    /// those armed for `now` or earlier (an instant before the latest one this
    /// node has seen counts as that one, as every input does). Zero when the call
    /// would fire none, as when [`poll_timeout`](Node::poll_timeout) is only the
    /// end of the permit to work.
    ///
    /// The output bound is per expired timer (see [`Node`]): a fuzzer or a test
    /// reads this before `handle_timeout` to know what the call may send. The
    /// work of a timer arms timers only for later instants (every delay is
    /// positive), so this is the number of timers the call fires.
    ///
    /// ```
    /// use std::time::Instant;
    /// use bully_core::{Config, Node, NodeId};
    /// let mut node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default())?;
    /// let now = Instant::now();
    /// node.start(now);
    /// assert_eq!(node.expired_timers(now), 0, "nothing is due yet");
    /// let due = node.poll_timeout().expect("it waits for something");
    /// assert_eq!(node.expired_timers(due), 1);
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn expired_timers(&self, now: Instant) -> usize {
        let now = self.latest.map_or(now, |latest| latest.max(now));
        self.timers.expired(now)
    }

    #[inline]
    pub(super) fn send(&mut self, to: NodeId, message: Message) {
        debug_assert!(to != self.id, "a node never sends to itself");
        self.stats.sent[message.kind()] += 1;
        self.transmits.push_back(Transmit { to, message });
    }

    #[inline]
    pub(super) fn drop_input(&mut self, reason: DropReason) {
        self.stats.dropped[reason] += 1;
    }

    #[inline]
    pub(super) fn clock(&mut self, now: Instant) -> Instant {
        let now = match self.latest {
            Some(latest) if latest > now => latest,
            None => {
                // Its first input: a node not declared a first boot may have
                // promised something before it restarted, and votes for
                // nobody for a follower lease from now, even before its
                // start.
                self.latest = Some(now);
                if !self.votes.promised_nothing() {
                    self.forget_promises(now);
                }
                now
            }
            _ => now,
        };
        // Before the input changes anything: a permit whose end came by now
        // has ended, whatever the input does to the lease.
        self.settle_permit(now);
        self.latest = Some(now);
        now
    }

    pub(super) fn after(now: Instant, delay: Duration) -> Instant {
        // `Config::validate` caps every delay far below `Instant`'s range; the
        // fallback only keeps a pathological platform from panicking.
        now.checked_add(delay).unwrap_or(now)
    }
}
