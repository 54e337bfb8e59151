//! The safety properties of docs/correctness.md (section 1), checked after every
//! input the simulation feeds a node.
//!
//! - **S1** at most one node announces itself coordinator per term. Without a
//!   quorum Bully promises this only among members in contact, so it is enforced
//!   while the run is *synchronous*: no partition, cut, loss or over-long delay
//!   has happened, no failure detector has been told something false, and no
//!   member has left the elections and come back (a restart, or a step-down:
//!   such a member's term, and the others' exclusion of it, date from before it
//!   was back in contact, so it can announce the term of an election that did
//!   not ask it). Outside that, same-term announcements are counted, not
//!   flagged: the fencing token `(term, id)` still orders them, and a quorum
//!   (`Config::quorum`) rules them out.
//! - **S2** a node's term and highest accepted token never decrease (per
//!   incarnation: a restart without persisted state begins again).
//! - **S3** a node never accepts, or follows, a token below the highest it had
//!   accepted.
//! - **Progress**: a candidate always has a timer armed (else nothing would ever
//!   move it on).
//! - **Exclusive leadership** (with a quorum): no two members ever act as leader
//!   at the same moment, whatever their terms, under any faults. With a quorum S1
//!   is enforced whatever the network does, as long as no member restarted
//!   without its durable state (its forgotten vote could elect a second leader of
//!   a term, later). Without a quorum, overlaps are counted, not flagged (a
//!   returning higher member leads a message delay before the old leader hears of
//!   it; a partition has a leader on each side).
//! - **W1** (with a quorum): no member's work starts while another's may still
//!   run (the work model of `work.rs`).
//!
//! Exclusive leadership and W1 rest on the leases, which rest on A2 (bounded
//! drift; docs/correctness.md, section 3): they are compared in real time, each member's instants converted
//! from its own clock (`clock.rs`). A clock that drifts, even beyond the bound
//! the configuration states, keeps them enforced: that is how a test shows a
//! drift beyond the bound breaking them. A running member's clock that *steps*
//! forward shortens whatever that member is timing, its promises too, as a
//! process pause does (docs/correctness.md, section 2): after one, overlaps are
//! counted, not flagged.

use crate::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

use super::clock::Clock;
use super::work::WorkModel;
use crate::event::{Event, FencingToken};
use crate::message::{NodeId, Term};
use crate::node::Node;

/// A broken safety property, with the simulated time (microseconds since the
/// start) at which it was seen.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "property", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Violation {
    /// S1: two members announced leadership in the same term while in contact.
    TwoLeadersInTerm {
        /// The term.
        term: Term,
        /// The member that announced first.
        first: NodeId,
        /// The member that announced second.
        second: NodeId,
        /// When the second announcement happened.
        at_us: u64,
    },
    /// S2: a node's term went down.
    TermDecreased {
        /// The node.
        node: NodeId,
        /// Its term before.
        from: Term,
        /// Its term after.
        to: Term,
        /// When.
        at_us: u64,
    },
    /// S2: a node's highest accepted token went down.
    TokenDecreased {
        /// The node.
        node: NodeId,
        /// The token before.
        from: FencingToken,
        /// The token after.
        to: Option<FencingToken>,
        /// When.
        at_us: u64,
    },
    /// Two members acted as leader at the same moment (checked with a quorum).
    OverlappingLeaders {
        /// The member that was leading.
        leading: NodeId,
        /// The member that became leader meanwhile.
        second: NodeId,
        /// When.
        at_us: u64,
    },
    /// W1: a member's work started while another member's work could still be
    /// running (see the work model in `sim/work.rs`; checked with a quorum).
    WorkOverlap {
        /// The member whose work could still run.
        running: NodeId,
        /// The member whose work started.
        second: NodeId,
        /// When the second member's work started.
        at_us: u64,
    },
    /// A candidate with no timer armed: nothing would ever move it on.
    Stalled {
        /// The node.
        node: NodeId,
        /// When.
        at_us: u64,
    },
    /// S3: a node accepted or followed a token below its floor.
    AcceptedBelowFloor {
        /// The node.
        node: NodeId,
        /// The highest token it had accepted before.
        floor: FencingToken,
        /// What it accepted or followed.
        accepted: FencingToken,
        /// When.
        at_us: u64,
    },
}

#[derive(Clone, Copy, Debug, Default)]
struct Watch {
    term: Term,
    highest: Option<FencingToken>,
}

#[derive(Debug)]
pub(crate) struct Checker {
    epoch: Instant,
    watches: Vec<Watch>,
    /// The first member to announce each term, and when.
    announced: BTreeMap<Term, NodeId>,
    same_term_leaders: u64,
    /// Members leading now, by index.
    leading: BTreeSet<usize>,
    /// Member ids by index, to name them in violations.
    ids: Vec<NodeId>,
    /// Whether the cluster runs with a quorum (exclusive leadership enforced).
    quorum: bool,
    /// Whether every running member's clock has kept to A2 (no step).
    clocks_in_model: bool,
    overlaps: u64,
    work_overlaps: u64,
    /// W1: the leaders' work, as the drivers run it.
    work: WorkModel,
    violations: Vec<Violation>,
}

