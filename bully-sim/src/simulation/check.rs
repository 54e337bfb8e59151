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
//! - **The safety core's invariants** I1 to I7 (docs/protocol.md;
//!   [`invariants`](crate::invariants)): I1 to I6 on each node across each input, I7 (every
//!   lease covered by a quorum's promises, in real time) whenever a leader's
//!   lease or a member's promise changes. They break at the input that breaks
//!   the rule, before any second leader: the two schedules in which a majority
//!   let two members lead at once fail I7 at the restart and at the lease.
//!   With a quorum they are flagged while the clocks keep to the model (as
//!   overlaps are); without one there are no votes, promises or leases, and
//!   I1 is S2.
//!
//! A member restarted without its durable state (A3 broken) may claim a term
//! it led before, and number its requests as it did then: an acknowledgement
//! of its previous incarnation's request, delivered past the timing model (A1
//! broken: delayed, or replayed), then names one of its new requests, and backs
//! a lease from a later instant than the promise began. The new incarnation
//! waits a follower lease before it votes (G10), so with A1 every message of
//! the previous one is gone by then; with both broken, overlaps and the
//! invariants are counted, not flagged.
//!
//! Exclusive leadership and W1 rest on the leases, which rest on A2 (bounded
//! drift; docs/correctness.md, section 3): they are compared in real time, each member's instants converted
//! from its own clock (`clock.rs`). A clock that drifts, even beyond the bound
//! the configuration states, keeps them enforced: that is how a test shows a
//! drift beyond the bound breaking them. A running member's clock that *steps*
//! forward shortens whatever that member is timing, its promises too, as a
//! process pause does (docs/correctness.md, section 2): after one, overlaps are
//! counted, not flagged.

use std::collections::{BTreeMap, BTreeSet};

use bully_core::{Event, FencingToken, Instant, Node, NodeId, SafetyState, Term, Transmit};

use crate::invariants::{self, Broken, Member};

use super::clock::Clock;
use super::work::WorkModel;

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
    /// One of the safety core's invariants I1 to I7 broke (docs/protocol.md,
    /// [`invariants`](crate::invariants)).
    Invariant {
        /// The member whose input broke it.
        node: NodeId,
        /// Which, and how ([`Broken`](crate::invariants::Broken)'s description).
        broken: String,
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
    /// The safety core after the member's last input.
    safety: Option<SafetyState>,
    /// When this incarnation came back, on its own clock, if it was not
    /// declared a first boot (I5); `Pending` until its first input.
    back: Back,
}

