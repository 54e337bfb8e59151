//! What [`node`](super::node) feeds its node: inputs (messages, timeouts,
//! commands, restarts) read from the fuzzer's bytes.

use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::{DurableState, Instant, Message, Node, NodeId, Term};

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
    /// `hand_over(to, until)`.
    HandOver {
        to: Option<NodeId>,
        until: Instant,
    },
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
        11 => {
            if u.ratio(3, 4)? {
                Input::StepDown
            } else {
                Input::HandOver {
                    to: if bool::arbitrary(u)? {
                        Some(sender(u, node)?)
                    } else {
                        None
                    },
                    until: nudge(u, now)?,
                }
            }
        }
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
