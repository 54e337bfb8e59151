//! The page's simulation: bully-core's [`Simulation`] with the user's actions, a
//! clock the page moves forward, and what it shows. No protocol logic lives here
//! or in the page: every message and every leadership comes from the real
//! [`bully_core::Node`]s inside the simulator.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use bully_core::{Message, MessageKind, NodeId, Role};
use bully_sim::{SimError, Simulation, TraceEntry};

use crate::clock::{MAX_TIME_US, micros};
use crate::episode::{self, Before, Episode};
use crate::error::WebError;
use crate::frame::{Frame, Scene};
use crate::scenario::{Action, QuorumChoice, SCENARIO_VERSION, Scenario, Settings, Timed};

/// One page's cluster and its history.
#[derive(Debug)]
pub struct Session {
    settings: Settings,
    sim: Simulation,
    /// Actions applied so far, in order.
    done: Vec<Timed>,
    /// Actions of a loaded scenario or preset still to come.
    pending: VecDeque<Timed>,
    /// Every `Simulation::step` taken: where an action fell between two events of
    /// the same instant, so that a saved scenario replays to the same state.
    steps: u64,
    /// The members that called an election or noticed a failure since the counts
    /// were last reset (drawn green, as Soundarabai et al.'s simulator drew its start node).
    initiators: BTreeSet<u64>,
    /// Directed links cut by the user.
    cuts: BTreeSet<(u64, u64)>,
    /// Groups isolated by the user.
    groups: Vec<Vec<u64>>,
    /// Where in the trace the counts were last reset.
    measured_from: usize,
    /// Which run the counts describe (the papers count two kinds).
    episode: Episode,
    /// Members that joined the episode through their own timeouts, in order.
    joined: Vec<u64>,
    /// How far the trace has been read for `joined`.
    scanned: usize,
    /// The time a loading scenario had reached, until [`Session::catch_up`] gets there.
    target_us: Option<u64>,
}

impl Session {
    /// A fresh cluster as Table 1 starts it: every member up, nobody started,
    /// nobody leading.
    pub fn new(settings: Settings) -> Result<Session, WebError> {
        settings.validate()?;
        let mut sim = Simulation::new(settings.seed, settings.members(), settings.config())?;
        // Table 1's setting: every process up and idle until something happens.
        sim.wake_all();
        if settings.loss_percent > 0 {
            sim.set_default_link(settings.link(sim.message_delay()));
        }
        sim.enable_trace();
        let measured_from = sim.trace().len();
        Ok(Session {
            settings,
            sim,
            done: Vec::new(),
            pending: VecDeque::new(),
            steps: 0,
            initiators: BTreeSet::new(),
            cuts: BTreeSet::new(),
            groups: Vec::new(),
            measured_from,
            episode: Episode::Idle,
            joined: Vec::new(),
            scanned: measured_from,
            target_us: None,
        })
    }

    /// Rebuilds a saved scenario: replays its actions up to the time it had
    /// reached; later ones stay to come.
    pub fn from_scenario(scenario: &Scenario) -> Result<Session, WebError> {
        let mut session = Session::loading(scenario)?;
        session.catch_up(u64::MAX)?;
        Ok(session)
    }

    /// A session that rebuilds `scenario` as [`catch_up`](Self::catch_up) is
    /// called: the page replays a long scenario in slices between frames, so that
    /// loading never blocks it.
    pub fn loading(scenario: &Scenario) -> Result<Session, WebError> {
        let mut session = Session::new(scenario.settings.clone())?;
        if scenario.now_us > MAX_TIME_US || scenario.actions.iter().any(|a| a.at_us > MAX_TIME_US) {
            return Err(WebError::TimeLimit);
        }
        session.pending = scenario.actions.iter().cloned().collect();
        session.target_us = Some(scenario.now_us);
        Ok(session)
    }

    /// Replays at most `budget` simulator events towards the loaded scenario's
    /// time; `true` once it is there.
    pub fn catch_up(&mut self, budget: u64) -> Result<bool, WebError> {
        let Some(target) = self.target_us else {
            return Ok(true);
        };
        let mut budget = budget;
        let done = self.advance_within(target, &mut budget)?;
        if done {
            self.target_us = None;
        }
        Ok(done)
    }

    /// How far a loading scenario has got, 0 to 1 (1 when none is loading).
    pub fn loaded(&self) -> f64 {
        match self.target_us {
            Some(target) if target > 0 => self.now_us() as f64 / target as f64,
            _ => 1.0,
        }
    }

    /// Whether no action has been taken and no event handled yet.
    fn is_fresh(&self) -> bool {
        self.done.is_empty() && self.steps == 0
    }

