//! What the `node` target feeds its node: member lists, configurations (valid or
//! not), and inputs (messages, timeouts, commands, restarts) read from the
//! fuzzer's bytes.

use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::{
    Algorithm, Config, ConfigError, DurableState, Message, Node, NodeId, Preemption, Quorum, Term,
};

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
pub(super) fn duration(u: &mut Unstructured<'_>) -> Result<Duration> {
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
pub(super) fn config(u: &mut Unstructured<'_>, members: &[NodeId]) -> Result<Config> {
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

/// One input to the node under test.
#[derive(Debug)]
pub(super) enum Input {
    Message {
        from: NodeId,
        message: Message,
    },
    /// `handle_timeout(at)`: when due, just before or after, or in the past.
    Timeout {
        at: Instant,
    },
    /// The caller's clock moves (or, for a confused caller, runs backwards).
    Clock {
        to: Instant,
    },
    Start,
    StartElection,
    StepDown,
    Suspect(NodeId),
    AddMember(NodeId),
    RemoveMember(NodeId),
    /// A new incarnation, from the durable state or from nothing.
    Restart {
        durable: bool,
    },
    Restore(DurableState),
}

pub(super) fn node_input(u: &mut Unstructured<'_>, node: &Node, now: Instant) -> Result<Input> {
    Ok(match u.int_in_range(0..=15)? {
        0..=4 => Input::Message {
            from: sender(u, node)?,
            message: message(u, node)?,
        },
        5 | 6 => Input::Timeout {
            at: nudge(u, node.poll_timeout().unwrap_or(now))?,
        },
        7 => Input::Timeout { at: nudge(u, now)? },
        8 => Input::Clock { to: nudge(u, now)? },
        9 => Input::Start,
        10 => Input::StartElection,
        11 => Input::StepDown,
        12 => Input::Suspect(sender(u, node)?),
        13 => {
            let member = sender(u, node)?;
            if bool::arbitrary(u)? {
                Input::AddMember(member)
            } else {
                Input::RemoveMember(member)
            }
        }
        14 => Input::Restart {
            durable: bool::arbitrary(u)?,
        },
        _ => {
            let term = term_near(u, node.term())?;
            let vote = if bool::arbitrary(u)? {
                Some((term_near(u, node.term())?, sender(u, node)?))
            } else {
                None
            };
            Input::Restore(DurableState {
                term,
                vote,
                first_boot: false,
            })
        }
    })
}

/// An instant near `at`: the same, a little before or after, or much later.
pub(super) fn nudge(u: &mut Unstructured<'_>, at: Instant) -> Result<Instant> {
    let delta = Duration::from_micros(u64::from(u16::arbitrary(u)?));
    Ok(match u.int_in_range(0..=7)? {
        0 => at,
        1 => at.checked_sub(delta).unwrap_or(at),
        2 => at + Duration::from_secs(u64::from(u.int_in_range(0..=100_000u32)?)),
        _ => at + delta,
    })
}

/// Who a message claims to come from: a member, the node itself, or a stranger.
pub(super) fn sender(u: &mut Unstructured<'_>, node: &Node) -> Result<NodeId> {
    Ok(match u.int_in_range(0..=9)? {
        0 => node.id(),
        1 => NodeId::arbitrary(u)?,
        2 => NodeId(u64::from(u.int_in_range(0..=9u8)?)),
        _ => *u.choose(node.members())?,
    })
}

/// A term relative to `term`: the same, a little ahead or behind, far ahead, near
/// the end of the range, or anything.
pub(super) fn term_near(u: &mut Unstructured<'_>, term: Term) -> Result<Term> {
    let small = u64::from(u.int_in_range(0..=3u8)?);
    Ok(Term(match u.int_in_range(0..=7)? {
        0 => term.0.saturating_sub(small),
        1 => u64::MAX - small,
        2 => u64::arbitrary(u)?,
        3 => term.0.saturating_add(1 << 20).saturating_add(small),
        _ => term.0.saturating_add(small),
    }))
}

/// A message a peer might send `node`, ring lists of members and strangers included.
pub(super) fn message(u: &mut Unstructured<'_>, node: &Node) -> Result<Message> {
    let term = term_near(u, node.term())?;
    let round = if bool::arbitrary(u)? {
        u64::arbitrary(u)?
    } else {
        u64::from(u.int_in_range(0..=9u8)?)
    };
    let mut active = Vec::new();
    for _ in 0..u.int_in_range(0..=node.members().len() + 1)? {
        active.push(sender(u, node)?);
    }
    let initiator = if u.ratio(3, 4)? {
        active.first().copied().unwrap_or(node.id())
    } else {
        sender(u, node)?
    };
    Ok(match u.int_in_range(0..=8)? {
        0 => Message::Election { term },
        1 => Message::Answer { term },
        2 => Message::Coordinator { term, round: 0 },
        3 => Message::Heartbeat { term, round },
        4 => Message::Ack { term, round },
        5 => Message::Resign {
            term,
            successor: if u.ratio(1, 2)? {
                Some(sender(u, node)?)
            } else {
                None
            },
        },
        6 => Message::Takeover { term },
        7 => Message::RingElection {
            term,
            initiator,
            active,
        },
        _ => Message::RingCoordinator {
            term,
            leader: sender(u, node)?,
            initiator,
            active,
        },
    })
}