/// When an incarnation that may have forgotten promises came back.
#[derive(Clone, Copy, Debug, Default)]
enum Back {
    /// Declared a first boot: it forgot nothing.
    #[default]
    FirstBoot,
    /// Not yet: at its first input.
    Pending,
    /// At this instant of its clock (its first input, or its start).
    Since(Instant),
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
    /// Whether the run keeps to what the leases rest on: every running
    /// member's clock kept to A2 (no step), and no member that lost its state
    /// met a message delivered past the timing model.
    in_model: bool,
    overlaps: u64,
    work_overlaps: u64,
    /// W1: the leaders' work, as the drivers run it.
    work: WorkModel,
    /// Whether each member's vote counts, by index (for a member that is down).
    voters: Vec<bool>,
    invariants_broken: u64,
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
            in_model: true,
            overlaps: 0,
            work_overlaps: 0,
            work: WorkModel::new(ids.len()),
            voters: vec![true; ids.len()],
            invariants_broken: 0,
            violations: Vec::new(),
        }
    }

    /// A member crashed at `now`: it leads no more, and its work is stopping.
    pub(crate) fn crashed(
        &mut self,
        now: Instant,
        clock: &Clock,
        index: usize,
        config: &bully_core::Config,
    ) {
        self.leading.remove(&index);
        self.work.crashed(now, clock, index, config);
    }

    /// A running member's clock stepped, or a member that lost its state met
    /// messages delivered past the timing model: from now on overlaps and
    /// broken invariants are counted, not flagged.
    pub(crate) fn left_model(&mut self) {
        self.in_model = false;
    }

    fn track_leading(&mut self, index: usize, node: &Node, at_us: u64) {
        if node.role() != bully_core::Role::Leader {
            self.leading.remove(&index);
            return;
        }
        if !self.leading.insert(index) {
            return;
        }
        if let Some(&other) = self.leading.iter().find(|&&other| other != index) {
            self.overlaps += 1;
            if self.quorum && self.in_model {
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

    /// A member is (re)built: the check of its next input starts from this
    /// node, before any input.
    pub(crate) fn reset(&mut self, index: usize, node: &Node) {
        let safety = node.safety();
        self.voters[index] = safety.voter;
        self.watches[index] = Watch {
            term: node.term(),
            highest: node.highest_token(),
            safety: Some(safety),
            back: if safety.first_boot {
                Back::FirstBoot
            } else {
                Back::Pending
            },
        };
    }

    /// A member started (`Node::start`) at `local`, its own clock's reading:
    /// if it may have forgotten promises, it came back then (I5).
    pub(crate) fn started(&mut self, index: usize, local: Instant) {
        let watch = &mut self.watches[index];
        if !matches!(watch.back, Back::FirstBoot) {
            watch.back = Back::Since(local);
        }
    }

    fn broke(&mut self, node: NodeId, broken: &Broken, at_us: u64) {
        self.invariants_broken += 1;
        if self.quorum && self.in_model {
            self.violations.push(Violation::Invariant {
                node,
                broken: broken.to_string(),
                at_us,
            });
        }
    }

    /// I7 across every member: `members[i]` is member `i`'s node and clock,
    /// `None` while it is down.
    pub(crate) fn check_leases(&mut self, now: Instant, members: &[(Option<&Node>, &Clock)]) {
        let states: Vec<Option<SafetyState>> = members
            .iter()
            .map(|(node, _)| node.map(Node::safety))
            .collect();
        let views: Vec<Member<'_>> = states
            .iter()
            .enumerate()
            .map(|(index, state)| match state {
                Some(state) => Member::Up(state),
                None => Member::Down {
                    voter: self.voters.get(index).copied().unwrap_or(true),
                },
            })
            .collect();
        let result = invariants::check_leases(&views, now, |index, at| members[index].1.real(at));
        if let Err(broken) = result {
            let leader = match broken {
                Broken::LeaseNotCovered { leader, .. } => leader,
                _ => NodeId(0),
            };
            let at_us = self.micros(now);
            self.broke(leader, &broken, at_us);
        }
    }

    /// Whether an input that took a member's safety core from `before` to
    /// `after` may have shrunk what covers a lease (I7): it leads and its
    /// lease moved, or its promise changed other than by running longer to
    /// the same leader, or it was rebuilt.
    pub(crate) fn leases_to_check(
        &self,
        before: Option<&SafetyState>,
        after: &SafetyState,
    ) -> bool {
        if !self.quorum {
            return false;
        }
        let Some(before) = before else {
            return true;
        };
        let lease_moved = after.leading.is_some() && after.lease_until != before.lease_until;
        let promise_shrank = match (before.promise, after.promise) {
            (Some(was), Some(now)) => was.to != now.to || now.until < was.until,
            (Some(_), None) => true,
            (None, _) => false,
        } || before.votes_for_nobody_until > after.votes_for_nobody_until;
        lease_moved || promise_shrank
    }

    /// Checks `node` (member `index`, whose clock is `clock`) after it handled
    /// one input at the real instant `now`, given the events and transmits
    /// that input produced. Returns the safety core before and after the
    /// input.
    pub(crate) fn after_input(
        &mut self,
        now: Instant,
        clock: &Clock,
        index: usize,
        node: &Node,
        (events, sent): (&[Event], &[Transmit]),
        strict: bool,
    ) -> (Option<SafetyState>, SafetyState) {
        let at_us = self.micros(now);
        let local = clock.local(now);
        if let Back::Pending = self.watches[index].back {
            self.watches[index].back = Back::Since(local);
        }
        let before_safety = self.watches[index].safety;
        let after_safety = node.safety();
        if let Some(before) = before_safety {
            let back_since = match self.watches[index].back {
                Back::Since(at) => Some(at),
                Back::FirstBoot | Back::Pending => None,
            };
            let input = invariants::Input {
                now: local,
                sent,
                back_since,
            };
            if let Err(broken) = invariants::check_input(&before, &after_safety, &input) {
                self.broke(node.id(), &broken, at_us);
            }
        }
        self.watches[index].safety = Some(after_safety);
        self.track_leading(index, node, at_us);
        if let Some(running) = self.work.after_input(now, clock, index, node) {
            self.work_overlaps += 1;
            if self.in_model {
                self.violations.push(Violation::WorkOverlap {
                    running: self.ids[running],
                    second: node.id(),
                    at_us,
                });
            }
        }
        if node.role() == bully_core::Role::Candidate && node.poll_timeout().is_none() {
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
        self.watches[index].term = node.term();
        self.watches[index].highest = node.highest_token();
        (before_safety, after_safety)
    }

    /// Whether the run still keeps to what the leases rest on (see `in_model`).
    pub(crate) fn in_model(&self) -> bool {
        self.in_model
    }

    /// Times an invariant of the safety core broke (flagged as a violation
    /// with a quorum while the clocks keep to the model, counted always).
    pub(crate) fn invariants_broken(&self) -> u64 {
        self.invariants_broken
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
