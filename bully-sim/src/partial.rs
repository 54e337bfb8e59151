//! Partial connectivity: the scenarios of the Omni-Paxos paper (Ng, Haridi,
//! Carbone, EuroSys 2023) and the one-way cuts, run on a settled cluster and
//! measured the same way for every algorithm and configuration.
//!
//! A cluster of five (three for the short chain) settles with the highest member,
//! 5, leading. At the cut the links change as the [`Scenario`] says; the cluster
//! runs for [`PartialRun::window`] (20 s by default) under the cut, then heals and
//! runs until it agrees again. Every [`SAMPLE`] of simulated time the run notes
//! whether an **effective leader** exists: a member that leads and that a majority
//! of the members, itself included, follow in its term over links that work in
//! both directions. The [`PartialReport`] gives the time from the cut until an
//! effective leader held for the rest of the window, the share of the window with
//! one, the term growth, the election messages, and the time to agree after the
//! heal. [`measure`] runs every scenario, hub placement, algorithm and quorum
//! choice over many seeds and summarises each row's seeds ([`PartialRow`]:
//! medians and extremes), as `simulate partial` prints them.
//!
//! ```
//! use bully_sim::partial::{PartialRun, Placement, Scenario};
//! use bully_core::{Config, NodeId, Quorum};
//!
//! let config = Config::default().with_quorum(Quorum::Majority);
//! let report = PartialRun::new(Scenario::LeaderIsolated, Placement::Highest)
//!     .run(&config, 1)?;
//! assert_eq!(report.expected, Some(NodeId(4)), "4 is the highest member that reaches a quorum");
//! assert_eq!(report.final_leader, Some(NodeId(4)));
//! assert!(report.availability > 0.9);
//! # Ok::<(), bully_sim::SimError>(())
//! ```

mod sweep;

use std::time::Duration;

use bully_core::{Config, MessageKind, NodeId, Role};

use crate::{SimError, Simulation, scenario};

pub use sweep::{
    DEFAULT_SEEDS, PartialOptions, PartialRow, QuorumChoice, config, measure, placements,
};

/// How often the run looks for an effective leader.
pub const SAMPLE: Duration = Duration::from_millis(10);

/// The way the links break at the cut. The leader is member 5 (3 in
/// `Chained3`), the highest, as a settled cluster under `Preemption::Always`
/// has it; the [`Placement`] says which id takes the scenario's other role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scenario {
    /// Every link is cut except those of one hub member, which still reaches
    /// all; the leader reaches only the hub. Only the hub reaches a quorum.
    QuorumLoss,
    /// The leader is cut off from everyone; the other three reach only the hub,
    /// which reaches them all. Only the hub reaches a quorum.
    Constrained,
    /// Three members in a line: the leader (3) reaches only the middle, the
    /// middle reaches both ends. Every member reaches a quorum.
    Chained3,
    /// Five members: the leader (5) reaches only the hub, the hub reaches all,
    /// the other three reach each other. The four below 5 reach a quorum.
    Chained5,
    /// The leader is cut off from everyone, both ways.
    LeaderIsolated,
    /// The leader can send but hears nobody.
    LeaderSendOnly,
    /// The leader hears everybody but can send to nobody.
    LeaderReceiveOnly,
}

impl Scenario {
    /// Every scenario, in the order the report prints them.
    pub const ALL: [Scenario; 7] = [
        Scenario::QuorumLoss,
        Scenario::Constrained,
        Scenario::Chained3,
        Scenario::Chained5,
        Scenario::LeaderIsolated,
        Scenario::LeaderSendOnly,
        Scenario::LeaderReceiveOnly,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::QuorumLoss => "quorum-loss",
            Scenario::Constrained => "constrained",
            Scenario::Chained3 => "chained-3",
            Scenario::Chained5 => "chained-5",
            Scenario::LeaderIsolated => "leader-isolated",
            Scenario::LeaderSendOnly => "leader-send-only",
            Scenario::LeaderReceiveOnly => "leader-receive-only",
        }
    }

    /// The cluster size.
    pub fn members(self) -> u64 {
        match self {
            Scenario::Chained3 => 3,
            _ => 5,
        }
    }

    /// Whether the placement changes anything: the scenarios with a hub (or the
    /// chain's middle) vary it; the others have only the leader's role.
    pub fn has_hub(self) -> bool {
        matches!(
            self,
            Scenario::QuorumLoss | Scenario::Constrained | Scenario::Chained3 | Scenario::Chained5
        )
    }
}

