//! The numbers a frame header carries besides the node ids: the cluster, the
//! sender's incarnation, and the key that authenticates the frame.

use core::fmt;
use core::time::Duration;

/// Names one cluster, so that two clusters sharing a network (or a key, by mistake)
/// never take each other's frames.
///
/// Pick it at random once per cluster and configure it on every member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ClusterId(pub u64);

impl fmt::Display for ClusterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// Which life of a node sent a frame: a number that must grow every time the node
/// restarts.
///
/// Sequence numbers start again at zero in each incarnation, so receivers key their
/// replay windows on `(incarnation, sequence)`: a frame from a higher incarnation
/// starts a fresh window, one from a lower incarnation is refused as a replay.
///
/// # Keeping it
///
/// An incarnation that fails to grow across a restart makes every peer refuse the
/// restarted node's frames as replays (until it passes the old value), so choose one
/// of these, best first:
///
/// 1. **Persist a counter.** At boot read the last incarnation, write
///    [`next`](Incarnation::next) durably (flush and sync) *before* sending any
///    frame, and use it.
/// 2. **Nothing persisted: derive it from the wall clock** with
///    [`from_unix_millis`](Incarnation::from_unix_millis). Restarts take more than a
///    millisecond, so it grows across restarts as long as the clock is never set
///    back by more than the time the node was down. bully-core never reads a clock,
///    so the caller passes the time in:
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use bully_core::wire::Incarnation;
///
/// // The driver reads the wall clock once, at boot.
/// let since_epoch = UNIX_EPOCH.elapsed()?;
/// let incarnation = Incarnation::from_duration_since_epoch(since_epoch);
/// assert!(incarnation > Incarnation::from_unix_millis(1_700_000_000_000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// 3. **Both**: `Incarnation::from_unix_millis(now).max(persisted.next())` survives
///    a clock set back as long as the counter was saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Incarnation(pub u64);

impl Incarnation {
    /// The incarnation for a node started `millis` milliseconds after the Unix epoch
    /// (read by the caller from the wall clock, for example `UNIX_EPOCH.elapsed()`).
    pub fn from_unix_millis(millis: u64) -> Incarnation {
        Incarnation(millis)
    }

    /// The incarnation for a node started `since_epoch` after the Unix epoch. Times
    /// beyond `u64::MAX` milliseconds (half a billion years) saturate.
    pub fn from_duration_since_epoch(since_epoch: Duration) -> Incarnation {
        Incarnation(u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX))
    }

    /// The incarnation after this one, for a persisted counter. Saturates, so it
    /// never goes backwards.
    #[must_use]
    pub fn next(self) -> Incarnation {
        Incarnation(self.0.saturating_add(1))
    }
}

impl fmt::Display for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Names a cluster key, so that receivers know which key checks a frame while keys
/// are being rotated. Id 0 ([`KeyId::NONE`]) marks unauthenticated frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct KeyId(pub u32);

impl KeyId {
    /// The id carried by frames sent under [`Auth::None`](super::Auth::None); no
    /// [`Key`](super::Key) can have it.
    pub const NONE: KeyId = KeyId(0);
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
