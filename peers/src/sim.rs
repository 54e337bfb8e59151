//! The deterministic discrete-event loop: one virtual clock, seeded link delays,
//! per-directed-link cuts and crashes, the same for every library; optionally
//! random message loss and a heavy-tailed delay (jitter), both off by
//! default and drawing nothing from the generator while off.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::peer::{Outbox, Peer, Time};

/// Message counts by kind, in the order kinds were first seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `(kind, messages sent)`.
    pub by_kind: Vec<(&'static str, u64)>,
}

impl Counts {
    fn add(&mut self, kind: &'static str) {
        match self.by_kind.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.by_kind.push((kind, 1)),
        }
    }

    /// Every message counted.
    pub fn total(&self) -> u64 {
        self.by_kind.iter().map(|(_, n)| n).sum()
    }

    /// The messages whose kind passes `keep`.
    pub fn total_where(&self, keep: impl Fn(&'static str) -> bool) -> u64 {
        self.by_kind
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(_, n)| n)
            .sum()
    }

    /// `kind count, kind count`, sorted by kind.
    pub fn describe(&self) -> String {
        let mut kinds = self.by_kind.clone();
        kinds.sort();
        kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How long messages take: uniform in `[min, max]`, drawn per message from the run's seed.
#[derive(Clone, Copy, Debug)]
pub struct Delays {
    /// Shortest delay.
    pub min: Duration,
    /// Longest delay (the bound bully-core's `max_message_delay` is set to).
    pub max: Duration,
}

impl Default for Delays {
    /// 15 to 20 ms, under bully-core's default 20 ms delay bound.
    fn default() -> Self {
        Delays {
            min: Duration::from_millis(15),
            max: Duration::from_millis(20),
        }
    }
}

/// The jitter model: on top of the uniform base delay, a share of the messages
/// takes an extra delay drawn from an exponential distribution (a retransmission, a
/// scheduling or garbage-collection pause, a queue): a heavy tail that breaks the
/// delay bound now and then, and reorders messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jitter {
    /// Share of messages that take an extra delay.
    pub probability: f64,
    /// Mean of the exponential extra delay.
    pub mean_extra: Duration,
}

impl Jitter {
    /// The detector comparison's jitter: 10 % of messages late by 100 ms on average (exponential):
    /// one in 10 breaks the 20 ms bound, one in 74 by more than 200 ms, one in
    /// 1,480 by more than 500 ms (a whole leader timeout).
    pub const TAIL: Jitter = Jitter {
        probability: 0.1,
        mean_extra: Duration::from_millis(100),
    };
}

enum Pending<M> {
    Deliver { from: usize, to: usize, msg: M },
    // Cancelled lazily: fires only if still the member's armed `(time, generation)`.
    Deadline { node: usize, generation: u64 },
}

/// A cluster of `N` members `1..=N` of one library, on one virtual clock.
pub struct Sim<P: Peer> {
    now: Time,
    peers: Vec<P>,
    alive: Vec<bool>,
    /// `cut[from * n + to]`: messages from `from` to `to` are lost.
    cut: Vec<bool>,
    delays: Delays,
    rng: ChaCha8Rng,
    // Events per instant, in the order they were scheduled: delivery order is
    // (time, scheduling order) with a few thousand keys however many messages fly.
    queue: BTreeMap<Time, VecDeque<Pending<P::Msg>>>,
    generation: u64,
    armed: Vec<Option<(Time, u64)>>,
    out: Outbox<P::Msg>,
    // Who names whom, kept current so agreement is O(1) per event.
    named: Vec<Option<u64>>,
    followers: Vec<u32>,
    live: usize,
    agreed_since: Option<Time>,
    counts: Counts,
    counts_at_quiet: Counts,
    last_election_send: Option<Time>,
    dropped: u64,
    // The detector comparison: per-message loss probability and jitter; 0 and `None` draw nothing.
    loss: f64,
    jitter: Option<Jitter>,
    offered: u64,
    lost: u64,
}

