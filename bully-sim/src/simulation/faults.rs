//! Network faults on a running [`Simulation`]: link behaviour, partitions and
//! cuts, and healing them.

use bully_core::NodeId;

use super::{LinkConfig, SimError, Simulation, TraceEntry};

impl Simulation {
    /// Sets the behaviour of every link without an override. Its `delay`
    /// becomes the [`message_delay`](Self::message_delay) that healing restores.
    pub fn set_default_link(&mut self, link: LinkConfig) {
        self.nominal_delay = link.delay;
        self.change_default_link(link);
    }

    /// Sets the default link without changing the nominal delay (a fault).
    pub(crate) fn change_default_link(&mut self, link: LinkConfig) {
        self.network.set_default_link(link);
        self.note_network_change(format!("default link {link:?}"));
    }

    /// Overrides the behaviour of the directed link `from -> to`.
    pub fn set_link(&mut self, from: NodeId, to: NodeId, link: LinkConfig) -> Result<(), SimError> {
        let (from_index, to_index) = (self.index(from)?, self.index(to)?);
        self.network.set_link(from_index, to_index, link);
        self.note_network_change(format!("link {from}->{to} {link:?}"));
        Ok(())
    }

    /// Splits the cluster: members in different groups cannot reach each other.
    /// Members in no group form one more group together.
    pub fn partition(&mut self, groups: &[&[NodeId]]) -> Result<(), SimError> {
        let rest = u32::try_from(groups.len()).unwrap_or(u32::MAX);
        let mut assignment = vec![rest; self.ids.len()];
        for (group, members) in groups.iter().enumerate() {
            for &id in *members {
                assignment[self.index(id)?] = u32::try_from(group).unwrap_or(u32::MAX);
            }
        }
        self.network.set_groups(assignment);
        self.note_network_change(format!("partition {groups:?}"));
        Ok(())
    }

    /// Cuts `member` off from every other member, both ways: the partition of
    /// `member` alone against the rest.
    ///
    /// ```
    /// use bully_sim::Simulation;
    /// use bully_core::{Config, NodeId};
    ///
    /// let mut sim = Simulation::new(1, (1..=3).map(NodeId), Config::default())?;
    /// sim.isolate(NodeId(3))?;
    /// assert!(!sim.link_works(NodeId(3), NodeId(1)) && !sim.link_works(NodeId(2), NodeId(3)));
    /// assert!(sim.link_works(NodeId(1), NodeId(2)));
    /// sim.heal();
    /// assert!(sim.link_works(NodeId(3), NodeId(1)));
    /// # Ok::<(), bully_sim::SimError>(())
    /// ```
    pub fn isolate(&mut self, member: NodeId) -> Result<(), SimError> {
        self.partition(&[&[member]])
    }

    /// Cuts the directed link `from -> to` (a one-way partition).
    pub fn cut(&mut self, from: NodeId, to: NodeId) -> Result<(), SimError> {
        let (from_index, to_index) = (self.index(from)?, self.index(to)?);
        self.network.cut(from_index, to_index);
        self.note_network_change(format!("cut {from}->{to}"));
        Ok(())
    }

    /// Cuts both directions between `a` and `b`. Cutting `a`–`c` while both still
    /// reach `b` is the intersecting partition.
    pub fn cut_both(&mut self, a: NodeId, b: NodeId) -> Result<(), SimError> {
        self.cut(a, b)?;
        self.cut(b, a)
    }

    /// Whether a message `from -> to` would get through now: no partition or cut
    /// blocks it (a lossy link still counts as working).
    pub fn link_works(&self, from: NodeId, to: NodeId) -> bool {
        match (self.index(from), self.index(to)) {
            (Ok(from), Ok(to)) => !self.network.is_blocked(from, to),
            _ => false,
        }
    }

    /// Removes every partition, cut and link override. Messages already lost stay
    /// lost; the default link is left as it is.
    pub fn heal(&mut self) {
        self.network.heal();
        self.record(TraceEntry::Fault {
            description: "heal".to_owned(),
        });
    }

    fn note_network_change(&mut self, description: String) {
        let max_delay = self.slots[0].config.max_message_delay();
        if self.network.is_faulty(max_delay) {
            self.faulted = true;
        }
        self.record(TraceEntry::Fault { description });
    }
}
