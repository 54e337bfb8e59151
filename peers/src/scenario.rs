//! The scenarios: cold start, leader crash, and the partial partitions with
//! their heal. Each is generic over the library and returns what it measured.

use std::time::Duration;

use clap::ValueEnum;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::peer::{Peer, Time};
use crate::sim::{Counts, Delays, Sim};

/// A cluster of members `1..=n` built with `build(id, n, seed)`.
pub fn cluster<P: Peer>(build: &dyn Fn(u64, u64, u64) -> P, n: u64, seed: u64) -> Sim<P> {
    let peers = (1..=n).map(|id| build(id, n, seed)).collect();
    Sim::new(peers, Delays::default(), seed)
}

/// How long a run waits for agreement before giving up.
pub const PATIENCE: Duration = Duration::from_secs(60);
/// No election message for this long counts as quiet: 2 s, or 300 ms above 100
/// members (three BLE rounds at N = 1,000 are six million messages).
pub fn quiet_window(n: usize) -> Duration {
    if n > 100 {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    }
}

/// An election measured from its trigger (boot or crash).
#[derive(Clone, Debug)]
pub struct Election {
    /// Time from the trigger to agreement (every live member names the same live
    /// leader, which leads), if reached within [`PATIENCE`].
    pub agreed_after: Option<Duration>,
    /// Messages sent from the trigger to agreement, by kind.
    pub until_agreement: Counts,
    /// Time from the trigger to the last election message, if any was sent.
    pub quiet_after: Option<Duration>,
    /// Messages sent from the trigger to the last election message, by kind.
    pub until_quiet: Counts,
    /// The agreed leader.
    pub leader: Option<u64>,
}

fn measure<P: Peer>(sim: &mut Sim<P>, trigger: Time) -> Election {
    let agreed = sim.run_until_agreed(trigger + PATIENCE);
    let until_agreement = sim.counts().clone();
    let leader = sim.agreed_leader();
    let window = quiet_window(sim.len());
    let last = sim.run_until_quiet(window, trigger + PATIENCE);
    Election {
        agreed_after: agreed.map(|t| t - trigger),
        until_agreement,
        quiet_after: last.map(|t| t - trigger),
        until_quiet: sim.counts_at_quiet().clone(),
        leader,
    }
}

/// Every member boots at time zero.
pub fn cold_start<P: Peer>(build: &dyn Fn(u64, u64, u64) -> P, n: u64, seed: u64) -> Election {
    let mut sim = cluster(build, n, seed);
    sim.start_all();
    measure(&mut sim, Duration::ZERO)
}

/// Every member boots; once they agree and are quiet, the leader crashes at a
/// seeded point of a 100 ms interval and everyone detects it by its own timeout.
/// `None` if the cluster never agreed before the crash.
pub fn leader_crash<P: Peer>(
    build: &dyn Fn(u64, u64, u64) -> P,
    n: u64,
    seed: u64,
) -> Option<Election> {
    let mut sim = cluster(build, n, seed);
    sim.start_all();
    let boot = measure(&mut sim, Duration::ZERO);
    let leader = sim.agreed_leader()?;
    boot.agreed_after?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let at = sim.now() + Duration::from_micros(rng.random_range(0..100_000));
    sim.run_until(at);
    sim.crash(leader);
    sim.reset_counters();
    Some(measure(&mut sim, at))
}

/// The partial partitions, placed around the leader the cluster elected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Partition {
    /// Every link cut except those of one hub (by default the lowest id other
    /// than the leader), which still reaches all; the leader reaches only the hub.
    QuorumLoss,
    /// The leader isolated; the other three reach only the hub (by default the
    /// lowest id other than the leader), which reaches them all.
    Constrained,
    /// Three members: the leader reaches only the middle one (the higher of the
    /// other two), which reaches the far end; the leader and the far end cannot talk.
    Chained3,
    /// Five members: the leader reaches only the hub (by default the highest of
    /// the others), which reaches all; the rest reach each other.
    Chained5,
    /// Every link of the leader cut, both ways.
    IsolatedLeader,
    /// The leader can send but receives nothing.
    SendOnlyLeader,
    /// The leader receives but nothing it sends arrives.
    ReceiveOnlyLeader,
}

