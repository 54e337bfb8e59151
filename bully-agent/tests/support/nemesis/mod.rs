//! The nemesis: randomized fault schedules for a cluster of real agents, as
//! Jepsen's nemesis inflicts them, and the checks that every run must pass.
//!
//! - [`schedule`]: a schedule drawn from a seed (size, stop times, faults,
//!   heals, waits) and the model of the cluster it keeps.
//! - [`run`]: runs one schedule on real processes and records its windows.
//! - [`verdict`]: judges the child log against those windows.

pub(crate) mod run;
pub(crate) mod schedule;
pub(crate) mod verdict;