    /// The scenario that rebuilds this state: settings, every action (those still
    /// to come included) and the time reached.
    pub fn scenario(&self) -> Scenario {
        Scenario {
            version: SCENARIO_VERSION,
            settings: self.settings.clone(),
            actions: self.done.iter().chain(&self.pending).cloned().collect(),
            now_us: self.now_us(),
        }
    }

    /// The settings the cluster was built with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The simulator, to read.
    pub fn simulation(&self) -> &Simulation {
        &self.sim
    }

    /// Simulated microseconds since the start.
    pub fn now_us(&self) -> u64 {
        micros(self.sim.elapsed())
    }

    /// One message time (T_M, the longest a message takes), in microseconds.
    pub fn delay_us(&self) -> u64 {
        micros(self.sim.message_delay())
    }

    /// Applies an action now and records it.
    pub fn act(&mut self, action: Action) -> Result<(), WebError> {
        let timed = Timed {
            at_us: self.now_us(),
            steps: Some(self.steps),
            action,
        };
        self.apply(&timed.action)?;
        self.done.push(timed);
        Ok(())
    }

    /// Runs every event up to `t_us` of simulated time (applying the actions due
    /// on the way) and sets the clock there. A time already passed changes nothing;
    /// past the page's clock ([`MAX_TIME_US`]) it runs to the limit and says so.
    pub fn advance_to(&mut self, t_us: u64) -> Result<(), WebError> {
        let mut unlimited = u64::MAX;
        self.advance_within(t_us.min(MAX_TIME_US), &mut unlimited)?;
        if t_us > MAX_TIME_US {
            return Err(WebError::TimeLimit);
        }
        Ok(())
    }

    /// [`advance_to`](Self::advance_to) handling at most `budget` events; `false`
    /// if the budget ran out first (the clock stays where the last event was).
    fn advance_within(&mut self, t_us: u64, budget: &mut u64) -> Result<bool, WebError> {
        while let Some(next) = self.pending.front() {
            if next.at_us > t_us {
                break;
            }
            let timed = next.clone();
            if !self.run_to(timed.at_us, timed.steps, budget) {
                return Ok(false);
            }
            self.apply(&timed.action)?;
            self.pending.pop_front();
            self.done.push(timed);
        }
        Ok(self.run_to(t_us, None, budget))
    }

    /// Runs for `us` microseconds of simulated time.
    pub fn advance(&mut self, us: u64) -> Result<(), WebError> {
        if self.now_us() >= MAX_TIME_US && us > 0 {
            return Err(WebError::TimeLimit);
        }
        self.advance_to(self.now_us().saturating_add(us))
    }

    /// Runs until the next election message (any kind but a heartbeat) has been
    /// delivered, or lost at a crashed member; `false` if none came within the
    /// settle bound, and `false` at once, without moving the clock, when the
    /// election is over and nothing is left to do.
    pub fn step_message(&mut self) -> Result<bool, WebError> {
        if self.pending.is_empty() && (self.is_settled() || self.next_event_us().is_none()) {
            return Ok(false);
        }
        let limit = (self.now_us() + micros(self.sim.settle_bound())).min(MAX_TIME_US);
        loop {
            let due = self.next_event_us();
            let action_due = self.pending.front().map(|timed| timed.at_us);
            match (due, action_due) {
                (_, Some(at)) if due.is_none_or(|due| at <= due) && at <= limit => {
                    self.advance_to(at)?;
                }
                (Some(due), _) if due <= limit => {
                    let before = self.sim.trace().len();
                    self.sim.step();
                    self.steps += 1;
                    self.scan();
                    if self.sim.trace()[before..]
                        .iter()
                        .any(|record| is_election_arrival(&record.entry))
                    {
                        return Ok(true);
                    }
                }
                _ => return Ok(false),
            }
        }
    }

    /// Runs until every action is done and the election is over ([`is_settled`]),
    /// or for at most the failover and settle bounds `Config` computes (a one-way
    /// cut can keep members electing for ever); the clock stops there. `false` if
    /// it did not settle. With nothing scheduled at all (a fresh cluster nobody
    /// started) the clock does not move.
    ///
    /// [`is_settled`]: Self::is_settled
    pub fn run_to_end(&mut self) -> Result<bool, WebError> {
        if let Some(last) = self.pending.back() {
            self.advance_to(last.at_us)?;
        }
        let limit =
            (self.now_us() + micros(self.sim.failover_bound()) + micros(self.sim.settle_bound()))
                .min(MAX_TIME_US);
        loop {
            if self.is_settled() {
                return Ok(true);
            }
            match self.next_event_us() {
                Some(due) if due <= limit => self.advance_to(due)?,
                Some(_) => {
                    self.advance_to(limit)?;
                    return Ok(self.is_settled());
                }
                None => return Ok(false),
            }
        }
    }

