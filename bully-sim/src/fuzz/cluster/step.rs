//! What [`cluster`](super::cluster) does to its simulation: the steps read
//! from the bytes, and how each is applied.

use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::{Message, NodeId};

use crate::chaos::Action;
use crate::{Simulation, TraceEntry};

/// One thing the `cluster` target does to the simulation.
#[derive(Clone, Debug)]
pub(super) enum Step {
    /// A fault or command of the simulator's own vocabulary.
    Act(Action),
    /// Deliver the next message or fire the next timer.
    Deliver,
    /// Send again the `index`-th message sent so far (counted from the latest),
    /// as a duplicate delayed beyond the timing model.
    Replay(usize),
    /// A message from someone outside the cluster.
    Forge {
        from: NodeId,
        to: NodeId,
        message: Message,
    },
}

pub(super) fn step(u: &mut Unstructured<'_>, members: &[NodeId]) -> Result<Step> {
    let member = |u: &mut Unstructured<'_>| -> Result<NodeId> {
        Ok(if u.ratio(1, 32)? {
            stranger(members, 0)
        } else {
            *u.choose(members)?
        })
    };
    let millis = |u: &mut Unstructured<'_>, max: u16| -> Result<Duration> {
        Ok(Duration::from_millis(u64::from(u.int_in_range(0..=max)?)))
    };
    Ok(match u.int_in_range(0..=19)? {
        0..=3 => Step::Act(Action::Advance(millis(u, 600)?)),
        4..=6 => Step::Deliver,
        7 => Step::Act(Action::Crash(member(u)?)),
        8 => Step::Act(if bool::arbitrary(u)? {
            Action::Restart(member(u)?)
        } else {
            Action::RestartDurable(member(u)?)
        }),
        9 => Step::Act(Action::Partition {
            mask: u64::arbitrary(u)?,
        }),
        10 => Step::Act(if bool::arbitrary(u)? {
            Action::Cut {
                from: member(u)?,
                to: member(u)?,
            }
        } else {
            Action::CutBoth {
                a: member(u)?,
                b: member(u)?,
            }
        }),
        11 => Step::Act(Action::Loss(u.int_in_range(0..=100)?)),
        12 => Step::Act(Action::Duplicate(u.int_in_range(0..=100)?)),
        13 => Step::Act(Action::Jitter(millis(u, 80)?)),
        14 => Step::Act(Action::Heal),
        15 => Step::Act(Action::Suspect {
            node: member(u)?,
            suspect: member(u)?,
        }),
        16 => Step::Act(match u.int_in_range(0..=3)? {
            0 | 1 => Action::StartElection(member(u)?),
            2 => Action::StepDown(member(u)?),
            _ => Action::HandOver {
                node: member(u)?,
                to: if bool::arbitrary(u)? {
                    Some(member(u)?)
                } else {
                    None
                },
                abstain: millis(u, 5_000)?,
            },
        }),
        17 | 18 => Step::Replay(usize::from(u8::arbitrary(u)?)),
        _ => Step::Forge {
            from: stranger(members, u8::arbitrary(u)?),
            to: member(u)?,
            message: Message::arbitrary(u)?,
        },
    })
}

/// The `k`-th id above the highest member that is no member (ids wrap past
/// `u64::MAX`): for members `1..=n`, `n + 1 + k`, as the committed corpus
/// was made with.
fn stranger(members: &[NodeId], k: u8) -> NodeId {
    let highest = members.iter().map(|id| id.0).max().unwrap_or(0);
    let mut id = highest.wrapping_add(1).wrapping_add(u64::from(k));
    while members.contains(&NodeId(id)) {
        id = id.wrapping_add(1);
    }
    NodeId(id)
}

pub(super) fn apply(sim: &mut Simulation, step: &Step) {
    match step {
        // An action naming a non-member is refused, and changes nothing.
        Step::Act(action) => {
            let _ = sim.apply(action);
        }
        Step::Deliver => {
            sim.step();
        }
        Step::Replay(back) => {
            let sent: Vec<(NodeId, NodeId, &Message)> = sim
                .trace()
                .iter()
                .rev()
                .filter_map(|record| match &record.entry {
                    TraceEntry::Send {
                        from, to, message, ..
                    } => Some((*from, *to, message)),
                    _ => None,
                })
                .collect();
            if sent.is_empty() {
                return;
            }
            let (from, to, message) = sent[back % sent.len()];
            let message = message.clone();
            if !sim.has_faulted() {
                // A copy delivered this late is a timing fault: switching loss on
                // and off tells the simulator the run left the synchronous model,
                // as a lossy link would. (Loss is 0 until then: any loss would
                // have left it already.)
                let _ = sim.apply(&Action::Loss(1));
                let _ = sim.apply(&Action::Loss(0));
            }
            let _ = sim.inject(from, to, message);
        }
        Step::Forge { from, to, message } => {
            let _ = sim.inject(*from, *to, message.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stranger_is_above_the_members_and_none_of_them() {
        let ones: Vec<NodeId> = (1..=3).map(NodeId).collect();
        assert_eq!(stranger(&ones, 0), NodeId(4));
        assert_eq!(stranger(&ones, 5), NodeId(9));
        assert_eq!(stranger(&[NodeId(u64::MAX)], 0), NodeId(0));
        assert_eq!(stranger(&[NodeId(u64::MAX), NodeId(0)], 0), NodeId(1));
    }
}
