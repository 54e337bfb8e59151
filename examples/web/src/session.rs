//! The page's simulation: bully-core's [`Simulation`] with the user's actions, a
//! clock the page moves forward, and what it shows. No protocol logic lives here
//! or in the page: every message and every leadership comes from the real
//! [`bully_core::Node`]s inside the simulator.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use bully_core::sim::{SimError, Simulation, TraceEntry};
use bully_core::{MessageKind, NodeId};

use crate::error::WebError;
use crate::frame::Frame;
use crate::scenario::{Action, Scenario, Settings, Timed};

/// One page's cluster and its history.
#[derive(Debug)]
pub struct Session {
    pub(crate) settings: Settings,
    pub(crate) sim: Simulation,
    /// Actions applied so far, in order.
    done: Vec<Timed>,
    /// Actions of a loaded scenario or preset still to come.
    pending: VecDeque<Timed>,
    /// Every `Simulation::step` taken: where an action fell between two events of
    /// the same instant, so that a saved scenario replays to the same state.
    steps: u64,
    /// The members that called an election or noticed a failure since the counts
    /// were last reset (drawn green, as seed 003's simulator drew its start node).
    pub(crate) initiators: BTreeSet<u64>,
    /// Directed links cut by the user.
    pub(crate) cuts: BTreeSet<(u64, u64)>,
    /// Groups isolated by the user.
    pub(crate) groups: Vec<Vec<u64>>,
    /// Where in the trace the counts were last reset.
    pub(crate) measured_from: usize,
    /// The initiator, while the run is seed 003's Table 1 setting: one member of
    /// a fresh cluster calls an election and nothing else happens.
    pub(crate) table_1_initiator: Option<u64>,
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
            table_1_initiator: None,
        })
    }

    /// Rebuilds a saved scenario: replays its actions up to the time it had
    /// reached; later ones stay to come.
    pub fn from_scenario(scenario: &Scenario) -> Result<Session, WebError> {
        let mut session = Session::new(scenario.settings.clone())?;
        session.pending = scenario.actions.iter().cloned().collect();
        session.advance_to(scenario.now_us)?;
        Ok(session)
    }

    /// The scenario that rebuilds this state: settings, every action (those still
    /// to come included) and the time reached.
    pub fn scenario(&self) -> Scenario {
        Scenario {
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

    /// One message time (T_M), in microseconds.
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
    /// on the way) and sets the clock there. A time already passed changes nothing.
    pub fn advance_to(&mut self, t_us: u64) -> Result<(), WebError> {
        while let Some(next) = self.pending.front() {
            if next.at_us > t_us {
                break;
            }
            let timed = next.clone();
            self.run_to(timed.at_us, timed.steps);
            self.apply(&timed.action)?;
            self.pending.pop_front();
            self.done.push(timed);
        }
        self.run_to(t_us, None);
        Ok(())
    }

    /// Runs for `us` microseconds of simulated time.
    pub fn advance(&mut self, us: u64) -> Result<(), WebError> {
        self.advance_to(self.now_us().saturating_add(us))
    }

    /// Runs until the next election message (any kind but a heartbeat) has been
    /// delivered, or lost at a crashed member; `false` if none came within the
    /// settle bound.
    pub fn step_message(&mut self) -> Result<bool, WebError> {
        let limit = self.now_us() + micros(self.sim.settle_bound());
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

    /// Runs until every action is done and the election is over: every live member
    /// names the same leader and no election message is on its way. `false` if
    /// that did not happen within the failover and settle bounds (a quorum that
    /// cannot be reached, say); the clock stops there.
    pub fn run_to_end(&mut self) -> Result<bool, WebError> {
        if let Some(last) = self.pending.back() {
            self.advance_to(last.at_us)?;
        }
        let limit =
            self.now_us() + micros(self.sim.failover_bound()) + micros(self.sim.settle_bound());
        loop {
            if self.is_quiet() {
                return Ok(true);
            }
            match self.next_event_us() {
                Some(due) if due <= limit => self.advance_to(due)?,
                _ => {
                    self.advance_to(limit)?;
                    return Ok(self.is_quiet());
                }
            }
        }
    }

    /// Whether the election is over: one leader named by every live member and no
    /// election message on its way.
    pub fn is_quiet(&self) -> bool {
        self.sim.agreed_leader().is_some() && !self.election_in_flight()
    }

    /// What the page draws now.
    pub fn frame(&self) -> Frame {
        Frame::of(self)
    }

    /// The run since the counts were last reset, as seed 003's simulator logged it
    /// (its Figures 3, 4 and 6).
    pub fn paper_log(&self) -> String {
        let records = &self.sim.trace()[self.measured_from..];
        crate::paper_log::render(records, self.settings.algorithm.into())
    }

    /// The run since the counts were last reset as a Mermaid sequence diagram
    /// (heartbeats left out).
    pub fn mermaid(&self) -> String {
        let records = &self.sim.trace()[self.measured_from..];
        bully_core::sim::to_mermaid(records, self.sim.members(), false)
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

    fn election_in_flight(&self) -> bool {
        self.sim
            .messages_in_flight()
            .any(|m| m.message.kind() != MessageKind::Heartbeat)
    }

    /// Steps every event up to `t_us` (or exactly `steps` steps, when an action
    /// fell between two events of one instant), then sets the clock to `t_us`.
    fn run_to(&mut self, t_us: u64, steps: Option<u64>) {
        loop {
            if steps.is_some_and(|steps| self.steps >= steps) {
                break;
            }
            match self.next_event_us() {
                Some(due) if due <= t_us => {
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
    }

    /// Refuses an action before anything changes: an unknown member, or a command
    /// to a crashed one.
    fn check(&self, action: &Action) -> Result<(), WebError> {
        let known = |id: u64| -> Result<(), WebError> {
            if (1..=self.settings.n).contains(&id) {
                Ok(())
            } else {
                Err(SimError::UnknownNode(NodeId(id)).into())
            }
        };
        match action {
            Action::StartAll | Action::Heal => Ok(()),
            Action::Elect { node } | Action::Notice { node } => {
                known(*node)?;
                if self.sim.is_up(NodeId(*node)) {
                    Ok(())
                } else {
                    Err(SimError::Crashed(NodeId(*node)).into())
                }
            }
            Action::Crash { node } | Action::Recover { node } => known(*node),
            Action::CutOneWay { from: a, to: b } | Action::CutBoth { a, b } => {
                known(*a)?;
                known(*b)
            }
            Action::Isolate { group } => group.iter().try_for_each(|&id| known(id)),
        }
    }

    fn apply(&mut self, action: &Action) -> Result<(), WebError> {
        self.check(action)?;
        let fresh = self.done.is_empty() && self.steps == 0;
        let quiet = !self.election_in_flight();
        if quiet {
            // A new episode: count it from here.
            self.sim.reset_counts();
            self.measured_from = self.sim.trace().len();
            self.initiators.clear();
            self.table_1_initiator = None;
        } else {
            // Something else happened during the election: no longer Table 1's.
            self.table_1_initiator = None;
        }
        match *action {
            Action::StartAll => self.sim.start_all(),
            Action::Elect { node } => {
                self.sim
                    .command(NodeId(node), |node, now| node.start_election(now))?;
                self.initiators.insert(node);
                if fresh {
                    self.table_1_initiator = Some(node);
                }
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
        Ok(())
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

/// Microseconds, saturating (a run of 584,000 years).
pub(crate) fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
