//! Counters a node keeps about its own traffic and about the input it refused.

use core::fmt;
use core::ops::{Index, IndexMut};

use crate::message::MessageKind;

/// One counter per [`MessageKind`].
///
/// Its `Debug` names each kind that was counted, and leaves out those at
/// zero; `Display` is the same as `kind=count` pairs, for logs.
///
/// ```
/// use bully_core::{MessageCounts, MessageKind};
/// let mut counts = MessageCounts::default();
/// counts[MessageKind::Heartbeat] += 3;
/// counts[MessageKind::Ack] += 2;
/// assert_eq!(counts.total(), 5);
/// assert_eq!(format!("{counts:?}"), "MessageCounts { Heartbeat: 3, Ack: 2 }");
/// assert_eq!(counts.to_string(), "Heartbeat=3 Ack=2");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MessageCounts([u64; MessageKind::ALL.len()]);

impl MessageCounts {
    /// The sum over every kind.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(kind, count)` for every kind, in [`MessageKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (MessageKind, u64)> + '_ {
        MessageKind::ALL.iter().map(|&kind| (kind, self[kind]))
    }

    /// Adds another set of counts to this one.
    pub fn add(&mut self, other: &MessageCounts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }
}

impl Index<MessageKind> for MessageCounts {
    type Output = u64;
    fn index(&self, kind: MessageKind) -> &u64 {
        &self.0[kind.index()]
    }
}

impl IndexMut<MessageKind> for MessageCounts {
    fn index_mut(&mut self, kind: MessageKind) -> &mut u64 {
        &mut self.0[kind.index()]
    }
}

impl fmt::Debug for MessageCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_counted(
            f,
            "MessageCounts",
            self.iter().map(|(kind, n)| (kind.name(), n)),
        )
    }
}

/// `Name { label: count, .. }` over the counts that are not zero: a bare array
/// of counters says nothing to whoever reads a log.
fn debug_counted<'a>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    counts: impl Iterator<Item = (&'a str, u64)>,
) -> fmt::Result {
    let mut out = f.debug_struct(name);
    for (label, count) in counts.filter(|&(_, count)| count > 0) {
        out.field(label, &count);
    }
    out.finish()
}

impl fmt::Display for MessageCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (kind, count) in self.iter().filter(|&(_, count)| count > 0) {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{kind}={count}")?;
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// Why a node refused a peer's message. Every refusal is counted in
/// [`Stats::dropped`]; none changes the node's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum DropReason {
    /// The sender is not a member.
    NotMember,
    /// The sender claims to be this node.
    FromSelf,
    /// The message's term is more than `Config::max_term_lead` ahead of this node's.
    TermTooFarAhead,
    /// A leadership older than the one this node has accepted (a fenced leader).
    StaleLeader,
    /// Belongs to an election that has already ended or been superseded.
    Outdated,
    /// A Coordinator this node may not vote for: it voted for another in that
    /// term, or its promise to a leader whose lease may still run forbids it.
    Refused,
    /// Makes no sense from this sender under this algorithm (an Answer from a lower
    /// member, a ring token that lists strangers, ...).
    Unexpected,
    /// With a quorum: an Election this node will not answer because it does not
    /// reach a quorum itself (a member that cannot lead must not hold a lower one
    /// back).
    NoQuorum,
}

impl DropReason {
    /// Every reason, in a fixed order.
    pub const ALL: [DropReason; 8] = [
        DropReason::NotMember,
        DropReason::FromSelf,
        DropReason::TermTooFarAhead,
        DropReason::StaleLeader,
        DropReason::Outdated,
        DropReason::Refused,
        DropReason::Unexpected,
        DropReason::NoQuorum,
    ];

    /// A short name for logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::NotMember => "not_member",
            DropReason::FromSelf => "from_self",
            DropReason::TermTooFarAhead => "term_too_far_ahead",
            DropReason::StaleLeader => "stale_leader",
            DropReason::Outdated => "outdated",
            DropReason::Refused => "refused",
            DropReason::Unexpected => "unexpected",
            DropReason::NoQuorum => "no_quorum",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One counter per [`DropReason`].
///
/// Its `Debug` names each reason that was counted, and leaves out those at
/// zero.
///
/// ```
/// use bully_core::{DropCounts, DropReason};
/// let mut counts = DropCounts::default();
/// counts[DropReason::StaleLeader] += 1;
/// assert_eq!(format!("{counts:?}"), "DropCounts { stale_leader: 1 }");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DropCounts([u64; DropReason::ALL.len()]);

impl DropCounts {
    /// The sum over every reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(reason, count)` for every reason, in [`DropReason::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&reason| (reason, self[reason]))
    }
}

impl fmt::Debug for DropCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_counted(
            f,
            "DropCounts",
            self.iter().map(|(reason, n)| (reason.name(), n)),
        )
    }
}

impl Index<DropReason> for DropCounts {
    type Output = u64;
    fn index(&self, reason: DropReason) -> &u64 {
        &self.0[reason as usize]
    }
}

impl IndexMut<DropReason> for DropCounts {
    fn index_mut(&mut self, reason: DropReason) -> &mut u64 {
        &mut self.0[reason as usize]
    }
}

/// What a node has done and refused since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Stats {
    /// Messages queued for sending, by kind.
    pub sent: MessageCounts,
    /// Messages accepted from members for processing, by kind (dropped ones included
    /// when the drop was a protocol decision, excluded when the sender was refused).
    pub received: MessageCounts,
    /// Elections this node started or joined.
    pub elections_started: u64,
    /// Elections it could not start: the term space is exhausted (a term of
    /// `u64::MAX`, which `Config::max_term_lead` keeps peers from forcing).
    pub elections_refused: u64,
    /// Leaderships accepted (`LeaderElected` events), its own included.
    pub leaders_seen: u64,
    /// Times this node became leader.
    pub times_leader: u64,
    /// Times its leader timeout fired while it followed a leader: suspicions,
    /// right (the leader had crashed or was cut off) or wrong (its heartbeats
    /// were lost or late; see `Config::with_loss_adaptive_detection`).
    pub leaders_suspected: u64,
    /// Peer input refused, by reason.
    pub dropped: DropCounts,
}
