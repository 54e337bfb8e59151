//! W1 (docs/correctness.md, section 1): with a quorum, the work a leader does while it
//! leads stops before any other member's work starts.
//!
//! The simulator models the work as the drivers and `bully-agent` run it. A
//! leader's work may start as soon as [`Node::permit`] permits it, which ends
//! the configuration's lease margin ([`Config::lease_margin`]) or the resign
//! delay, whichever is longer, before the lease (the agent sets the margin to
//! the job's grace period and a quarter of a second more, and the resign delay
//! to the margin). It is told to stop when the permission ends (the leadership ended, the margin before
//! the lease was reached, or the member crashed) and may take the resign delay
//! to stop: that is the time `Config::with_resign_delay` gives it. So a
//! leadership's work ends, at the latest, the resign delay after the earlier
//! of the instant its permission was seen to end and the end of the last
//! permission it was given.
//!
//! Every instant here is real (simulated) time: a member's permission, and the
//! resign delay its work takes to stop, are measured on its own clock (see
//! `clock.rs`) and converted, so that two members' work is compared as it
//! happens, whatever their clocks read.
//!
//! A member whose work starts while another member's may still run is a
//! [`Violation::WorkOverlap`](super::Violation::WorkOverlap).

use bully_core::{Config, Instant, Node, Quorum};

use super::clock::Clock;

/// What the model knows of one member's work, in real time.
#[derive(Clone, Copy, Debug, Default)]
enum Work {
    /// Not working; its last work ended by this instant, if it ever worked.
    #[default]
    Stopped,
    /// Stopped, but possibly still stopping until the instant given.
    Stopping(Instant),
    /// Working under a permission that lasts `until`; told to stop then, it
    /// has stopped by `ends`.
    Running { until: Instant, ends: Instant },
}

/// The work of every member, by index.
#[derive(Debug, Default)]
pub(crate) struct WorkModel {
    work: Vec<Work>,
}

/// When work told to stop at the real instant `told` has stopped: the resign
/// delay later on the member's clock.
fn stopped_by(clock: &Clock, told: Instant, config: &Config) -> Instant {
    let local = clock.local(told);
    clock.real(local.checked_add(config.resign_delay()).unwrap_or(local))
}

impl WorkModel {
    pub(crate) fn new(members: usize) -> WorkModel {
        WorkModel {
            work: vec![Work::Stopped; members],
        }
    }

    /// Member `index` handled an input at the real instant `now`. Returns the
    /// index of a member whose work may still run when this member's work starts
    /// now, if any.
    pub(crate) fn after_input(
        &mut self,
        now: Instant,
        clock: &Clock,
        index: usize,
        node: &Node,
    ) -> Option<usize> {
        let config = node.config();
        if config.quorum() == Quorum::None {
            // Without a quorum nothing bounds a leadership: W1 is not promised.
            return None;
        }
        // The permit at the node's latest input, as it stands at `now`: an
        // instant that late changed nothing else.
        let local = clock.local(now);
        let permission = node
            .permit()
            .and_then(|permit| permit.until)
            .filter(|&until| local < until)
            .map(|until| {
                let resign = until.checked_add(config.resign_delay()).unwrap_or(until);
                (clock.real(until), clock.real(resign))
            });
        match (self.work[index], permission) {
            (Work::Running { .. }, Some((until, ends))) => {
                self.work[index] = Work::Running { until, ends };
                None
            }
            (Work::Running { until, ends }, None) => {
                self.stop(index, now, until, ends, clock, config);
                None
            }
            (Work::Stopped | Work::Stopping(_), Some((until, ends))) => {
                self.work[index] = Work::Running { until, ends };
                self.still_running(now, index)
            }
            (Work::Stopped | Work::Stopping(_), None) => None,
        }
    }

    /// Member `index` crashed at the real instant `now`: its work is told to stop
    /// (as the agent's supervisor stops the job when the agent dies).
    pub(crate) fn crashed(&mut self, now: Instant, clock: &Clock, index: usize, config: &Config) {
        if let Work::Running { until, ends } = self.work[index] {
            self.stop(index, now, until, ends, clock, config);
        }
    }

    /// The work is told to stop at `now`, or was at `until` if that came first
    /// (the driver's own timer for the permission's end).
    fn stop(
        &mut self,
        index: usize,
        now: Instant,
        until: Instant,
        ends: Instant,
        clock: &Clock,
        config: &Config,
    ) {
        let ends = if now < until {
            stopped_by(clock, now, config)
        } else {
            ends
        };
        self.work[index] = Work::Stopping(ends);
    }

    /// Another member whose work may still run at `now`: a running one until its
    /// permission ends and it has stopped, a stopping one until it has stopped.
    fn still_running(&self, now: Instant, index: usize) -> Option<usize> {
        self.work.iter().enumerate().find_map(|(other, work)| {
            let ends = match *work {
                _ if other == index => return None,
                Work::Stopped => return None,
                Work::Stopping(ends) | Work::Running { ends, .. } => ends,
            };
            (ends > now).then_some(other)
        })
    }
}

#[cfg(test)]
mod tests;
