//! What the page draws at one instant: each member's state, the messages on their
//! way, the counts since the episode began and, in seed 003's Table 1 setting,
//! the paper's formula and number beside the measured count. Everything is read
//! from the simulator's nodes; the page computes nothing about the protocol.

use bully_core::{MessageKind, NodeId, Role};
use serde::Serialize;

use crate::paper;
use crate::scenario::AlgorithmChoice;
use crate::session::{Session, micros};

/// One frame, serialized to JSON for the page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frame {
    /// Simulated microseconds since the start.
    pub now_us: u64,
    /// One message time, in microseconds.
    pub delay_us: u64,
    /// Every member, ascending.
    pub nodes: Vec<NodeView>,
    /// Messages on their way, in delivery order (heartbeats included).
    pub flights: Vec<FlightView>,
    /// Messages sent since the episode began, by kind (heartbeats included).
    pub counts: Vec<(String, u64)>,
    /// Messages sent since the episode began, heartbeats left out: the election's
    /// cost, as the seeds count it.
    pub election_messages: u64,
    /// Messages lost or blocked since the episode began.
    pub lost: u64,
    /// Time since the episode began, in message delays (T_M).
    pub delays: f64,
    /// The longest chain of dependent messages since the episode began.
    pub depth: u64,
    /// The leader every live member names, if they agree.
    pub agreed: Option<u64>,
    /// The members that consider themselves leader.
    pub leaders: Vec<u64>,
    /// Whether the election is over (agreement, nothing of it in flight).
    pub quiet: bool,
    /// Directed links cut.
    pub cuts: Vec<(u64, u64)>,
    /// Isolated groups.
    pub groups: Vec<Vec<u64>>,
    /// Actions still to come (a preset's script).
    pub pending: usize,
    /// Safety violations the simulator's checker saw (S1 to S3): none, always.
    pub violations: usize,
    /// Seed 003's Table 1 comparison, while the run is that setting.
    pub table_1: Option<Table1View>,
}

/// One member.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeView {
    /// Its id.
    pub id: u64,
    /// Whether it is up.
    pub up: bool,
    /// `leader`, `candidate`, `follower`, or `down`.
    pub role: &'static str,
    /// Its current term.
    pub term: u64,
    /// The leader it follows.
    pub follows: Option<u64>,
    /// Whether it started the current episode (drawn green).
    pub initiator: bool,
}

/// One message on its way.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlightView {
    /// Sender.
    pub from: u64,
    /// Addressee.
    pub to: u64,
    /// Its kind's name.
    pub kind: &'static str,
    /// The term it carries.
    pub term: u64,
    /// When it left, simulated microseconds.
    pub sent_us: u64,
    /// When it lands.
    pub arrives_us: u64,
}

/// The paper's count beside the measured one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table1View {
    /// N.
    pub n: u64,
    /// P: the initiator's rank (its id: members are `1..=N`).
    pub p: u64,
    /// The formula, as the paper (or this implementation, where the paper gives
    /// none) writes it.
    pub formula: &'static str,
    /// Where the formula comes from.
    pub source: &'static str,
    /// The formula's value for this N and P.
    pub expected: u64,
    /// Table 1's number for this N, when the table has a row for it and P = 1.
    pub paper: Option<u64>,
}

impl Frame {
    /// Reads a session.
    pub(crate) fn of(session: &Session) -> Frame {
        let sim = &session.sim;
        let nodes = sim
            .members()
            .iter()
            .map(|&id| match sim.node(id) {
                Some(node) => NodeView {
                    id: id.0,
                    up: true,
                    role: match node.role() {
                        Role::Leader => "leader",
                        Role::Candidate => "candidate",
                        _ => "follower",
                    },
                    term: node.term().0,
                    follows: node.leader().map(|leader| leader.id.0),
                    initiator: session.initiators.contains(&id.0),
                },
                None => NodeView {
                    id: id.0,
                    up: false,
                    role: "down",
                    term: 0,
                    follows: None,
                    initiator: session.initiators.contains(&id.0),
                },
            })
            .collect();
        let flights = sim
            .messages_in_flight()
            .map(|m| FlightView {
                from: m.from.0,
                to: m.to.0,
                kind: m.message.kind().name(),
                term: m.message.term().0,
                sent_us: m.sent_us,
                arrives_us: m.arrives_us,
            })
            .collect();
        let sent = sim.sent();
        let counts = MessageKind::ALL
            .into_iter()
            .filter(|&kind| sent[kind] > 0)
            .map(|kind| (kind.name().to_owned(), sent[kind]))
            .collect();
        let election_messages = sent.total() - sent[MessageKind::Heartbeat];
        let table_1 = session
            .table_1_initiator
            .map(|p| table_1(session.settings.algorithm, session.settings.n, p));
        Frame {
            now_us: session.now_us(),
            delay_us: micros(sim.message_delay()),
            nodes,
            flights,
            counts,
            election_messages,
            lost: sim.lost(),
            delays: sim.in_delays(sim.since_reset()),
            depth: sim.max_depth(),
            agreed: sim.agreed_leader().map(|id: NodeId| id.0),
            leaders: sim.leaders().into_iter().map(|id| id.0).collect(),
            quiet: session.is_quiet(),
            cuts: session.cuts.iter().copied().collect(),
            groups: session.groups.clone(),
            pending: session.pending(),
            violations: sim.violations().len(),
            table_1,
        }
    }

    /// The frame as JSON.
    pub fn to_json(&self) -> String {
        // Plain data with string keys always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The seeds' count for one initiator `p` of `n` live members, nobody leading.
fn table_1(algorithm: AlgorithmChoice, n: u64, p: u64) -> Table1View {
    let paper = (p == 1)
        .then(|| paper::table_1(n))
        .flatten()
        .map(|(classic, modified)| match algorithm {
            AlgorithmChoice::Classic => classic,
            AlgorithmChoice::Modified => modified,
            AlgorithmChoice::Ring => 0,
        })
        .filter(|_| algorithm != AlgorithmChoice::Ring);
    let (formula, source, expected) = match algorithm {
        AlgorithmChoice::Classic => (
            "(N-P+1)(N-P) + N-1",
            "seed 003, equation (3)",
            paper::equation_3(n, p),
        ),
        AlgorithmChoice::Modified if p >= n => (
            "N-1",
            "the highest announces at once",
            paper::modified_implementation(n, p),
        ),
        AlgorithmChoice::Modified => (
            "3N-P-1",
            "seed 003's Figure 6 (3N-2 at P=1, Table 1)",
            paper::modified_implementation(n, p),
        ),
        AlgorithmChoice::Ring => (
            "4N-2",
            "this ring: N hops and N-1, each acknowledged",
            paper::ring_implementation(n),
        ),
    };
    Table1View {
        n,
        p,
        formula,
        source,
        expected,
        paper,
    }
}