/// Which member other than the leader is the hub, in the scenarios that have one
/// (quorum-loss, constrained, chained (5)): the member that must lead is the
/// hub, and bully-core's rank order makes a low one the slowest case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Hub {
    /// The lowest id other than the leader.
    Lowest,
    /// The middle one of the others (the higher of the two middle ones).
    Middle,
    /// The highest id other than the leader.
    Highest,
}

impl Hub {
    /// Every placement, in table order.
    pub const ALL: [Hub; 3] = [Hub::Lowest, Hub::Middle, Hub::Highest];

    /// The label used in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Hub::Lowest => "lowest",
            Hub::Middle => "middle",
            Hub::Highest => "highest",
        }
    }

    /// The hub among `others` (ascending, not empty).
    fn pick(self, others: &[u64]) -> u64 {
        match self {
            Hub::Lowest => others[0],
            Hub::Middle => others[others.len() / 2],
            Hub::Highest => others[others.len() - 1],
        }
    }
}

impl Partition {
    /// Every scenario, in table order.
    pub const ALL: [Partition; 7] = [
        Partition::QuorumLoss,
        Partition::Constrained,
        Partition::Chained3,
        Partition::Chained5,
        Partition::IsolatedLeader,
        Partition::SendOnlyLeader,
        Partition::ReceiveOnlyLeader,
    ];

    /// The label used in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Partition::QuorumLoss => "quorum-loss",
            Partition::Constrained => "constrained",
            Partition::Chained3 => "chained (3)",
            Partition::Chained5 => "chained (5)",
            Partition::IsolatedLeader => "isolated leader",
            Partition::SendOnlyLeader => "send-only leader",
            Partition::ReceiveOnlyLeader => "receive-only leader",
        }
    }

    /// Cluster size.
    pub fn members(self) -> u64 {
        if self == Partition::Chained3 { 3 } else { 5 }
    }

    /// Whether the scenario has a hub that [`Hub`] can place.
    pub fn has_hub(self) -> bool {
        matches!(
            self,
            Partition::QuorumLoss | Partition::Constrained | Partition::Chained5
        )
    }

    /// The hub the tables use: the lowest id other than the leader, but the
    /// highest in chained (5).
    pub fn default_hub(self) -> Hub {
        if self == Partition::Chained5 {
            Hub::Highest
        } else {
            Hub::Lowest
        }
    }

    /// Cuts the links, around `leader`, with the [`default_hub`](Self::default_hub).
    pub fn apply<P: Peer>(self, sim: &mut Sim<P>, leader: u64) {
        self.apply_with_hub(sim, leader, self.default_hub());
    }

    /// Cuts the links, around `leader`, with the hub at `hub` (ignored by the
    /// scenarios without one).
    pub fn apply_with_hub<P: Peer>(self, sim: &mut Sim<P>, leader: u64, hub: Hub) {
        let n = sim.len() as u64;
        let others: Vec<u64> = (1..=n).filter(|&x| x != leader).collect();
        let lowest = others[0];
        let hub = hub.pick(&others);
        let both = |sim: &mut Sim<P>, a: u64, b: u64| {
            sim.cut(a, b);
            sim.cut(b, a);
        };
        match self {
            Partition::QuorumLoss => {
                for a in 1..=n {
                    for b in a + 1..=n {
                        if a != hub && b != hub {
                            both(sim, a, b);
                        }
                    }
                }
            }
            Partition::Constrained => {
                for &x in &others {
                    both(sim, leader, x);
                }
                for &a in &others {
                    for &b in &others {
                        if a < b && a != hub && b != hub {
                            both(sim, a, b);
                        }
                    }
                }
            }
            Partition::Chained3 => both(sim, leader, lowest),
            Partition::Chained5 => {
                for &x in &others {
                    if x != hub {
                        both(sim, leader, x);
                    }
                }
            }
            Partition::IsolatedLeader => {
                for &x in &others {
                    both(sim, leader, x);
                }
            }
            Partition::SendOnlyLeader => {
                for &x in &others {
                    sim.cut(x, leader);
                }
            }
            Partition::ReceiveOnlyLeader => {
                for &x in &others {
                    sim.cut(leader, x);
                }
            }
        }
    }
}

