//! Commands on a [`Simulation`]'s members: start, wake, crash, restart, a
//! command to a node, and forged traffic.

use bully_core::{Instant, Message, Node, NodeId};

use super::{SendOutcome, SimError, Simulation, TraceEntry};

impl Simulation {
    /// Starts one member (`Node::start`): from now on it is up.
    pub fn start(&mut self, id: NodeId) -> Result<(), SimError> {
        let index = self.index(id)?;
        let slot = &mut self.slots[index];
        let now = slot.clock.local(self.now);
        let node = slot.node.as_mut().ok_or(SimError::Crashed(id))?;
        if !slot.up {
            slot.up = true;
            self.live += 1;
        }
        node.start(now);
        self.checker.started(index, now);
        self.record(TraceEntry::Start { node: id });
        self.after_input(index);
        Ok(())
    }

    /// Brings a member up without [`Node::start`]: it answers what it is sent but
    /// starts nothing of its own until a message, a command or a timer it arms
    /// moves it, as a process that has been running with no leader known (seed
    /// 003's Table 1 setting). No-op for a member that is up; an error for a
    /// crashed one.
    ///
    /// ```
    /// use bully_sim::Simulation;
    /// use bully_core::{Config, NodeId};
    ///
    /// let mut sim = Simulation::new(1, (1..=4).map(NodeId), Config::default())?;
    /// assert!(!sim.is_up(NodeId(4)), "never started: down");
    /// sim.wake_all();
    /// assert!(sim.is_up(NodeId(4)));
    /// // Nobody elects until someone is told to: 1 starts an election, and 4,
    /// // up but idle, answers and wins it.
    /// sim.command(NodeId(1), |node, now| node.start_election(now))?;
    /// sim.run_for(sim.settle_bound());
    /// assert_eq!(sim.agreed_leader(), Some(NodeId(4)));
    /// # Ok::<(), bully_sim::SimError>(())
    /// ```
    pub fn wake(&mut self, id: NodeId) -> Result<(), SimError> {
        let index = self.index(id)?;
        let slot = &mut self.slots[index];
        if slot.node.is_none() {
            return Err(SimError::Crashed(id));
        }
        if !slot.up {
            slot.up = true;
            self.live += 1;
            // What it follows now counts.
            self.after_input(index);
        }
        Ok(())
    }

    /// [`wake`](Self::wake) for every member that is not crashed.
    pub fn wake_all(&mut self) {
        for index in 0..self.slots.len() {
            let id = self.slots[index].id;
            // Crashed members stay down; nothing else can fail here.
            let _ = self.wake(id);
        }
    }

    /// Starts every member at the same instant, in ascending id order.
    pub fn start_all(&mut self) {
        for index in 0..self.slots.len() {
            let id = self.slots[index].id;
            // Crashed members stay down; nothing else can fail here.
            let _ = self.start(id);
        }
    }

    /// Applies a command to a live member and routes what it produced. The
    /// command is given the member's own clock's reading (the simulation's
    /// [`now`](Self::now) unless its clock drifts or stepped: see
    /// [`set_clock_drift`](Self::set_clock_drift)).
    pub fn command<R>(
        &mut self,
        id: NodeId,
        command: impl FnOnce(&mut Node, Instant) -> R,
    ) -> Result<R, SimError> {
        let index = self.index(id)?;
        let now = self.slots[index].clock.local(self.now);
        let node = self.slots[index]
            .node
            .as_mut()
            .ok_or(SimError::Crashed(id))?;
        let result = command(node, now);
        self.record(TraceEntry::Command { node: id });
        self.after_input(index);
        Ok(result)
    }

    /// Crashes a member: it stops at once; messages to it vanish, messages it
    /// already sent are still delivered.
    pub fn crash(&mut self, id: NodeId) -> Result<(), SimError> {
        let index = self.index(id)?;
        if let Some(node) = self.slots[index].node.take() {
            self.slots[index].last_state = node.durable_state();
            self.slots[index].timer_at = None;
            self.slots[index].timer_real = None;
            let follows = self.slots[index].follows.take();
            self.unfollow(follows);
            if std::mem::take(&mut self.slots[index].up) {
                self.live -= 1;
            }
            let slot = &self.slots[index];
            self.checker
                .crashed(self.now, &slot.clock, index, &slot.config);
            self.record(TraceEntry::Crash { node: id });
        }
        Ok(())
    }

    /// Brings a crashed member back with fresh state (term 0), as a process that
    /// persists nothing, or whose state file was lost, and starts it: it
    /// restores `DurableState::default()`, what a driver has then (not a first
    /// boot: it votes for nobody for a follower lease).
    pub fn restart(&mut self, id: NodeId) -> Result<(), SimError> {
        self.revive(id, false)
    }

    /// Brings a crashed member back with its durable state (term and vote, as if
    /// persisted: [`Node::durable_state`]) and starts it.
    pub fn restart_durable(&mut self, id: NodeId) -> Result<(), SimError> {
        self.revive(id, true)
    }

    fn revive(&mut self, id: NodeId, durable: bool) -> Result<(), SimError> {
        let index = self.index(id)?;
        if self.slots[index].node.is_some() {
            return Ok(());
        }
        let config = self.slots[index].config.clone();
        let mut node = Node::with_membership(id, self.membership.clone(), config)?;
        if durable {
            node.restore(self.slots[index].last_state);
        } else {
            // What a driver restores when the state file is missing: it cannot
            // tell a forgotten promise from none.
            node.restore(bully_core::DurableState::default());
            self.note_amnesia();
        }
        self.checker.reset(index, &node);
        let slot = &mut self.slots[index];
        slot.node = Some(node);
        slot.up_since = self.now;
        self.faulted = true;
        self.record(TraceEntry::Restart { node: id, durable });
        self.start(id)
    }

    /// Puts a message on the wire as if `from` had sent it to `to`: a forged or
    /// hostile message, or a replay. It obeys the links like any other message and
    /// is counted in [`sent`](Self::sent). `from` need not be up, or a member.
    pub fn inject(&mut self, from: NodeId, to: NodeId, message: Message) -> Result<(), SimError> {
        let to_index = self.index(to)?;
        // Forged or replayed: outside the timing model whatever its delay.
        self.note_late_delivery();
        self.sent[message.kind()] += 1;
        let from_index = self.index(from).unwrap_or(to_index);
        let outcome = self.network.send(
            &mut self.rng,
            self.now,
            (from_index, from),
            to_index,
            message,
            0,
        );
        if outcome != SendOutcome::InFlight {
            self.lost += 1;
        }
        Ok(())
    }
}