impl<P: Peer> Sim<P> {
    /// A cluster of the given members (member `i + 1` is `peers[i]`), none started yet.
    pub fn new(peers: Vec<P>, delays: Delays, seed: u64) -> Self {
        let n = peers.len();
        for (i, p) in peers.iter().enumerate() {
            assert_eq!(p.id(), i as u64 + 1, "members are 1..=N in order");
        }
        Sim {
            now: Duration::ZERO,
            alive: vec![false; n],
            cut: vec![false; n * n],
            delays,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x0005_eed0_f1e7),
            queue: BTreeMap::new(),
            generation: 0,
            armed: vec![None; n],
            out: Vec::new(),
            named: vec![None; n],
            followers: vec![0; n + 1],
            live: 0,
            agreed_since: None,
            counts: Counts::default(),
            counts_at_quiet: Counts::default(),
            last_election_send: None,
            dropped: 0,
            loss: 0.0,
            jitter: None,
            offered: 0,
            lost: 0,
            peers,
        }
    }

    /// Every message that reaches a link (not cut, to a member) is lost with
    /// probability `loss`, drawn from the run's generator (0, the default, draws
    /// nothing).
    pub fn set_loss(&mut self, loss: f64) {
        assert!((0.0..=1.0).contains(&loss), "a probability");
        self.loss = loss;
    }

    /// Delays take the jitter model's extra delay on top of the base range
    /// (`None`, the default, draws nothing).
    pub fn set_jitter(&mut self, jitter: Option<Jitter>) {
        self.jitter = jitter;
    }

    /// Messages that reached a link (not cut, addressed to another member).
    pub fn offered(&self) -> u64 {
        self.offered
    }

    /// Messages lost to the loss probability (also counted in [`Sim::dropped`]).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Members in the cluster.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Always false: a cluster has members.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// The virtual clock.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Member `id`'s state machine.
    pub fn peer(&self, id: u64) -> &P {
        &self.peers[id as usize - 1]
    }

    /// Member `id`'s state machine, to drive it directly (the micro-benchmarks).
    pub fn peer_mut(&mut self, id: u64) -> &mut P {
        &mut self.peers[id as usize - 1]
    }

    /// Takes the members out (for measuring what they hold).
    pub fn into_peers(self) -> Vec<P> {
        self.peers
    }

    /// Whether member `id` is up.
    pub fn is_alive(&self, id: u64) -> bool {
        self.alive[id as usize - 1]
    }

    /// Boots every member at the current time, in id order.
    pub fn start_all(&mut self) {
        for i in 0..self.peers.len() {
            self.alive[i] = true;
            self.live += 1;
            self.peers[i].start(self.now, &mut self.out);
            self.after_input(i);
        }
    }

    /// Member `id` crashes: it receives nothing and does nothing from now on.
    pub fn crash(&mut self, id: u64) {
        let i = id as usize - 1;
        if !self.alive[i] {
            return;
        }
        self.alive[i] = false;
        self.live -= 1;
        self.set_named(i, None);
        self.armed[i] = None;
        self.refresh_agreement();
    }

    /// Messages from `from` to `to` are lost from now on (one direction).
    pub fn cut(&mut self, from: u64, to: u64) {
        let n = self.peers.len();
        self.cut[(from as usize - 1) * n + (to as usize - 1)] = true;
    }

    /// Whether messages from `from` to `to` are lost.
    pub fn is_cut(&self, from: u64, to: u64) -> bool {
        self.cut[(from as usize - 1) * self.peers.len() + (to as usize - 1)]
    }

    /// Every link works again; omnipaxos members are told which peers reconnected.
    pub fn heal(&mut self) {
        let n = self.peers.len();
        for a in 0..n {
            for b in 0..n {
                if self.cut[a * n + b] {
                    self.cut[a * n + b] = false;
                    for (me, other) in [(a, b), (b, a)] {
                        if self.alive[me] {
                            self.peers[me].on_reconnect(other as u64 + 1, &mut self.out);
                            self.after_input(me);
                        }
                    }
                }
            }
        }
    }

    /// Runs every event up to and including `until`; the clock ends at `until`.
    pub fn run_until(&mut self, until: Time) {
        while let Some((&at, _)) = self.queue.first_key_value() {
            if at > until {
                break;
            }
            self.step();
        }
        self.now = self.now.max(until);
    }

    /// Runs until every live member names the same live leader that leads, or
    /// `until`; returns the time agreement was reached.
    pub fn run_until_agreed(&mut self, until: Time) -> Option<Time> {
        while self.agreed_since.is_none() {
            match self.queue.first_key_value() {
                Some((&at, _)) if at <= until => self.step(),
                _ => {
                    self.now = self.now.max(until);
                    return None;
                }
            }
        }
        self.agreed_since
    }

    /// Runs until no election message (a non-steady kind) has been sent for
    /// `window`, or `until`; returns when the last one was sent (`None`: none was
    /// sent since the counters were reset).
    pub fn run_until_quiet(&mut self, window: Duration, until: Time) -> Option<Time> {
        loop {
            let quiet_at = self.last_election_send.map_or(self.now, |t| t + window);
            let stop = quiet_at.max(self.now).min(until);
            self.run_until(stop);
            let quiet_at = self.last_election_send.map_or(self.now, |t| t + window);
            if self.now >= quiet_at || self.now >= until {
                return self.last_election_send;
            }
        }
    }

    fn step(&mut self) {
        let Some(mut bucket) = self.queue.first_entry() else {
            return;
        };
        let at = *bucket.key();
        let pending = bucket
            .get_mut()
            .pop_front()
            .expect("no empty bucket is kept");
        if bucket.get().is_empty() {
            bucket.remove();
        }
        self.now = at;
        match pending {
            Pending::Deliver { from, to, msg } => {
                if self.alive[to] {
                    self.peers[to].on_message(at, from as u64 + 1, msg, &mut self.out);
                    self.after_input(to);
                } else {
                    self.dropped += 1;
                }
            }
            Pending::Deadline { node, generation } => {
                if self.armed[node] != Some((at, generation)) {
                    return;
                }
                self.armed[node] = None;
                if self.alive[node] {
                    self.peers[node].on_deadline(at, &mut self.out);
                    self.after_input(node);
                }
            }
        }
    }

    fn after_input(&mut self, i: usize) {
        let n = self.peers.len();
        let mut out = std::mem::take(&mut self.out);
        for (to, msg) in out.drain(..) {
            let kind = P::kind(&msg);
            self.counts.add(kind);
            if !P::is_steady(kind) {
                self.last_election_send = Some(self.now);
                self.counts_at_quiet
                    .by_kind
                    .clone_from(&self.counts.by_kind);
            }
            let Some(j) = (to as usize).checked_sub(1).filter(|&j| j < n && j != i) else {
                self.dropped += 1;
                continue;
            };
            if self.cut[i * n + j] {
                self.dropped += 1;
                continue;
            }
            self.offered += 1;
            if self.loss > 0.0 && self.rng.random_bool(self.loss) {
                self.lost += 1;
                self.dropped += 1;
                continue;
            }
            let span = (self.delays.max - self.delays.min).as_micros() as u64;
            let mut delay =
                self.delays.min + Duration::from_micros(self.rng.random_range(0..=span));
            if let Some(j) = self.jitter
                && self.rng.random_bool(j.probability)
            {
                // Exponential by inversion; 1 - u lies in (0, 1].
                let u: f64 = self.rng.random();
                delay += j.mean_extra.mul_f64(-(1.0 - u).ln());
            }
            self.schedule(
                self.now + delay,
                Pending::Deliver {
                    from: i,
                    to: j,
                    msg,
                },
            );
        }
        self.out = out;
        let wanted = self.peers[i].deadline();
        let wanted = wanted.map(|t| t.max(self.now));
        if self.armed[i].map(|(t, _)| t) != wanted {
            self.armed[i] = None;
            if let Some(t) = wanted {
                self.generation += 1;
                self.armed[i] = Some((t, self.generation));
                self.schedule(
                    t,
                    Pending::Deadline {
                        node: i,
                        generation: self.generation,
                    },
                );
            }
        }
        let leader = self.peers[i].leader();
        self.set_named(i, leader);
        self.refresh_agreement();
    }

    fn schedule(&mut self, at: Time, event: Pending<P::Msg>) {
        self.queue.entry(at).or_default().push_back(event);
    }

    fn set_named(&mut self, i: usize, leader: Option<u64>) {
        let n = self.peers.len() as u64;
        let leader = leader.filter(|&l| l >= 1 && l <= n);
        if self.named[i] == leader {
            return;
        }
        if let Some(old) = self.named[i] {
            self.followers[old as usize] -= 1;
        }
        if let Some(new) = leader {
            self.followers[new as usize] += 1;
        }
        self.named[i] = leader;
    }

    fn refresh_agreement(&mut self) {
        if self.agreed() {
            if self.agreed_since.is_none() {
                self.agreed_since = Some(self.now);
            }
        } else {
            self.agreed_since = None;
        }
    }

    /// Every live member names the same live leader, and that leader leads.
    pub fn agreed(&self) -> bool {
        let Some(first) = self.alive.iter().position(|&a| a) else {
            return false;
        };
        let Some(l) = self.named[first] else {
            return false;
        };
        self.followers[l as usize] as usize == self.live
            && self.alive[l as usize - 1]
            && self.peers[l as usize - 1].leads()
    }

    /// Since when the members have agreed, if they do now.
    pub fn agreed_since(&self) -> Option<Time> {
        self.agreed_since
    }

    /// The leader every live member names, if they agree.
    pub fn agreed_leader(&self) -> Option<u64> {
        if self.agreed() {
            self.alive
                .iter()
                .position(|&a| a)
                .and_then(|i| self.named[i])
        } else {
            None
        }
    }

    /// A live member that leads and that a majority of all members (itself
    /// included) names as leader over links that work both ways.
    pub fn effective_leader(&self) -> Option<u64> {
        let n = self.peers.len();
        (0..n)
            .filter(|&l| self.alive[l] && self.peers[l].leads())
            .find(|&l| {
                let followers = (0..n)
                    .filter(|&j| {
                        self.alive[j]
                            && self.named[j] == Some(l as u64 + 1)
                            && (j == l || (!self.cut[l * n + j] && !self.cut[j * n + l]))
                    })
                    .count();
                2 * followers > n
            })
            .map(|l| l as u64 + 1)
    }

    /// How many live members consider themselves leader.
    pub fn self_declared_leaders(&self) -> usize {
        (0..self.peers.len())
            .filter(|&i| self.alive[i] && self.peers[i].leads())
            .count()
    }

    /// The highest term among live members.
    pub fn max_term(&self) -> u64 {
        (0..self.peers.len())
            .filter(|&i| self.alive[i])
            .map(|i| self.peers[i].term())
            .max()
            .unwrap_or(0)
    }

    /// Messages sent since the last reset, by kind (lost ones included).
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The counts as they stood when the last election message was sent.
    pub fn counts_at_quiet(&self) -> &Counts {
        &self.counts_at_quiet
    }

    /// When the last election message was sent since the last reset.
    pub fn last_election_send(&self) -> Option<Time> {
        self.last_election_send
    }

    /// Messages lost to cuts, crashes and the loss probability since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Zeroes the message counters and forgets the last election message.
    pub fn reset_counters(&mut self) {
        self.counts = Counts::default();
        self.counts_at_quiet = Counts::default();
        self.last_election_send = None;
    }
}