/// Which id the hub (the chain's middle) has among the members below the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Placement {
    /// The highest below the leader (4 of 5; 2 of 3).
    Highest,
    /// In the middle (3 of 5; for the three-member chain, 2, the same as
    /// `Highest`).
    Middle,
    /// The lowest (1).
    Lowest,
}

impl Placement {
    /// Every placement.
    pub const ALL: [Placement; 3] = [Placement::Highest, Placement::Middle, Placement::Lowest];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Highest => "highest",
            Placement::Middle => "middle",
            Placement::Lowest => "lowest",
        }
    }

    fn hub(self, members: u64) -> NodeId {
        NodeId(match self {
            Placement::Highest => members - 1,
            Placement::Middle => members.div_ceil(2).min(members - 1),
            Placement::Lowest => 1,
        })
    }
}

/// One scenario, one placement, and the length of the window under the cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialRun {
    /// The scenario.
    pub scenario: Scenario,
    /// Where the hub is.
    pub placement: Placement,
    /// How long the cut lasts (20 s by default).
    pub window: Duration,
}

/// What a [`PartialRun`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct PartialReport {
    /// The highest member that reaches a quorum over links working both ways
    /// (Bully's rule, generalised), if any does.
    pub expected: Option<NodeId>,
    /// The effective leader at the end of the window.
    pub final_leader: Option<NodeId>,
    /// From the cut until an effective leader held for the rest of the window;
    /// `None` if none held at its end.
    pub time_to_stable: Option<Duration>,
    /// The share of the window's samples with an effective leader.
    pub availability: f64,
    /// How far the highest term of any member grew over the window.
    pub term_growth: u64,
    /// Messages sent in the window, heartbeats and their acknowledgements excluded.
    pub election_messages: u64,
    /// Every message sent in the window.
    pub all_messages: u64,
    /// From the heal until every member names one leader that leads; `None` if
    /// that did not happen within the settle bound.
    pub after_heal: Option<Duration>,
    /// The agreed leader after the heal.
    pub healed_leader: Option<NodeId>,
    /// Leaderships that changed hands after the heal (0: the leader of the window
    /// kept it, or the cluster agreed on the first try).
    pub changes_after_heal: u64,
    /// What each member named at the end of the window, ascending by member.
    pub named: Vec<(NodeId, Option<NodeId>)>,
    /// Two members acting as leader at once (see [`Simulation::overlapping_leaderships`]).
    pub overlapping_leaderships: u64,
    /// Two members announcing one term (see [`Simulation::same_term_leaders`]).
    pub same_term_leaders: u64,
    /// Safety violations the simulator flagged.
    pub violations: usize,
}

impl PartialRun {
    /// A run of `scenario` with the hub at `placement`, for 20 s under the cut.
    pub fn new(scenario: Scenario, placement: Placement) -> PartialRun {
        PartialRun {
            scenario,
            placement,
            window: Duration::from_secs(20),
        }
    }

    /// Sets the window under the cut.
    #[must_use]
    pub fn with_window(mut self, window: Duration) -> PartialRun {
        self.window = window;
        self
    }

    /// The member that leads before the cut.
    pub fn leader(&self) -> NodeId {
        NodeId(self.scenario.members())
    }

    /// The hub (the chain's middle), if the scenario has one.
    pub fn hub(&self) -> Option<NodeId> {
        self.scenario
            .has_hub()
            .then(|| self.placement.hub(self.scenario.members()))
    }

    /// Applies the cut to a running simulation.
    pub fn cut(&self, sim: &mut Simulation) -> Result<(), SimError> {
        let ids: Vec<NodeId> = sim.members().to_vec();
        let leader = self.leader();
        let hub = self.hub();
        let others = |a: NodeId| ids.iter().copied().filter(move |&b| b != a);
        match self.scenario {
            Scenario::QuorumLoss | Scenario::Constrained => {
                let hub = hub.unwrap_or(leader);
                for (i, &a) in ids.iter().enumerate() {
                    for &b in &ids[i + 1..] {
                        let hub_link = a == hub || b == hub;
                        let leader_to_hub = hub_link && (a == leader || b == leader);
                        let keep = match self.scenario {
                            Scenario::QuorumLoss => hub_link,
                            _ => hub_link && !leader_to_hub,
                        };
                        if !keep {
                            sim.cut_both(a, b)?;
                        }
                    }
                }
            }
            Scenario::Chained3 => {
                let middle = hub.unwrap_or(leader);
                let far = others(leader).find(|&b| b != middle).unwrap_or(middle);
                sim.cut_both(leader, far)?;
            }
            Scenario::Chained5 => {
                let hub = hub.unwrap_or(leader);
                for b in others(leader).filter(|&b| b != hub) {
                    sim.cut_both(leader, b)?;
                }
            }
            Scenario::LeaderIsolated => {
                for b in others(leader) {
                    sim.cut_both(leader, b)?;
                }
            }
            Scenario::LeaderSendOnly => {
                for b in others(leader) {
                    sim.cut(b, leader)?;
                }
            }
            Scenario::LeaderReceiveOnly => {
                for b in others(leader) {
                    sim.cut(leader, b)?;
                }
            }
        }
        Ok(())
    }

