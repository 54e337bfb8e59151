//! What one election costs, in messages and message delays, per algorithm and
//! with or without a quorum: the `simulate costs` command, which
//! `docs/correctness.md` quotes for the "cost and time" questions of the course
//! exercise "Bully Algorithm Dance".
//!
//! The runs are the sources' scenarios of [`bully_sim::scenario`] (README.md,
//! "Sources"), measured
//! the same way (from the trigger until every live member names the same leader,
//! then until the election's last message has landed), with one difference that
//! only matters under a quorum: there a heartbeat round's acknowledgements
//! ([`Message::Ack`] of a round above 0) renew the lease, the steady state, and
//! are left out like the heartbeats; the leadership's first heartbeat round,
//! which confirms the claim to the members and without which none of them names
//! the leader, is counted. Without a quorum the counts equal `table`, `formulas`
//! and `cases` (a test checks it).

use bully_core::{Algorithm, Config, Message, MessageCounts, MessageKind, NodeId, Quorum};
use bully_sim::scenario::members;
use bully_sim::{SimError, Simulation, TraceEntry};

use crate::measure::ALGORITHMS;

/// The process counts `simulate costs` measures by default.
pub const COST_NODES: [u64; 3] = [5, 10, 25];

/// What one run cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    /// Messages from the trigger until the election's last message, by kind:
    /// heartbeats and their acknowledgements left out, a quorum's confirming
    /// heartbeat round (round 1) counted.
    pub messages: MessageCounts,
    /// Time from the trigger until every live member named the same leader, in
    /// message delays (T_M, the message time: the longest a message takes).
    pub delays: f64,
    /// The longest chain of dependent messages among those counted (the Bully
    /// Algorithm Dance's "elapsed time" measure). A heartbeat round's acknowledgements would
    /// lengthen chains by one every round, so they count here no more than in
    /// `messages`.
    pub depth: u64,
    /// The leader they agreed on, if they did.
    pub leader: Option<NodeId>,
}

impl Cost {
    /// All counted messages.
    pub fn total(&self) -> u64 {
        self.messages.total()
    }
}

/// One algorithm at one size: every initiator of the setting of Soundarabai et
/// al.'s Table 1, the lecture notes' two cases, a failover by timeout and a cold
/// start.
#[derive(Clone, Debug)]
pub struct CostRow {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Members (live ones in `initiators` and `cold_start`; the crashed leader
    /// included in `best`, `worst` and `failover`).
    pub n: u64,
    /// The setting of Soundarabai et al.'s Table 1: `n` live members, no leader, member `P` alone
    /// starts an election; index `P - 1`.
    pub initiators: Vec<Cost>,
    /// The lecture notes' best case: from a settled cluster led by `n`, `n` crashes and
    /// `n - 1` is told.
    pub best: Cost,
    /// The lecture notes' worst case: `n` crashes and the lowest, 1, is told.
    pub worst: Cost,
    /// `n` crashes and nobody is told: every member finds out by its own
    /// (staggered) leader timeout. Time counted from the crash.
    pub failover: Cost,
    /// Every member starts at the same instant (the Bully Algorithm Dance's
    /// experiment 2).
    pub cold_start: Cost,
    /// [`Config::failover_bound`] for `n` members, in message delays: what
    /// `failover` must stay within (L2: agreement within the bound `Config`
    /// computes; docs/correctness.md, section 1).
    pub failover_bound: f64,
}

impl CostRow {
    /// The initiator whose election sent the fewest messages, and its cost.
    pub fn fewest(&self) -> (u64, &Cost) {
        self.pick(|best, cost| cost.total() < best.total())
    }

    /// The initiator whose election sent the most messages, and its cost.
    pub fn most(&self) -> (u64, &Cost) {
        self.pick(|best, cost| cost.total() > best.total())
    }

    /// The initiator whose election took longest to agree, and its cost.
    pub fn slowest(&self) -> (u64, &Cost) {
        self.pick(|best, cost| cost.delays > best.delays)
    }

