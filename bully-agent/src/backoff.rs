//! Runs that keep failing make the member step aside: a command that cannot
//! start here (missing, not executable, a broken disk) must not keep the
//! leadership, and the job, away from the members where it works.
//!
//! A run **fails** when it ends by itself within `child.min_runtime_ms` of its
//! start, whatever its status: a command that cannot be executed ends at once
//! (status 127), and so does one that crashes on start. After
//! `child.failure_limit` failures in a row the member steps down and abstains
//! from the elections (`bully_core::Node::abstain_until`) for a back-off:
//! `child.backoff_ms` the first time, twice the previous one each time after
//! that, at most `child.max_backoff_ms`. A run that lasts `min_runtime_ms`
//! (ended by itself or stopped) starts both counts again; a run stopped sooner
//! (the leadership ended) counts neither way. The counts live as long as the
//! agent: a restarted agent starts afresh.

use std::time::Duration;

use crate::config::FailurePolicy;

/// What the end of a run means for the member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It lasted, or was stopped: nothing to do.
    Fine,
    /// It failed; this many in a row, fewer than the limit.
    Failed(u32),
    /// The limit is reached: step aside for this long.
    StepAside(Duration),
}

/// The failures in a row, and the back-offs in a row.
#[derive(Clone, Debug)]
pub struct Failures {
    policy: FailurePolicy,
    in_a_row: u32,
    backoffs: u32,
}

impl Failures {
    /// No failure yet.
    pub fn new(policy: FailurePolicy) -> Failures {
        Failures {
            policy,
            in_a_row: 0,
            backoffs: 0,
        }
    }

    /// A reload's new policy: the counts so far are kept and judged by it.
    pub fn set_policy(&mut self, policy: FailurePolicy) {
        self.policy = policy;
    }

    /// Failed runs in a row since the last back-off or good run.
    pub fn in_a_row(&self) -> u32 {
        self.in_a_row
    }

    /// A run ended after `ran`; `by_itself`: it exited (else the agent stopped
    /// it).
    pub fn run_ended(&mut self, ran: Duration, by_itself: bool) -> Verdict {
        if ran >= self.policy.min_runtime {
            self.in_a_row = 0;
            self.backoffs = 0;
            return Verdict::Fine;
        }
        if !by_itself {
            return Verdict::Fine;
        }
        self.in_a_row = self.in_a_row.saturating_add(1);
        if self.policy.limit == 0 || self.in_a_row < self.policy.limit {
            return Verdict::Failed(self.in_a_row);
        }
        let backoff = self
            .policy
            .backoff
            .saturating_mul(2u32.saturating_pow(self.backoffs))
            .min(self.policy.max_backoff);
        self.in_a_row = 0;
        self.backoffs = self.backoffs.saturating_add(1);
        Verdict::StepAside(backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(limit: u32) -> FailurePolicy {
        FailurePolicy {
            limit,
            min_runtime: Duration::from_secs(1),
            backoff: Duration::from_secs(10),
            max_backoff: Duration::from_secs(35),
        }
    }

    const QUICK: Duration = Duration::from_millis(20);

    #[test]
    fn three_quick_exits_in_a_row_step_aside_with_a_doubling_back_off_up_to_the_limit() {
        let mut failures = Failures::new(policy(3));
        let mut backoffs = Vec::new();
        for _ in 0..4 {
            assert_eq!(failures.run_ended(QUICK, true), Verdict::Failed(1));
            assert_eq!(failures.run_ended(QUICK, true), Verdict::Failed(2));
            match failures.run_ended(QUICK, true) {
                Verdict::StepAside(backoff) => backoffs.push(backoff.as_secs()),
                other => panic!("{other:?}"),
            }
            assert_eq!(failures.in_a_row(), 0);
        }
        assert_eq!(backoffs, [10, 20, 35, 35]);
    }

    #[test]
    fn a_run_that_lasts_starts_both_counts_again() {
        let mut failures = Failures::new(policy(3));
        for _ in 0..3 {
            failures.run_ended(QUICK, true);
        }
        failures.run_ended(QUICK, true);
        // A good run: the next back-off is the first one again.
        assert_eq!(
            failures.run_ended(Duration::from_secs(5), true),
            Verdict::Fine
        );
        assert_eq!(failures.in_a_row(), 0);
        failures.run_ended(QUICK, true);
        failures.run_ended(QUICK, true);
        assert_eq!(
            failures.run_ended(QUICK, true),
            Verdict::StepAside(Duration::from_secs(10))
        );
    }

    #[test]
    fn a_run_the_agent_stopped_early_counts_neither_way() {
        let mut failures = Failures::new(policy(3));
        failures.run_ended(QUICK, true);
        assert_eq!(failures.run_ended(QUICK, false), Verdict::Fine);
        assert_eq!(failures.in_a_row(), 1);
        // Stopped after it had lasted: a good run.
        failures.run_ended(Duration::from_secs(2), false);
        assert_eq!(failures.in_a_row(), 0);
    }

    #[test]
    fn a_limit_of_zero_never_steps_aside() {
        let mut failures = Failures::new(policy(0));
        for count in 1..=100 {
            assert_eq!(failures.run_ended(QUICK, true), Verdict::Failed(count));
        }
    }
}
