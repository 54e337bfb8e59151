//! What the page draws at one instant: each member's state, the messages on their
//! way, the counts since the episode began, the sources' formulas beside the
//! measured count, and what the number of leaders means. Everything is read from
//! the simulator's nodes; the page computes nothing about the protocol.

use std::collections::BTreeSet;

use bully_core::{MessageKind, NodeId, Role};
use bully_sim::Simulation;
use serde::Serialize;

use crate::clock::{MAX_TIME_US, micros};
use crate::episode::Episode;
use crate::explain::{Explanation, explain};
use crate::scenario::{QuorumChoice, Settings};

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
    /// cost, as the sources count it.
    pub election_messages: u64,
    /// Messages lost or blocked since the episode began.
    pub lost: u64,
    /// Time since the episode began, in message delays (T_M, the message time: the
    /// longest a message takes).
    pub delays: f64,
    /// The longest chain of dependent messages since the episode began.
    pub depth: u64,
    /// The leader every live member names, if they agree.
    pub agreed: Option<u64>,
    /// The members that consider themselves leader.
    pub leaders: Vec<u64>,
    /// Whether the election is over in every part of the network
    /// (`Session::is_settled`).
    pub settled: bool,
    /// What the number of leaders means.
    pub leadership: LeadershipView,
    /// Directed links cut.
    pub cuts: Vec<(u64, u64)>,
    /// Isolated groups.
    pub groups: Vec<Vec<u64>>,
    /// Actions still to come (a preset's script).
    pub pending: usize,
    /// Safety violations the simulator's checker saw (S1 to S3 of
    /// docs/correctness.md, section 1: one leader per term, terms and tokens never
    /// go back): none, always.
    pub violations: usize,
    /// The measured count beside the sources' formulas, once something happened.
    pub explanation: Option<Explanation>,
    /// Where the page's clock stops, simulated microseconds.
    pub time_limit_us: u64,
}

/// The leaders, and whether their number is what Bully allows here.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeadershipView {
    /// The members that consider themselves leader, ascending.
    pub leaders: Vec<u64>,
    /// Two or more leaders in parts of the network that cannot reach each other,
    /// without a quorum: the split brain Bully allows there.
    pub split_brain: bool,
    /// What the count means, in words (empty for none or one leader).
    pub note: String,
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

/// What a frame is read from: the session's simulator and what the session keeps
/// beside it (the session fills it in, so that this file needs nothing of it).
pub(crate) struct Scene<'a> {
    /// The settings the cluster was built with.
    pub(crate) settings: &'a Settings,
    /// The simulator.
    pub(crate) sim: &'a Simulation,
    /// The members that called an election or noticed a failure in this episode.
    pub(crate) initiators: &'a BTreeSet<u64>,
    /// Directed links cut by the user.
    pub(crate) cuts: &'a BTreeSet<(u64, u64)>,
    /// Groups isolated by the user.
    pub(crate) groups: &'a [Vec<u64>],
    /// Which run the counts describe.
    pub(crate) episode: &'a Episode,
    /// Members that joined the episode through their own timeouts, in order.
    pub(crate) joined: &'a [u64],
    /// Simulated microseconds since the start.
    pub(crate) now_us: u64,
    /// Whether the election is over in every part of the network.
    pub(crate) settled: bool,
    /// Actions still to come (a preset's script).
    pub(crate) pending: usize,
}

impl Frame {
    /// Reads a scene.
    pub(crate) fn of(scene: &Scene<'_>) -> Frame {
        let sim = scene.sim;
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
                    initiator: scene.initiators.contains(&id.0),
                },
                None => NodeView {
                    id: id.0,
                    up: false,
                    role: "down",
                    term: 0,
                    follows: None,
                    initiator: scene.initiators.contains(&id.0),
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
        Frame {
            now_us: scene.now_us,
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
            settled: scene.settled,
            leadership: leadership(scene),
            cuts: scene.cuts.iter().copied().collect(),
            groups: scene.groups.to_vec(),
            pending: scene.pending,
            violations: sim.violations().len(),
            explanation: explain(
                scene.settings,
                scene.episode,
                scene.joined,
                election_messages,
            ),
            time_limit_us: MAX_TIME_US,
        }
    }

    /// The frame as JSON.
    pub fn to_json(&self) -> String {
        // Plain data with string keys always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The leaders and what their number means.
fn leadership(scene: &Scene<'_>) -> LeadershipView {
    let sim = scene.sim;
    let leaders: Vec<u64> = sim.leaders().into_iter().map(|id| id.0).collect();
    let apart = |a: u64, b: u64| {
        let (a, b) = (NodeId(a), NodeId(b));
        !(sim.link_works(a, b) && sim.link_works(b, a))
    };
    let separated = leaders
        .iter()
        .enumerate()
        .all(|(i, &a)| leaders[i + 1..].iter().all(|&b| apart(a, b)));
    let quorum = scene.settings.quorum != QuorumChoice::None;
    let list = leaders
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(" and ");
    let (split_brain, note) = match leaders.len() {
        0 | 1 => (false, String::new()),
        k if separated && !quorum => (
            true,
            format!(
                "{k} leaders ({list}), one in each part of the network that cannot reach the                  others: the split brain that Bully without a quorum allows, as expected. Each                  leadership has its own fencing token (term, id), so no safety rule is broken.                  With quorum \"majority\" a part without a majority of the {} processes has                  no leader.",
                scene.settings.n
            ),
        ),
        k if separated => (
            false,
            format!(
                "{k} leaders ({list}) for now, in parts that cannot reach each other: the one                  without a majority steps down when its lease runs out, before anyone else                  may be elected."
            ),
        ),
        k => (
            false,
            format!(
                "{k} leaders ({list}) for a moment: the older steps down when the newer one's                  Coordinator reaches it."
            ),
        ),
    };
    LeadershipView {
        leaders,
        split_brain,
        note,
    }
}
