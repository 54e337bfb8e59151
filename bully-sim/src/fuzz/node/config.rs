//! The configurations [`node_with_arbitrary_config`](super::node_with_arbitrary_config)
//! tries, valid or not, the member lists it builds them for, and what the
//! documented rules say `Node::new` must make of them.

use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::{Algorithm, Config, ConfigError, NodeId, Preemption, Quorum};

/// A member list as a caller might give one: small ids mostly, sometimes huge
/// ones, sometimes a repeat.
pub(super) fn member_list(u: &mut Unstructured<'_>) -> Result<Vec<NodeId>> {
    let len = u.int_in_range(1..=6)?;
    let mut ids = Vec::with_capacity(len);
    for _ in 0..len {
        ids.push(match u.int_in_range(0..=7)? {
            0 => NodeId(u64::MAX - u64::from(u.int_in_range(0..=2u8)?)),
            1 => NodeId::arbitrary(u)?,
            _ => NodeId(u64::from(u.int_in_range(0..=8u8)?)),
        });
    }
    Ok(ids)
}

/// A duration a configuration might hold: small and plausible, zero, the maximum,
/// just past it, or anything.
fn duration(u: &mut Unstructured<'_>) -> Result<Duration> {
    Ok(match u.int_in_range(0..=7)? {
        0 => Duration::ZERO,
        1 => Config::MAX_DURATION,
        2 => Config::MAX_DURATION + Duration::from_nanos(1),
        3 => Duration::arbitrary(u)?,
        4 => Duration::from_nanos(u64::from(u.int_in_range(1..=1000u16)?)),
        _ => Duration::from_millis(u64::from(u.int_in_range(1..=2000u16)?)),
    })
}

/// An arbitrary configuration, built through its public setters; valid or not.
pub(super) fn arbitrary_config(u: &mut Unstructured<'_>, members: &[NodeId]) -> Result<Config> {
    let mut config = Config::default()
        .with_algorithm(Algorithm::arbitrary(u)?)
        .with_stagger_detection(bool::arbitrary(u)?);
    config = config.with_preemption(match u.int_in_range(0..=2)? {
        0 => Preemption::Always,
        1 => Preemption::Never,
        _ => Preemption::AfterStable(duration(u)?),
    });
    config = config.with_quorum(match u.int_in_range(0..=3)? {
        0 | 1 => Quorum::None,
        2 => Quorum::Majority,
        _ => Quorum::AtLeast(u.int_in_range(0..=7)?),
    });
    if u.ratio(1, 4)? {
        config = config.with_heartbeat_interval(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_leader_timeout(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_max_message_delay(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_max_processing_time(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_answer_timeout(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_coordinator_timeout(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_max_term_lead(match u.int_in_range(0..=2)? {
            0 => u64::arbitrary(u)?,
            _ => u64::from(u.int_in_range(0..=4u8)?),
        });
    }
    if u.ratio(1, 4)? {
        let drift = match u.int_in_range(0..=3)? {
            0 => f64::arbitrary(u)?,
            1 => 0.1,
            2 => 0.0,
            _ => f64::from(u.int_in_range(0..=100u8)?) / 1000.0,
        };
        config = config.with_clock_drift(drift);
    }
    if u.ratio(1, 4)? {
        let mut observers = Vec::new();
        for &id in members {
            if bool::arbitrary(u)? {
                observers.push(id);
            }
        }
        config = config
            .with_observers(observers)
            .with_observers_vote(bool::arbitrary(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_lease_margin(duration(u)?);
    }
    Ok(config)
}

/// Every derived duration a configuration publishes, valid or not: none may
/// panic (the node's own timings, derived from the same settings, are exercised
/// by running the node).
pub(super) fn exercise_config(config: &Config, members: usize) {
    let _ = config.validate();
    let _ = config.round_trip();
    let _ = config.answer_timeout();
    let _ = config.coordinator_timeout();
    let _ = config.follower_lease();
    let _ = config.leader_lease();
    let _ = config.default_lease_margin();
    let _ = config.lease_margin();
    let _ = config.failover_bound(members);
    let _ = config.settle_bound(members);
}

/// What building a node of `members` (sorted, without duplicates) with `config`
/// must give, worked out here from the documented rules rather than asked of
/// the crate: the settings are valid, somebody can stand, and the quorum can be
/// met by the voting members.
pub(super) fn expected_validation(config: &Config, members: &[NodeId]) -> Result<(), ConfigError> {
    config.validate()?;
    let observers = members.iter().filter(|&&id| config.is_observer(id)).count();
    let candidates = members.len() - observers;
    if candidates == 0 {
        return Err(ConfigError::NoCandidates);
    }
    let voters = if config.observers_vote() {
        members.len()
    } else {
        candidates
    };
    let quorum = match config.quorum() {
        Quorum::Majority => Some(voters / 2 + 1),
        Quorum::AtLeast(n) => Some(n),
        _ => None,
    };
    match quorum {
        Some(quorum) if quorum == 0 || quorum > voters => {
            Err(ConfigError::ImpossibleQuorum { quorum, voters })
        }
        _ => Ok(()),
    }
}