/// How long a partition lasts before it heals.
pub const WINDOW: Duration = Duration::from_secs(20);
/// How often the effective leader is sampled during the window.
pub const SAMPLE: Duration = Duration::from_millis(10);
/// When the partition is cut: after the cold start has settled.
pub const CUT_AT: Duration = Duration::from_secs(10);

/// One partition run, measured over the window and after the heal.
#[derive(Clone, Debug)]
pub struct PartitionRun {
    /// From the cut to the start of the last stretch with one unchanged effective
    /// leader lasting to the heal; `None` if there is none at the heal.
    pub stable_after: Option<Duration>,
    /// Share of the window's samples with an effective leader.
    pub availability: f64,
    /// Share of the window's samples in which two or more live members lead.
    pub two_leaders: f64,
    /// Highest term at the heal minus the highest term at the cut.
    pub term_growth: u64,
    /// Messages sent during the window, by kind.
    pub window: Counts,
    /// From the heal to agreement, if reached within [`PATIENCE`].
    pub healed_after: Option<Duration>,
    /// Whether the leader agreed after the heal differs from the effective leader
    /// at the heal (a takeover).
    pub takeover: bool,
    /// Election messages (non-steady kinds) from the heal to agreement.
    pub heal_messages: u64,
}

/// Cold start, settle until [`CUT_AT`] plus a seeded part of 100 ms, cut `partition`
/// around the agreed leader, sample for [`WINDOW`], heal, wait for agreement.
/// `None` if the cluster had not agreed before the cut.
pub fn partition_run<P: Peer>(
    build: &dyn Fn(u64, u64, u64) -> P,
    partition: Partition,
    seed: u64,
) -> Option<PartitionRun> {
    partition_run_with_hub(build, partition, partition.default_hub(), seed)
}

/// [`partition_run`] with the hub at `hub`.
pub fn partition_run_with_hub<P: Peer>(
    build: &dyn Fn(u64, u64, u64) -> P,
    partition: Partition,
    hub: Hub,
    seed: u64,
) -> Option<PartitionRun> {
    let mut sim = cluster(build, partition.members(), seed);
    sim.start_all();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cut_at = CUT_AT + Duration::from_micros(rng.random_range(0..100_000));
    sim.run_until(cut_at);
    let leader = sim.agreed_leader()?;
    partition.apply_with_hub(&mut sim, leader, hub);
    let term_at_cut = sim.max_term();
    sim.reset_counters();
    let heal_at = cut_at + WINDOW;
    let (mut samples, mut with_leader, mut doubled) = (0u32, 0u32, 0u32);
    let mut current = sim.effective_leader();
    let mut since = cut_at;
    let mut t = cut_at;
    while t < heal_at {
        t += SAMPLE;
        sim.run_until(t);
        let eff = sim.effective_leader();
        samples += 1;
        with_leader += u32::from(eff.is_some());
        doubled += u32::from(sim.self_declared_leaders() >= 2);
        if eff != current {
            current = eff;
            since = t;
        }
    }
    let term_growth = sim.max_term() - term_at_cut;
    let window = sim.counts().clone();
    sim.heal();
    sim.reset_counters();
    let healed = sim.run_until_agreed(heal_at + PATIENCE);
    let heal_messages = sim.counts().total_where(|k| !P::is_steady(k));
    Some(PartitionRun {
        stable_after: current.map(|_| since - cut_at),
        availability: f64::from(with_leader) / f64::from(samples),
        two_leaders: f64::from(doubled) / f64::from(samples),
        term_growth,
        window,
        healed_after: healed.map(|t| t.saturating_sub(heal_at)),
        takeover: healed.is_some() && sim.agreed_leader() != current,
        heal_messages,
    })
}
