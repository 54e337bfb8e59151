//! The node's fixed table of timers, indexed by an enum (as quinn-proto's
//! `TimerTable`): one slot per purpose, so re-arming replaces and nothing allocates.

use crate::time::Instant;

/// Why a node wants to be woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Leader: time to send the next `Heartbeat` round.
    Heartbeat,
    /// Follower: the leader has been silent too long (also the wait for a leader's
    /// first heartbeat after a start that does not preempt).
    LeaderTimeout,
    /// Candidate: stop waiting for answers to an `Election`.
    Answer,
    /// Candidate that was answered: stop waiting for the `Coordinator`.
    Coordinator,
    /// Ring: the successor did not acknowledge the token in time.
    RingHop,
    /// `Preemption::AfterStable`: this node has been up and in contact long enough.
    Stable,
    /// With a quorum: the leader's lease runs out.
    Lease,
    /// With a quorum: the connectivity probe's replies are all in.
    Probe,
    /// With a quorum: the promise that deferred a vote runs out.
    DeferredVote,
    /// With a quorum and a resign delay: a leader that yielded tells its
    /// followers it resigned.
    Resign,
    /// A node that abstains (`Node::abstain_until`) may stand again.
    Abstain,
}

impl Timer {
    /// Every timer, in the order `handle_timeout` fires them when several expire at
    /// once: the lease first (a leader whose lease ran out must not send another
    /// heartbeat), then leadership duties, detection, elections.
    /// The end of an abstention comes before detection, so that a leader timeout
    /// due at the same instant finds the node eligible again.
    pub(crate) const ALL: [Timer; 11] = [
        Timer::Lease,
        Timer::Heartbeat,
        Timer::Probe,
        Timer::Abstain,
        Timer::LeaderTimeout,
        Timer::Answer,
        Timer::Coordinator,
        Timer::RingHop,
        Timer::Stable,
        Timer::DeferredVote,
        Timer::Resign,
    ];
}

/// Deadlines, one per [`Timer`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct TimerTable {
    deadlines: [Option<Instant>; Timer::ALL.len()],
    /// Which slots are armed, one bit per [`Timer`]: [`next_timeout`] runs
    /// after every input and reads only these (a follower has one or two
    /// armed of eleven). Derived from `deadlines`, so it never tells apart
    /// two tables that hold the same deadlines.
    ///
    /// [`next_timeout`]: TimerTable::next_timeout
    armed: u16,
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.deadlines[timer as usize] = Some(at);
        self.armed |= 1 << timer as usize;
    }

    /// When `timer` fires, if it is armed.
    pub(crate) fn deadline(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[timer as usize]
    }

    pub(crate) fn is_armed(&self, timer: Timer) -> bool {
        self.deadlines[timer as usize].is_some()
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.deadlines[timer as usize] = None;
        self.armed &= !(1 << timer as usize);
    }

    /// Stops `timer` and says whether it had expired at `now`.
    pub(crate) fn take_expired(&mut self, timer: Timer, now: Instant) -> bool {
        match self.deadlines[timer as usize] {
            Some(at) if at <= now => {
                self.stop(timer);
                true
            }
            _ => false,
        }
    }

    /// How many armed deadlines lie at or before `now`.
    pub(crate) fn expired(&self, now: Instant) -> usize {
        self.deadlines
            .iter()
            .flatten()
            .filter(|&&at| at <= now)
            .count()
    }

    /// The earliest armed deadline.
    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        let mut armed = self.armed;
        let mut next: Option<Instant> = None;
        while armed != 0 {
            let slot = armed.trailing_zeros() as usize;
            armed &= armed - 1;
            let at = self.deadlines[slot];
            if at < next || next.is_none() {
                next = at;
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_next_timeout_is_the_earliest_armed_deadline_and_forgets_stopped_ones() {
        let t0 = Instant::now();
        let mut table = TimerTable::default();
        assert_eq!(table.next_timeout(), None);
        table.set(Timer::Abstain, t0 + Duration::from_secs(3));
        table.set(Timer::Lease, t0 + Duration::from_secs(2));
        table.set(Timer::LeaderTimeout, t0 + Duration::from_secs(1));
        assert_eq!(table.next_timeout(), Some(t0 + Duration::from_secs(1)));
        table.stop(Timer::LeaderTimeout);
        assert_eq!(table.next_timeout(), Some(t0 + Duration::from_secs(2)));
        assert!(table.take_expired(Timer::Lease, t0 + Duration::from_secs(2)));
        assert_eq!(table.next_timeout(), Some(t0 + Duration::from_secs(3)));
        table.set(Timer::Abstain, t0);
        assert_eq!(table.next_timeout(), Some(t0), "re-armed earlier");
        table.stop(Timer::Abstain);
        assert_eq!(table.next_timeout(), None);
        assert_eq!(table, TimerTable::default(), "nothing left armed");
    }
}
