//! Checking a configuration: every setting, the relations between the
//! timeouts (as Kubernetes' leader election checks that its renew deadline is
//! shorter than its lease), and what depends on the membership.

use crate::config::{Config, ConfigError, Preemption, Quorum, Timings};
use crate::message::NodeId;

impl Config {
    /// Checks every setting and the relations between them.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, ConfigError};
    ///
    /// let bad = Config::default()
    ///     .with_heartbeat_interval(Duration::from_millis(500))
    ///     .with_leader_timeout(Duration::from_millis(500));
    /// assert!(matches!(bad.validate(), Err(ConfigError::LeaderTimeoutTooShort { .. })));
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        let named = [
            ("heartbeat_interval", Some(self.heartbeat_interval)),
            ("leader_timeout", Some(self.leader_timeout)),
            ("max_message_delay", Some(self.max_message_delay)),
            ("answer_timeout", self.answer_timeout),
            ("coordinator_timeout", self.coordinator_timeout),
        ];
        for (field, value) in named {
            let Some(value) = value else { continue };
            if value.is_zero() {
                return Err(ConfigError::ZeroDuration { field });
            }
            if value > Self::MAX_DURATION {
                return Err(ConfigError::DurationTooLong {
                    field,
                    value,
                    max: Self::MAX_DURATION,
                });
            }
        }
        for (field, value) in [
            ("max_processing_time", self.max_processing_time),
            ("resign_delay", self.resign_delay),
        ] {
            if value > Self::MAX_DURATION {
                return Err(ConfigError::DurationTooLong {
                    field,
                    value,
                    max: Self::MAX_DURATION,
                });
            }
        }
        match self.preemption {
            Preemption::AfterStable(d) if d.is_zero() => return Err(ConfigError::ZeroStablePeriod),
            Preemption::AfterStable(d) if d > Self::MAX_DURATION => {
                return Err(ConfigError::DurationTooLong {
                    field: "preemption stable period",
                    value: d,
                    max: Self::MAX_DURATION,
                });
            }
            _ => {}
        }
        let timings = Timings::new(self);
        let min_leader_timeout = self.heartbeat_interval + self.max_message_delay;
        if self.leader_timeout <= min_leader_timeout {
            return Err(ConfigError::LeaderTimeoutTooShort {
                leader_timeout: self.leader_timeout,
                min: min_leader_timeout,
            });
        }
        if timings.answer_timeout < timings.round_trip {
            return Err(ConfigError::AnswerTimeoutTooShort {
                answer_timeout: timings.answer_timeout,
                min: timings.round_trip,
            });
        }
        let min_coordinator_timeout = timings.answer_timeout + timings.round_trip;
        if timings.coordinator_timeout < min_coordinator_timeout {
            return Err(ConfigError::CoordinatorTimeoutTooShort {
                coordinator_timeout: timings.coordinator_timeout,
                min: min_coordinator_timeout,
            });
        }
        if self.max_term_lead == 0 {
            return Err(ConfigError::ZeroTermLead);
        }
        if !(0.0..=0.1).contains(&self.clock_drift) {
            return Err(ConfigError::ClockDrift(self.clock_drift));
        }
        if self.quorum != Quorum::None {
            // docs/protocol.md: R28, a lease long enough to be renewed.
            // Two ways a lease can be too short to hold. The leader must renew
            // it before it ends: the next heartbeat round's acknowledgements
            // come a heartbeat interval plus a round trip after the last. And a
            // claim must outlast its own votes: they come up to a round trip
            // after it (on the claimant's clock, which may run fast), and the
            // claimant leads only with a round trip of lease still ahead, so
            // that the first round's acknowledgements renew it in time; with
            // less, it asks again and again and never leads.
            let first_renewal = self
                .heartbeat_interval
                .max(timings.covering(timings.round_trip));
            let min = first_renewal + timings.round_trip;
            if timings.leader_lease <= min {
                return Err(ConfigError::LeaseTooShort {
                    lease: timings.leader_lease,
                    min,
                });
            }
            // A margin the lease cannot outlast: the permit would end before
            // it started, every time.
            if let Some(margin) = self.lease_margin {
                if margin >= timings.leader_lease {
                    return Err(ConfigError::LeaseMarginTooLong {
                        margin,
                        lease: timings.leader_lease,
                    });
                }
            }
        }
        Ok(())
    }

    /// Checks the settings that depend on the membership (`members` sorted
    /// ascending): the quorum can be met and somebody can stand.
    pub(crate) fn validate_for(&self, members: &[NodeId]) -> Result<(), ConfigError> {
        self.validate()?;
        // `members` is sorted: count the observers in it without walking it, so
        // building a node stays cheap in a very large cluster.
        let observers = self
            .observers
            .iter()
            .filter(|id| members.binary_search(id).is_ok())
            .count();
        let candidates = members.len() - observers;
        if candidates == 0 {
            return Err(ConfigError::NoCandidates);
        }
        let voters = if self.observers_vote {
            members.len()
        } else {
            candidates
        };
        if let Some(quorum) = self.quorum.size(voters) {
            if quorum == 0 || quorum > voters {
                return Err(ConfigError::ImpossibleQuorum { quorum, voters });
            }
        }
        Ok(())
    }
}
