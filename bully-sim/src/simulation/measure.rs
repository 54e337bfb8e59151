//! What a [`Simulation`] measures: message counts and causal depth since a
//! reset, leader changes, who leads, and the safety checker's findings.

use std::time::Duration;

use bully_core::{Instant, MessageCounts, NodeId, Role};

use super::{InFlightMessage, Simulation, Violation, micros};

impl Simulation {
    /// Zeroes the message counters and causal depths, and starts the clock of
    /// [`since_reset`](Self::since_reset): call it just before the scenario to measure.
    pub fn reset_counts(&mut self) {
        self.sent = MessageCounts::default();
        self.lost = 0;
        self.max_depth = 0;
        // The leaderships held now are the baseline, not changes.
        self.followed.clear();
        for node in self.slots.iter().filter_map(|slot| slot.node.as_ref()) {
            if let Some(leader) = node.leader() {
                self.followed.insert(leader.token());
            }
        }
        self.baseline = self.followed.len() as u64;
        self.measure_from = self.now;
        for slot in &mut self.slots {
            slot.depth = 0;
        }
    }

    /// Messages sent since the last reset, by kind (lost and blocked ones included:
    /// they were sent).
    pub fn sent(&self) -> &MessageCounts {
        &self.sent
    }

    /// Messages lost or blocked since the last reset.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// The longest causal chain of messages since the last reset: the Bully
    /// Algorithm Dance's "sequential (dependent) messages". Heartbeats are not counted in chains.
    pub fn max_depth(&self) -> u64 {
        self.max_depth
    }

    /// How many leaderships (fencing tokens) some member other than the leader
    /// followed since the last reset, or that a member held while alone: the leader
    /// changes the cluster saw. A stale announcement everyone refused is not one.
    pub fn leader_changes(&self) -> u64 {
        self.followed.len() as u64 - self.baseline
    }

    /// Simulated time since the last reset.
    pub fn since_reset(&self) -> Duration {
        self.now - self.measure_from
    }

    /// `duration` in message delays (of the default link).
    pub fn in_delays(&self, duration: Duration) -> f64 {
        duration.as_secs_f64() / self.message_delay().as_secs_f64()
    }

    /// Messages in flight now.
    pub fn in_flight(&self) -> usize {
        self.network.in_flight()
    }

    /// Every message in flight now, in the order they will be delivered, with when
    /// each was sent and when it lands: what a viewer needs to draw messages on
    /// their way (the browser simulator in `examples/web` does). Lost and blocked
    /// messages are not in flight.
    pub fn messages_in_flight(&self) -> impl Iterator<Item = InFlightMessage<'_>> {
        self.network.iter().map(|in_flight| InFlightMessage {
            from: in_flight.sender,
            to: self.ids[in_flight.to],
            message: &in_flight.message,
            sent_us: micros(self.epoch, in_flight.sent),
            arrives_us: micros(self.epoch, in_flight.at),
        })
    }

    /// The leader every live member names, if they all name the same leadership
    /// (the same fencing token) and its member is live and leading in it.
    pub fn agreed_leader(&self) -> Option<NodeId> {
        // One leadership followed, by every live member.
        let (&token, &followers) = self.following.first_key_value()?;
        if self.following.len() > 1 || followers != self.live {
            return None;
        }
        let leader = self.node(token.leader)?;
        let held = leader.leader().map(|leader| leader.token()) == Some(token);
        (leader.role() == Role::Leader && held).then_some(token.leader)
    }

    /// The members that consider themselves leader now, ascending.
    pub fn leaders(&self) -> Vec<NodeId> {
        self.slots
            .iter()
            .filter(|slot| {
                slot.node
                    .as_ref()
                    .is_some_and(|node| node.role() == Role::Leader)
            })
            .map(|slot| slot.id)
            .collect()
    }

    /// The highest live member.
    pub fn highest_live(&self) -> Option<NodeId> {
        self.slots
            .iter()
            .rev()
            .find(|slot| slot.up)
            .map(|slot| slot.id)
    }

    /// Safety violations seen so far (S1 to S3 of docs/correctness.md, section 1;
    /// see [`Violation`]).
    pub fn violations(&self) -> &[Violation] {
        self.checker.violations()
    }

    /// How many times two members announced the same term outside the synchronous
    /// model (allowed without a quorum; ordered by the fencing token).
    pub fn same_term_leaders(&self) -> u64 {
        self.checker.same_term_leaders()
    }

    /// Records that the run left the synchronous model by other means than the
    /// network or a restart (a wrong failure-detector report).
    pub(crate) fn mark_faulted(&mut self) {
        self.faulted = true;
    }

    /// How many times a member became leader while another was leading (a
    /// violation with a quorum; counted without one).
    pub fn overlapping_leaderships(&self) -> u64 {
        self.checker.overlaps()
    }

    /// How many times, with a quorum, a member's work started while another
    /// member's might still run (the work model of W1, docs/correctness.md,
    /// section 1; a violation unless a
    /// running member's clock stepped: see [`clock_stepped`](Self::clock_stepped)).
    pub fn work_overlaps(&self) -> u64 {
        self.checker.work_overlaps()
    }

    /// Whether overlapping leaderships, overlapping work and broken invariants
    /// are still flagged as violations: no running member's clock stepped
    /// ([`clock_stepped`](Self::clock_stepped)), and no member that restarted
    /// without its durable state met a message delivered past the timing model
    /// (a forged or replayed one, or one slower than `max_message_delay`).
    /// Once either happened they are counted instead.
    pub fn lease_checks_enforced(&self) -> bool {
        self.checker.in_model()
    }

    /// How many times an input broke one of the safety core's invariants I1 to
    /// I7 ([`invariants`](crate::invariants); a violation with a quorum unless a running
    /// member's clock stepped, counted always).
    pub fn invariants_broken(&self) -> u64 {
        self.checker.invariants_broken()
    }

    /// Whether the run has left the synchronous model: a network fault, a
    /// restart, a wrong detector report or step-down, or a running member's
    /// clock stepping forward.
    pub fn has_faulted(&self) -> bool {
        self.faulted
    }

    /// Whether a member has restarted without its durable state
    /// ([`restart`](Self::restart)): its forgotten vote could elect a second
    /// leader of a term, so from then on S1 is counted, not flagged, even with a
    /// quorum.
    pub fn restarted_without_state(&self) -> bool {
        self.amnesia
    }

    /// When a member's current incarnation came up.
    pub fn up_since(&self, id: NodeId) -> Option<Instant> {
        let index = self.index(id).ok()?;
        let slot = &self.slots[index];
        slot.up.then_some(slot.up_since)
    }
}