    /// Settles a cluster under `config` (seeded by `seed`), cuts, measures the
    /// window, heals, and measures the recovery.
    pub fn run(&self, config: &Config, seed: u64) -> Result<PartialReport, SimError> {
        let mut sim = scenario::settled(config, self.scenario.members(), seed)?;
        // Seeds spread the cut over the phases of the heartbeat interval.
        let offset = Duration::from_millis(seed.wrapping_mul(37) % 100);
        sim.run_for(offset);
        self.cut(&mut sim)?;
        let expected = highest_quorum_connected(&sim);
        let term_before = max_term(&sim);
        sim.reset_counts();
        let samples = (self.window.as_nanos() / SAMPLE.as_nanos()).max(1) as u64;
        let mut with_leader = 0u64;
        let mut last_change = Duration::ZERO;
        let mut previous = None;
        for sample in 1..=samples {
            sim.run_for(SAMPLE);
            let leader = effective_leader(&sim);
            if leader.is_some() {
                with_leader += 1;
            }
            if leader != previous || leader.is_none() {
                last_change = SAMPLE * sample as u32;
            }
            previous = leader;
        }
        let final_leader = previous;
        let time_to_stable = final_leader.map(|_| last_change.saturating_sub(SAMPLE));
        let sent = *sim.sent();
        let all_messages = sent.total();
        let election_messages =
            all_messages - sent[MessageKind::Heartbeat] - sent[MessageKind::Ack];
        let named = sim
            .members()
            .iter()
            .map(|&id| (id, sim.node(id).and_then(|n| n.leader()).map(|l| l.id)))
            .collect();
        let term_growth = max_term(&sim) - term_before;
        let (overlaps, same_term) = (sim.overlapping_leaderships(), sim.same_term_leaders());

        sim.heal();
        sim.reset_counts();
        let bound = sim.settle_bound();
        let agreed = sim.run_until_true(bound, |sim| sim.agreed_leader().is_some());
        let after_heal = agreed.then(|| sim.since_reset());
        // Let any takeover the heal sets off run its course, then count changes.
        sim.run_for(bound);
        Ok(PartialReport {
            expected,
            final_leader,
            time_to_stable,
            availability: with_leader as f64 / samples as f64,
            term_growth,
            election_messages,
            all_messages,
            after_heal,
            healed_leader: sim.agreed_leader(),
            changes_after_heal: sim.leader_changes(),
            named,
            overlapping_leaderships: sim.overlapping_leaderships().max(overlaps),
            same_term_leaders: sim.same_term_leaders().max(same_term),
            violations: sim.violations().len(),
        })
    }
}

fn max_term(sim: &Simulation) -> u64 {
    sim.members()
        .iter()
        .filter_map(|&id| sim.node(id))
        .map(|node| node.term().0)
        .max()
        .unwrap_or(0)
}

fn both_ways(sim: &Simulation, a: NodeId, b: NodeId) -> bool {
    a == b || (sim.link_works(a, b) && sim.link_works(b, a))
}

fn majority(sim: &Simulation) -> usize {
    sim.members().len() / 2 + 1
}

/// The highest live member that reaches a majority (itself included) over links
/// working both ways.
pub fn highest_quorum_connected(sim: &Simulation) -> Option<NodeId> {
    let ids = sim.members();
    ids.iter().rev().copied().find(|&a| {
        sim.is_up(a)
            && ids
                .iter()
                .filter(|&&b| sim.is_up(b) && both_ways(sim, a, b))
                .count()
                >= majority(sim)
    })
}

/// The member that leads and that a majority, itself included, follows in its
/// term over links working both ways.
pub fn effective_leader(sim: &Simulation) -> Option<NodeId> {
    let ids = sim.members();
    ids.iter().copied().find(|&a| {
        let Some(node) = sim.node(a) else {
            return false;
        };
        let Some(own) = node.leader().filter(|l| l.id == a) else {
            return false;
        };
        if node.role() != Role::Leader {
            return false;
        }
        let followers = ids
            .iter()
            .filter(|&&b| both_ways(sim, a, b) && sim.node(b).and_then(|n| n.leader()) == Some(own))
            .count();
        followers >= majority(sim)
    })
}
