//! The simulated network: messages in flight, per-link behaviour, and partitions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use bully_core::{Instant, Message, NodeId};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// How one directed link behaves. Every draw comes from the simulation's seeded
/// generator, so the same seed gives the same losses, copies and delays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// The fixed part of the one-way delay.
    pub delay: Duration,
    /// An extra delay drawn uniformly from `0..=jitter` for each message; messages
    /// overtake each other when it exceeds their spacing (reordering).
    pub jitter: Duration,
    /// Probability that a message is lost.
    pub loss: f64,
    /// Probability that a delivered message is delivered twice.
    pub duplicate: f64,
}

impl LinkConfig {
    /// A reliable link with a fixed delay.
    pub fn reliable(delay: Duration) -> LinkConfig {
        LinkConfig {
            delay,
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
        }
    }

    /// The longest this link can take to deliver.
    pub fn max_delay(&self) -> Duration {
        self.delay + self.jitter
    }
}

/// What the network did with a message at the moment it was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendOutcome {
    /// On its way (and possibly duplicated).
    InFlight,
    /// Lost to the link's loss rate.
    Lost,
    /// Blocked by a partition or a cut link.
    Blocked,
}

/// A message on its way.
#[derive(Debug)]
pub(crate) struct InFlight {
    /// When it was sent, for a viewer that draws it on its way.
    pub(crate) sent: Instant,
    pub(crate) at: Instant,
    /// The sender's id (forged traffic may name a non-member).
    pub(crate) sender: NodeId,
    pub(crate) to: usize,
    pub(crate) message: Message,
    pub(crate) depth: u64,
}

/// Emptied buckets kept for reuse, so a steady stream of instants allocates
/// nothing.
const SPARE_BUCKETS: usize = 64;

/// Links, partitions and the queue of messages in flight. Link state is sparse
/// (overrides and cuts in ordered maps), so a 100,000-member cluster costs memory
/// in proportion to its faults, not to `N^2`.
#[derive(Debug)]
pub(crate) struct Network {
    /// Messages in flight by arrival instant, each instant's in send order: the
    /// order of delivery is (arrival, send order), as a heap keyed on both would
    /// give, but a fixed-delay network puts every message of an instant in one
    /// bucket, so a million messages in flight cost a push and a pop at the ends
    /// of a `VecDeque` each, not a sift through a heap of a million.
    queue: BTreeMap<Instant, VecDeque<InFlight>>,
    in_flight: usize,
    spare: Vec<VecDeque<InFlight>>,
    default_link: LinkConfig,
    links: BTreeMap<(usize, usize), LinkConfig>,
    /// Partition group of each member; members in different groups cannot talk.
    groups: Vec<u32>,
    /// Directed links cut one way (`(from, to)`).
    cuts: BTreeSet<(usize, usize)>,
}

impl Network {
    pub(crate) fn new(members: usize, default_link: LinkConfig) -> Network {
        Network {
            queue: BTreeMap::new(),
            in_flight: 0,
            spare: Vec::new(),
            default_link,
            links: BTreeMap::new(),
            groups: vec![0; members],
            cuts: BTreeSet::new(),
        }
    }

    pub(crate) fn link(&self, from: usize, to: usize) -> LinkConfig {
        self.links
            .get(&(from, to))
            .copied()
            .unwrap_or(self.default_link)
    }

    pub(crate) fn default_link(&self) -> LinkConfig {
        self.default_link
    }

    pub(crate) fn set_default_link(&mut self, link: LinkConfig) {
        self.default_link = link;
    }

    pub(crate) fn set_link(&mut self, from: usize, to: usize, link: LinkConfig) {
        self.links.insert((from, to), link);
    }

    pub(crate) fn is_blocked(&self, from: usize, to: usize) -> bool {
        self.groups[from] != self.groups[to] || self.cuts.contains(&(from, to))
    }

    pub(crate) fn set_groups(&mut self, groups: Vec<u32>) {
        self.groups = groups;
    }

    pub(crate) fn cut(&mut self, from: usize, to: usize) {
        self.cuts.insert((from, to));
    }

    /// Removes every partition, cut and per-link override.
    pub(crate) fn heal(&mut self) {
        self.groups.iter_mut().for_each(|group| *group = 0);
        self.cuts.clear();
        self.links.clear();
    }

    /// Whether any fault (partition, cut, lossy or slow link) is in place, given
    /// the timing model's `max_delay`.
    pub(crate) fn is_faulty(&self, max_delay: Duration) -> bool {
        let lossy = |link: &LinkConfig| link.loss > 0.0 || link.max_delay() > max_delay;
        self.groups.iter().any(|&group| group != 0)
            || !self.cuts.is_empty()
            || lossy(&self.default_link)
            || self.links.values().any(lossy)
    }

    /// Puts a message on the wire, drawing its fate from `rng`.
    pub(crate) fn send(
        &mut self,
        rng: &mut ChaCha8Rng,
        now: Instant,
        (from, sender): (usize, NodeId),
        to: usize,
        message: Message,
        depth: u64,
    ) -> SendOutcome {
        if self.is_blocked(from, to) {
            return SendOutcome::Blocked;
        }
        let link = self.link(from, to);
        if link.loss > 0.0 && rng.random_bool(link.loss.min(1.0)) {
            return SendOutcome::Lost;
        }
        if link.duplicate > 0.0 && rng.random_bool(link.duplicate.min(1.0)) {
            let at = now + link.delay + Self::draw_jitter(rng, link.jitter);
            self.push((now, at), sender, to, message.clone(), depth);
        }
        let at = now + link.delay + Self::draw_jitter(rng, link.jitter);
        self.push((now, at), sender, to, message, depth);
        SendOutcome::InFlight
    }

    fn draw_jitter(rng: &mut ChaCha8Rng, jitter: Duration) -> Duration {
        if jitter.is_zero() {
            return Duration::ZERO;
        }
        let nanos = u64::try_from(jitter.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.random_range(0..=nanos))
    }

    fn push(
        &mut self,
        (sent, at): (Instant, Instant),
        sender: NodeId,
        to: usize,
        message: Message,
        depth: u64,
    ) {
        let spare = &mut self.spare;
        self.queue
            .entry(at)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(InFlight {
                sent,
                at,
                sender,
                to,
                message,
                depth,
            });
        self.in_flight += 1;
    }

    pub(crate) fn next_arrival(&self) -> Option<Instant> {
        self.queue.first_key_value().map(|(&at, _)| at)
    }

    /// The earliest message, the first sent among those arriving at that instant.
    pub(crate) fn pop(&mut self) -> Option<InFlight> {
        let mut bucket = self.queue.first_entry()?;
        let in_flight = bucket.get_mut().pop_front();
        if bucket.get().is_empty() {
            let emptied = bucket.remove();
            if self.spare.len() < SPARE_BUCKETS {
                self.spare.push(emptied);
            }
        }
        self.in_flight -= usize::from(in_flight.is_some());
        in_flight
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Every message in flight, in delivery order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &InFlight> {
        self.queue.values().flatten()
    }
}