impl Checker {
    pub(crate) fn new(epoch: Instant, ids: &[NodeId], quorum: bool) -> Checker {
        Checker {
            epoch,
            watches: vec![Watch::default(); ids.len()],
            ids: ids.to_vec(),
            announced: BTreeMap::new(),
            same_term_leaders: 0,
            leading: BTreeSet::new(),
            quorum,
            clocks_in_model: true,
            overlaps: 0,
            work_overlaps: 0,
            work: WorkModel::new(ids.len()),
            violations: Vec::new(),
        }
    }

    /// A member crashed at `now`: it leads no more, and its work is stopping.
    pub(crate) fn crashed(
        &mut self,
        now: Instant,
        clock: &Clock,
        index: usize,
        config: &crate::config::Config,
    ) {
        self.leading.remove(&index);
        self.work.crashed(now, clock, index, config);
    }

    /// A running member's clock stepped: from now on overlaps are counted, not
    /// flagged.
    pub(crate) fn left_clock_model(&mut self) {
        self.clocks_in_model = false;
    }

    fn track_leading(&mut self, index: usize, node: &Node, at_us: u64) {
        if node.role() != crate::event::Role::Leader {
            self.leading.remove(&index);
            return;
        }
        if !self.leading.insert(index) {
            return;
        }
        if let Some(&other) = self.leading.iter().find(|&&other| other != index) {
            self.overlaps += 1;
            if self.quorum && self.clocks_in_model {
                let leading = self.ids[other];
                self.violations.push(Violation::OverlappingLeaders {
                    leading,
                    second: node.id(),
                    at_us,
                });
            }
        }
    }

    /// Times a member became leader while another was leading.
    pub(crate) fn overlaps(&self) -> u64 {
        self.overlaps
    }

    /// Times a member's work started while another's might still run.
    pub(crate) fn work_overlaps(&self) -> u64 {
        self.work_overlaps
    }

    /// A member came back with fresh state.
    pub(crate) fn reset(&mut self, index: usize, node: &Node) {
        self.watches[index] = Watch {
            term: node.term(),
            highest: node.highest_token(),
        };
    }

    /// Checks `node` (member `index`, whose clock is `clock`) after it handled
    /// one input at the real instant `now`, given the events that input produced.
    pub(crate) fn after_input(
        &mut self,
        now: Instant,
        clock: &Clock,
        index: usize,
        node: &Node,
        events: &[Event],
        strict: bool,
    ) {
        let at_us = self.micros(now);
        self.track_leading(index, node, at_us);
        if let Some(running) = self.work.after_input(now, clock, index, node) {
            self.work_overlaps += 1;
            if self.clocks_in_model {
                self.violations.push(Violation::WorkOverlap {
                    running: self.ids[running],
                    second: node.id(),
                    at_us,
                });
            }
        }
        if node.role() == crate::event::Role::Candidate && node.poll_timeout().is_none() {
            self.violations.push(Violation::Stalled {
                node: node.id(),
                at_us,
            });
        }
        let before = self.watches[index];
        let id = node.id();
        if node.term() < before.term {
            self.violations.push(Violation::TermDecreased {
                node: id,
                from: before.term,
                to: node.term(),
                at_us,
            });
        }
        if let Some(floor) = before.highest {
            if node
                .highest_token()
                .is_none_or(|now_highest| now_highest < floor)
            {
                self.violations.push(Violation::TokenDecreased {
                    node: id,
                    from: floor,
                    to: node.highest_token(),
                    at_us,
                });
            }
            let followed = node.leader().map(|leader| leader.token());
            let accepted = events.iter().filter_map(|event| match *event {
                Event::LeaderElected { leader, term } => Some(FencingToken { term, leader }),
                _ => None,
            });
            for token in followed.into_iter().chain(accepted) {
                if token < floor {
                    self.violations.push(Violation::AcceptedBelowFloor {
                        node: id,
                        floor,
                        accepted: token,
                        at_us,
                    });
                }
            }
        }
        for event in events {
            if let Event::LeaderElected { leader, term } = *event {
                if leader == id {
                    self.on_announcement(term, id, at_us, strict);
                }
            }
        }
        self.watches[index] = Watch {
            term: node.term(),
            highest: node.highest_token(),
        };
    }

    fn on_announcement(&mut self, term: Term, id: NodeId, at_us: u64, strict: bool) {
        match self.announced.get(&term) {
            None => {
                self.announced.insert(term, id);
            }
            Some(&first) if first == id => {}
            Some(&first) => {
                self.same_term_leaders += 1;
                if strict {
                    self.violations.push(Violation::TwoLeadersInTerm {
                        term,
                        first,
                        second: id,
                        at_us,
                    });
                }
            }
        }
    }

    pub(crate) fn violations(&self) -> &[Violation] {
        &self.violations
    }

    pub(crate) fn same_term_leaders(&self) -> u64 {
        self.same_term_leaders
    }

    fn micros(&self, now: Instant) -> u64 {
        u64::try_from(now.duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }
}
