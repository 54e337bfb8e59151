//! The `[health]` table: a check of the job on the member that runs it, and
//! how many failures in a row make that member step aside.
//!
//! ```toml
//! [health]
//! command = ["/usr/local/bin/check-job", "--quick"]   # or: url = "http://127.0.0.1:8080/healthz"
//! interval_ms = 5000          # a check this often while the job runs (the first one interval after its start)
//! timeout_ms = 2000           # a check that takes longer failed
//! failures = 3                # failures in a row: then step aside
//! backoff_ms = 60000          # for this long, so that a healthy member runs the job
//! ```

use std::time::Duration;

use serde::Deserialize;

use super::field;
use crate::error::ConfigError;

/// The least `health.interval_ms`: a check a tenth of a second at most, so
/// that a check that fails at once cannot turn the agent into a busy loop.
pub const MIN_HEALTH_INTERVAL: Duration = Duration::from_millis(100);

/// The `[health]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HealthSection {
    command: Option<Vec<String>>,
    url: Option<String>,
    #[serde(default = "HealthSection::interval_ms")]
    interval_ms: u64,
    #[serde(default = "HealthSection::timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "HealthSection::failures")]
    failures: u32,
    #[serde(default = "HealthSection::backoff_ms")]
    backoff_ms: u64,
}

impl HealthSection {
    fn interval_ms() -> u64 {
        5000
    }
    fn timeout_ms() -> u64 {
        2000
    }
    fn failures() -> u32 {
        3
    }
    fn backoff_ms() -> u64 {
        60_000
    }

    /// The checked policy.
    pub(super) fn check(self) -> Result<HealthPolicy, ConfigError> {
        let check = match (self.command, self.url) {
            (Some(command), None) => {
                if command.first().is_none_or(String::is_empty) {
                    return Err(field(
                        "health.command",
                        "is empty: give the program and its arguments, as [\"/path/check\", \"arg\"]",
                    ));
                }
                HealthCheck::Command(command)
            }
            (None, Some(url)) => {
                if !url.starts_with("http://") {
                    return Err(field(
                        "health.url",
                        format!("{url:?}: only http:// URLs are checked (a local endpoint)"),
                    ));
                }
                HealthCheck::Url(url)
            }
            (Some(_), Some(_)) => {
                return Err(field("health", "set `command` or `url`, not both"));
            }
            (None, None) => {
                return Err(field("health", "set `command` or `url`: what to check"));
            }
        };
        let interval = Duration::from_millis(self.interval_ms);
        if interval < MIN_HEALTH_INTERVAL {
            return Err(field(
                "health.interval_ms",
                format!(
                    "{} is below the least, {} ms",
                    self.interval_ms,
                    MIN_HEALTH_INTERVAL.as_millis()
                ),
            ));
        }
        let timeout = Duration::from_millis(self.timeout_ms);
        if timeout.is_zero() || timeout > interval {
            return Err(field(
                "health.timeout_ms",
                format!(
                    "{} must be above 0 and at most health.interval_ms ({})",
                    self.timeout_ms, self.interval_ms
                ),
            ));
        }
        if self.failures == 0 {
            return Err(field(
                "health.failures",
                "must be 1 or more: the failures in a row that make this member step aside",
            ));
        }
        let backoff = Duration::from_millis(self.backoff_ms);
        if backoff < super::MIN_BACKOFF {
            return Err(field(
                "health.backoff_ms",
                format!(
                    "{} is below the least, {} ms: a shorter back-off ends before another \
                     member could be elected",
                    self.backoff_ms,
                    super::MIN_BACKOFF.as_millis()
                ),
            ));
        }
        Ok(HealthPolicy {
            check,
            interval,
            timeout,
            failures: self.failures,
            backoff,
        })
    }
}

/// What is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HealthCheck {
    /// A program and its arguments: healthy when it exits with status 0.
    Command(Vec<String>),
    /// An HTTP URL: healthy when a GET answers 2xx.
    Url(String),
}

/// The checked `[health]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthPolicy {
    /// What is checked.
    pub check: HealthCheck,
    /// How often, while the job runs.
    pub interval: Duration,
    /// How long a check may take before it counts as failed.
    pub timeout: Duration,
    /// Failures in a row that make the member step aside.
    pub failures: u32,
    /// How long it then stays out of the elections.
    pub backoff: Duration,
}