    /// Whether the election is over, in every part of the network: no election
    /// message on its way, and every live member follows a leader that leads in
    /// that leadership and that it reaches both ways, except that with a quorum a
    /// member that cannot reach a majority has none. Right after a group is
    /// isolated its members still follow a leader they can no longer reach: not
    /// settled, so "Run to the end" goes on until they have elected their own (or,
    /// with a quorum, have none).
    pub fn is_settled(&self) -> bool {
        if self.election_in_flight() {
            return false;
        }
        let sim = &self.sim;
        let members = sim.members();
        let majority = members.len() / 2 + 1;
        let both_ways =
            |a: NodeId, b: NodeId| a == b || (sim.link_works(a, b) && sim.link_works(b, a));
        members.iter().all(|&id| {
            let Some(node) = sim.node(id) else {
                return true;
            };
            match node.leader() {
                Some(leader) => sim.node(leader.id).is_some_and(|head| {
                    head.role() == Role::Leader
                        && head.leader().map(|own| own.token()) == Some(leader.token())
                        && both_ways(id, leader.id)
                }),
                None => {
                    self.settings.quorum != QuorumChoice::None
                        && members
                            .iter()
                            .filter(|&&other| sim.is_up(other) && both_ways(id, other))
                            .count()
                            < majority
                }
            }
        })
    }

    /// What the page draws now.
    pub fn frame(&self) -> Frame {
        Frame::of(&Scene {
            settings: &self.settings,
            sim: &self.sim,
            initiators: &self.initiators,
            cuts: &self.cuts,
            groups: &self.groups,
            episode: &self.episode,
            joined: &self.joined,
            now_us: self.now_us(),
            settled: self.is_settled(),
            pending: self.pending(),
        })
    }

    /// The run since the counts were last reset, as Soundarabai et al.'s simulator logged it
    /// (its Figures 3, 4 and 6).
    pub fn paper_log(&self) -> String {
        let records = &self.sim.trace()[self.measured_from..];
        bully_sim::paper_log::render(records, self.settings.algorithm.into())
    }

    /// The run since the counts were last reset as a Mermaid sequence diagram
    /// (heartbeats left out).
    pub fn mermaid(&self) -> String {
        let records = &self.sim.trace()[self.measured_from..];
        bully_sim::to_mermaid(records, self.sim.members(), false)
    }

    /// The whole trace as JSON lines.
    pub fn trace_json_lines(&self) -> String {
        self.sim.trace_json_lines()
    }