    /// The mean over initiators of the messages.
    pub fn mean_messages(&self) -> f64 {
        let sum: u64 = self.initiators.iter().map(Cost::total).sum();
        sum as f64 / self.initiators.len().max(1) as f64
    }

    /// The mean over initiators of the time to agree, in message delays.
    pub fn mean_delays(&self) -> f64 {
        let sum: f64 = self.initiators.iter().map(|cost| cost.delays).sum();
        sum / self.initiators.len().max(1) as f64
    }

    /// Whether every run ended with every live member naming the highest live one.
    pub fn all_agreed_on_highest(&self) -> bool {
        let highest = Some(NodeId(self.n));
        let survivor = Some(NodeId(self.n - 1));
        self.initiators.iter().all(|cost| cost.leader == highest)
            && self.cold_start.leader == highest
            && [&self.best, &self.worst, &self.failover]
                .iter()
                .all(|cost| cost.leader == survivor)
    }

    /// The first initiator (lowest `P`) for which `better(current, candidate)`
    /// never found a better one.
    fn pick(&self, better: impl Fn(&Cost, &Cost) -> bool) -> (u64, &Cost) {
        let mut chosen = (1, &self.initiators[0]);
        for (index, cost) in self.initiators.iter().enumerate().skip(1) {
            if better(chosen.1, cost) {
                chosen = (index as u64 + 1, cost);
            }
        }
        chosen
    }
}

/// The default configuration running `algorithm`, with `quorum`.
pub fn config(algorithm: Algorithm, quorum: Quorum) -> Config {
    crate::measure::config(algorithm).with_quorum(quorum)
}

/// Every algorithm at every size in `nodes` (each at least 3), with `quorum`.
pub fn costs(nodes: &[u64], quorum: Quorum) -> Result<Vec<CostRow>, SimError> {
    let mut rows = Vec::new();
    for &n in nodes {
        for algorithm in ALGORITHMS {
            rows.push(cost_row(&config(algorithm, quorum), n)?);
        }
    }
    Ok(rows)
}

/// Every scenario for one configuration and size.
pub fn cost_row(config: &Config, n: u64) -> Result<CostRow, SimError> {
    let initiators = (1..=n)
        .map(|p| {
            let mut sim = Simulation::new(0, members(n), config.clone())?;
            // Table 1's setting: every process up and idle.
            sim.wake_all();
            measure(&mut sim, config, |sim| {
                sim.command(NodeId(p), |node, now| node.start_election(now))
                    .map(|_| ())
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let leader = NodeId(n);
    let crash_and_tell = |noticer: Option<NodeId>| -> Result<Cost, SimError> {
        let mut sim = bully_sim::scenario::settled(config, n, 0)?;
        measure(&mut sim, config, |sim| {
            sim.crash(leader)?;
            if let Some(noticer) = noticer {
                sim.command(noticer, |node, now| node.suspect(now, leader))??;
            }
            Ok(())
        })
    };
    let best = crash_and_tell(Some(NodeId(n - 1)))?;
    let worst = crash_and_tell(Some(NodeId(1)))?;
    let failover = crash_and_tell(None)?;
    let mut sim = Simulation::new(0, members(n), config.clone())?;
    let cold_start = measure(&mut sim, config, |sim| {
        sim.start_all();
        Ok(())
    })?;
    let failover_bound = sim.in_delays(config.failover_bound(n as usize));
    Ok(CostRow {
        failover_bound,
        algorithm: config.algorithm(),
        n,
        initiators,
        best,
        worst,
        failover,
        cold_start,
    })
}

/// Runs `trigger`, then the cluster until every live member agrees, then long
/// enough for the election's last messages to land (as `scenario`'s runs do),
/// and counts the election's messages in the trace.
fn measure(
    sim: &mut Simulation,
    config: &Config,
    trigger: impl FnOnce(&mut Simulation) -> Result<(), SimError>,
) -> Result<Cost, SimError> {
    sim.enable_trace();
    let mark = sim.trace().len();
    sim.reset_counts();
    trigger(sim)?;
    let bound = sim.settle_bound();
    sim.run_until_true(bound, |sim| sim.agreed_leader().is_some());
    let delays = sim.in_delays(sim.since_reset());
    let leader = sim.agreed_leader();
    sim.run_for(
        config.coordinator_timeout() + config.answer_timeout() + config.max_message_delay() * 2,
    );
    sim.run_until_true(bound, |sim| sim.in_flight() == 0);
    let quorum = config.quorum() != Quorum::None;
    let mut messages = MessageCounts::default();
    let mut depth = 0;
    for record in &sim.trace()[mark..] {
        if let TraceEntry::Send {
            message,
            depth: chain,
            ..
        } = &record.entry
        {
            if counts_toward_election(message, quorum) {
                messages[message.kind()] += 1;
                depth = depth.max(*chain);
            }
        }
    }
    Ok(Cost {
        messages,
        delays,
        depth,
        leader,
    })
}

/// Whether `message` is part of an election's cost rather than the steady state.
fn counts_toward_election(message: &Message, quorum: bool) -> bool {
    match *message {
        // With a quorum the first round confirms the claim; otherwise heartbeats
        // are the failure detector's steady state.
        Message::Heartbeat { round, .. } => quorum && round == 1,
        // Round 0 is a vote for a claim; later rounds renew the lease.
        Message::Ack { round, .. } => round == 0,
        _ => message.kind() != MessageKind::Heartbeat,
    }
}

/// The header of `simulate costs --format csv`: one line per (algorithm, N,
/// case); `initiator` is the `P` of the `fewest`, `most` and `slowest` cases.
/// `depth` is the longest chain of dependent messages (empty for the mean);
/// `bound` is [`Config::failover_bound`] in message delays, on `timeout` lines.
pub const COSTS_CSV_HEADER: &str =
    "quorum,algorithm,n,case,initiator,messages,delays,depth,bound,leader";

/// One printed line of a [`CostRow`].
struct Line {
    case: &'static str,
    /// The initiator `P`, for the cases that pick one.
    initiator: Option<u64>,
    messages: String,
    delays: f64,
    /// The longest chain of dependent messages (empty for the mean).
    depth: String,
    /// The agreed leader, `-` if the members did not agree, empty for the mean.
    leader: String,
    /// The messages by kind (empty for the mean).
    by_kind: String,
    /// The bound on the time, where the configuration states one.
    bound: Option<f64>,
}

/// The cases of a [`CostRow`], in the order they are printed.
fn lines(row: &CostRow) -> Vec<Line> {
    let one = |case, initiator, cost: &Cost| Line {
        case,
        initiator,
        messages: cost.total().to_string(),
        delays: cost.delays,
        depth: cost.depth.to_string(),
        leader: cost
            .leader
            .map_or_else(|| "-".to_owned(), |id| id.to_string()),
        by_kind: cost.messages.to_string(),
        bound: None,
    };
    let (fewest_p, fewest) = row.fewest();
    let (most_p, most) = row.most();
    let (slowest_p, slowest) = row.slowest();
    vec![
        one("fewest", Some(fewest_p), fewest),
        Line {
            case: "mean",
            initiator: None,
            messages: format!("{:.1}", row.mean_messages()),
            delays: row.mean_delays(),
            depth: String::new(),
            leader: String::new(),
            by_kind: String::new(),
            bound: None,
        },
        one("most", Some(most_p), most),
        one("slowest", Some(slowest_p), slowest),
        one("best", None, &row.best),
        one("worst", None, &row.worst),
        Line {
            bound: Some(row.failover_bound),
            ..one("timeout", None, &row.failover)
        },
        one("cold", None, &row.cold_start),
    ]
}

/// The quorum as printed: `none` or `majority` (or `at-least-<n>`).
pub fn quorum_name(quorum: Quorum) -> String {
    match quorum {
        Quorum::None => "none".to_owned(),
        Quorum::Majority => "majority".to_owned(),
        Quorum::AtLeast(n) => format!("at-least-{n}"),
        _ => "other".to_owned(),
    }
}

/// `costs` as text.
pub fn costs_text(rows: &[CostRow], quorum: Quorum) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "The cost of one election, quorum: {}. Messages from the trigger until the\n\
         election's last message (heartbeats and their acknowledgements excluded; with a\n\
         quorum the leader's first, confirming heartbeat round counted); time until every\n\
         live member names the same leader, in message delays (T_M, the message time:\n\
         20 ms); depth = the longest chain of dependent messages among those counted.\n\n\
         The setting of Soundarabai et al.'s Table 1 (N live members, no leader, member P\n\
         alone starts an election), over every initiator P = 1..N:\n\
         \x20 fewest   the P whose election sends the fewest messages\n\
         \x20 mean     the mean over P of the messages and of the time\n\
         \x20 most     the P whose election sends the most\n\
         \x20 slowest  the P whose election takes the longest to agree\n\
         From a cluster of N settled under N, N crashes (the N-1 survivors elect):\n\
         \x20 best     the lecture notes' best case: N-1 is told\n\
         \x20 worst    the lecture notes' worst case: 1 is told\n\
         \x20 timeout  nobody is told; each member's own staggered leader timeout fires\n\
         \x20          (time counted from the crash, detection included; bound =\n\
         \x20          Config::failover_bound, the bound it must stay within: L2 of\n\
         \x20          docs/correctness.md, section 1)\n\
         And:\n\
         \x20 cold     all N members start at the same instant\n\n",
        quorum_name(quorum)
    );
    let cells: Vec<Vec<String>> = rows
        .iter()
        .flat_map(|row| {
            lines(row).into_iter().map(move |line| {
                vec![
                    crate::measure::algorithm_name(row.algorithm).to_owned(),
                    row.n.to_string(),
                    line.case.to_owned(),
                    line.initiator.map_or_else(String::new, |p| p.to_string()),
                    line.messages,
                    format!("{:.1}", line.delays),
                    line.depth,
                    line.bound
                        .map_or_else(String::new, |bound| format!("{bound:.1}")),
                    line.leader,
                    line.by_kind,
                ]
            })
        })
        .collect();
    out.push_str(&crate::report::columns(
        &[
            "algorithm",
            "N",
            "case",
            "P",
            "messages",
            "T_M",
            "depth",
            "bound",
            "leader",
            "by kind",
        ],
        &cells,
    ));
    let disagreed: Vec<String> = rows
        .iter()
        .filter(|row| !row.all_agreed_on_highest())
        .map(|row| {
            format!(
                "{} N={}",
                crate::measure::algorithm_name(row.algorithm),
                row.n
            )
        })
        .collect();
    if disagreed.is_empty() {
        let _ = writeln!(
            out,
            "\nEvery run ended with every live member naming the highest live member."
        );
    } else {
        let _ = writeln!(
            out,
            "\nRuns where the members did not all name the highest live member: {}.",
            disagreed.join(", ")
        );
    }
    out
}

/// `costs` as CSV.
pub fn costs_csv(rows: &[CostRow], quorum: Quorum) -> String {
    use std::fmt::Write as _;
    let mut out = format!("{COSTS_CSV_HEADER}\n");
    for row in rows {
        for line in lines(row) {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{}",
                quorum_name(quorum),
                crate::measure::algorithm_name(row.algorithm),
                row.n,
                line.case,
                line.initiator.map_or_else(String::new, |p| p.to_string()),
                line.messages,
                crate::report::csv_delays(line.delays),
                line.depth,
                line.bound
                    .map_or_else(String::new, crate::report::csv_delays),
                line.leader,
            );
        }
    }
    out
}