    /// Actions still to come (a preset's script).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn next_event_us(&mut self) -> Option<u64> {
        let epoch = self.sim.now() - self.sim.elapsed();
        self.sim.next_instant().map(|at| micros(at - epoch))
    }

    /// Whether a message of an election is on its way: anything but the leader's
    /// routine (heartbeats and, with a quorum, their acknowledgements).
    fn election_in_flight(&self) -> bool {
        self.sim
            .messages_in_flight()
            .any(|m| !is_routine(m.message))
    }

    /// Steps every event up to `t_us` (or exactly `steps` steps, when an action
    /// fell between two events of one instant), then sets the clock to `t_us`.
    /// Handles at most `budget` events (counting them off); `false` if it ran out
    /// before reaching `t_us`.
    fn run_to(&mut self, t_us: u64, steps: Option<u64>, budget: &mut u64) -> bool {
        loop {
            if steps.is_some_and(|steps| self.steps >= steps) {
                break;
            }
            match self.next_event_us() {
                Some(due) if due <= t_us => {
                    if *budget == 0 {
                        self.scan();
                        return false;
                    }
                    *budget -= 1;
                    self.sim.step();
                    self.steps += 1;
                }
                _ => break,
            }
        }
        if self.now_us() < t_us {
            let epoch = self.sim.now() - self.sim.elapsed();
            self.sim.run_until(epoch + Duration::from_micros(t_us));
        }
        self.scan();
        true
    }

    /// Reads the trace written since the last call for members that joined the
    /// episode on their own.
    fn scan(&mut self) {
        let from = self.scanned.max(self.measured_from);
        episode::scan_joined(self.sim.trace(), from, &mut self.joined);
        self.scanned = self.sim.trace().len();
    }

    /// Refuses an action before anything changes: an unknown member, or a command
    /// to a crashed one.
    fn check(&self, action: &Action) -> Result<(), WebError> {
        let n = self.settings.n;
        let known = |id: u64| -> Result<(), WebError> {
            if (1..=n).contains(&id) {
                Ok(())
            } else {
                Err(WebError::NoSuchProcess { id, n })
            }
        };
        match action {
            Action::StartAll | Action::Heal => Ok(()),
            Action::Elect { node } | Action::Notice { node } => {
                known(*node)?;
                if self.sim.is_up(NodeId(*node)) {
                    Ok(())
                } else {
                    Err(WebError::Down(*node))
                }
            }
            Action::Crash { node } | Action::Recover { node } => known(*node),
            Action::CutOneWay { from: a, to: b } | Action::CutBoth { a, b } => {
                known(*a)?;
                known(*b)?;
                if a == b {
                    Err(WebError::SameProcess(*a))
                } else {
                    Ok(())
                }
            }
            Action::Isolate { group } => {
                group.iter().try_for_each(|&id| known(id))?;
                let distinct: BTreeSet<u64> = group.iter().copied().collect();
                if distinct.is_empty() || distinct.len() as u64 >= n {
                    Err(WebError::Group(n))
                } else {
                    Ok(())
                }
            }
        }
    }

    fn apply(&mut self, action: &Action) -> Result<(), WebError> {
        self.check(action)?;
        let quiet = !self.election_in_flight();
        let before = Before {
            sim: &self.sim,
            n: self.settings.n,
            fresh: self.is_fresh(),
            network_whole: self.cuts.is_empty() && self.groups.is_empty(),
            episode: &self.episode,
            joined: &self.joined,
        };
        let episode = episode::classify(&before, action, quiet);
        if quiet {
            // A new episode: count it from here.
            self.sim.reset_counts();
            self.measured_from = self.sim.trace().len();
            self.initiators.clear();
            self.joined.clear();
        }
        self.episode = episode;
        match *action {
            Action::StartAll => self.sim.start_all(),
            Action::Elect { node } => {
                self.sim
                    .command(NodeId(node), |node, now| node.start_election(now))?;
                self.initiators.insert(node);
            }
            Action::Notice { node } => {
                let id = NodeId(node);
                let follows = self
                    .sim
                    .node(id)
                    .and_then(|n| n.leader())
                    .map(|leader| leader.id);
                match follows {
                    Some(leader) if leader != id => {
                        self.sim
                            .command(id, |node, now| node.suspect(now, leader))?
                            .map_err(SimError::from)?;
                    }
                    _ => self.sim.command(id, |node, now| node.start_election(now))?,
                }
                self.initiators.insert(node);
            }
            Action::Crash { node } => self.sim.crash(NodeId(node))?,
            Action::Recover { node } => self.sim.restart_durable(NodeId(node))?,
            Action::CutOneWay { from, to } => {
                self.sim.cut(NodeId(from), NodeId(to))?;
                self.cuts.insert((from, to));
            }
            Action::CutBoth { a, b } => {
                self.sim.cut_both(NodeId(a), NodeId(b))?;
                self.cuts.insert((a, b));
                self.cuts.insert((b, a));
            }
            Action::Isolate { ref group } => {
                let group: Vec<u64> = group
                    .iter()
                    .copied()
                    .collect::<BTreeSet<u64>>()
                    .into_iter()
                    .collect();
                let group = &group;
                // The groups isolated before stay apart from this one and each other.
                let groups: Vec<Vec<NodeId>> = self
                    .groups
                    .iter()
                    .chain([group])
                    .map(|group| group.iter().copied().map(NodeId).collect())
                    .collect();
                let slices: Vec<&[NodeId]> = groups.iter().map(Vec::as_slice).collect();
                self.sim.partition(&slices)?;
                self.groups.push(group.clone());
            }
            Action::Heal => {
                self.sim.heal();
                self.cuts.clear();
                self.groups.clear();
            }
        }
        self.scan();
        Ok(())
    }
}

/// The leader's routine traffic, which never ends while it leads: heartbeats and
/// their acknowledgements (round 1 on; round 0 acknowledges a Coordinator).
fn is_routine(message: &Message) -> bool {
    match message {
        Message::Ack { round, .. } => *round > 0,
        other => other.kind() == MessageKind::Heartbeat,
    }
}

/// A message of the election (not a heartbeat) reached its addressee, or vanished
/// at a crashed one.
fn is_election_arrival(entry: &TraceEntry) -> bool {
    match entry {
        TraceEntry::Deliver { message, .. } | TraceEntry::Undeliverable { message, .. } => {
            message.kind() != MessageKind::Heartbeat
        }
        _ => false,
    }
}
