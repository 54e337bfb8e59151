//! Partial partitions under turmoil: five real bully-tokio nodes with
//! `Quorum::Majority`, the real `UdpTransport` over turmoil's simulated UDP, and
//! the default timings (heartbeat 100 ms, leader timeout 500 ms), in turmoil's
//! simulated time.
//!
//! The cluster settles with 5 leading; then some links break, one direction at a
//! time (turmoil's `partition_oneway`), and stay broken for a 10 s window: the
//! chain of five (5 reaches only 4, 4 reaches all), quorum-loss with the hub at
//! 4, 3 and 1 (every link cut but the hub's), and a leader that can only send or
//! only receive. The
//! member that should lead is the highest one that reaches a majority, itself
//! included, over links that work both ways (Bully's rule, generalised: a higher
//! member that cannot reach a quorum must neither lead nor hold a lower one back).
//! Within [`STABLE_WITHIN`] of the cut that member must lead, a majority must
//! follow it in its term over working links, and nothing may change until the end
//! of the window; the highest term any member holds may grow by at most
//! [`MAX_TERM_GROWTH`] over the window (no livelock, no term inflation).
//!
//! Every seed runs to the end and is reported; the test fails afterwards with the
//! list of seeds that missed, what each member named, and how far the terms grew.
//! Run with `--nocapture` to see every seed's measurements.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Config, Leader, Node, NodeId, Quorum};
use bully_tokio::UdpTransport;

mod sim_socket;
use sim_socket::SimSocket;

const PORT: u16 = 7000;
const N: u64 = 5;
const SECRET: &[u8] = b"turmoil test secret, 32 bytes!!!";

/// How soon after the cut the expected member must lead for good.
const STABLE_WITHIN: Duration = Duration::from_secs(3);
/// How long the cut lasts.
const WINDOW: Duration = Duration::from_secs(10);
/// How far the highest term may grow over the window.
const MAX_TERM_GROWTH: u64 = 3;

/// The default timings with a majority quorum: what `simulate partial` measures
/// in the deterministic simulator. turmoil delivers within 1..=5 ms, well inside
/// the default 20 ms message delay.
fn config() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

fn host(id: u64) -> String {
    format!("n{id}")
}

fn members() -> Vec<NodeId> {
    (1..=N).map(NodeId).collect()
}

/// What one host's node reports: the leader it names, and the highest term it has
/// persisted (its durable term, which every election raises).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Seen {
    leader: Option<Leader>,
    term: u64,
}

impl Seen {
    /// The highest term this node has shown: its durable term, or its leader's.
    fn term(&self) -> u64 {
        self.term.max(self.leader.map_or(0, |leader| leader.term.0))
    }
}

type Board = Arc<Mutex<BTreeMap<NodeId, Seen>>>;

/// One host's software: a node over turmoil UDP, reporting its leader and term.
async fn run_node(id: NodeId, board: Board) -> turmoil::Result {
    let socket = turmoil::net::UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    let peers: Vec<(NodeId, SocketAddr)> = members()
        .into_iter()
        .map(|peer| (peer, SocketAddr::new(turmoil::lookup(host(peer.0)), PORT)))
        .collect();
    let auth = Auth::hmac(Key::new(KeyId(1), SECRET)?);
    let codec = Codec::new(ClusterId(5), id, Incarnation(1), members(), auth)?;
    let transport = UdpTransport::new(SimSocket(socket), codec, peers);
    let node = Node::new(id, members(), config())?;
    let terms = board.clone();
    let handle = bully_tokio::spawn_persisting(node, transport, move |state| {
        terms.lock().unwrap().entry(id).or_default().term = state.term.0;
    });
    let mut leader = handle.leader_watch();
    loop {
        let named = *leader.borrow_and_update();
        board.lock().unwrap().entry(id).or_default().leader = named;
        if leader.changed().await.is_err() {
            return Ok(());
        }
    }
}

/// A partial partition: the links that are cut, each in one direction.
#[derive(Clone, Debug)]
struct Cut {
    name: String,
    /// `(from, to)`: datagrams from `from` to `to` are dropped.
    cut: BTreeSet<(u64, u64)>,
}

impl Cut {
    fn link_works(&self, from: u64, to: u64) -> bool {
        from == to || !self.cut.contains(&(from, to))
    }

    fn both_ways(&self, a: u64, b: u64) -> bool {
        self.link_works(a, b) && self.link_works(b, a)
    }

    /// The highest member that reaches a majority, itself included, over links
    /// working both ways.
    fn highest_quorum_connected(&self) -> Option<u64> {
        (1..=N)
            .rev()
            .find(|&a| (1..=N).filter(|&b| self.both_ways(a, b)).count() >= majority())
    }

    /// Cuts `a`–`b` in both directions, one direction at a time.
    fn both(&mut self, a: u64, b: u64) {
        self.cut.insert((a, b));
        self.cut.insert((b, a));
    }

    /// Chained, five members: 5 reaches only 4, 4 reaches all, and 1, 2 and 3
    /// reach each other (and 4).
    fn chained() -> Cut {
        let mut cut = Cut {
            name: "chained (5 reaches only 4, 4 reaches all)".to_owned(),
            cut: BTreeSet::new(),
        };
        for low in 1..=3 {
            cut.both(5, low);
        }
        cut
    }

    /// Quorum-loss: every link cut except those of `hub`, which still reaches
    /// all; the leader 5 reaches only the hub.
    fn quorum_loss(hub: u64) -> Cut {
        let mut cut = Cut {
            name: format!("quorum-loss (hub {hub})"),
            cut: BTreeSet::new(),
        };
        for a in 1..=N {
            for b in a + 1..=N {
                if a != hub && b != hub {
                    cut.both(a, b);
                }
            }
        }
        cut
    }

    /// The leader 5 can send to everyone but hears nobody: every link into 5 is
    /// cut, one direction only.
    fn leader_send_only() -> Cut {
        Cut {
            name: "leader 5 sends but hears nobody".to_owned(),
            cut: (1..N).map(|other| (other, N)).collect(),
        }
    }

    /// The leader 5 hears everyone but can send to nobody: every link out of 5
    /// is cut, one direction only.
    fn leader_receive_only() -> Cut {
        Cut {
            name: "leader 5 hears all but reaches nobody".to_owned(),
            cut: (1..N).map(|other| (N, other)).collect(),
        }
    }
}

fn majority() -> usize {
    N as usize / 2 + 1
}

/// The member that names itself leader and that a majority, itself included,
/// follows in that same leadership (id and term) over links working both ways.
fn effective_leader(board: &BTreeMap<NodeId, Seen>, cut: &Cut) -> Option<Leader> {
    board.iter().find_map(|(&id, seen)| {
        let own = seen.leader.filter(|leader| leader.id == id)?;
        let followers = board
            .iter()
            .filter(|&(&other, seen)| cut.both_ways(id.0, other.0) && seen.leader == Some(own))
            .count();
        (followers >= majority()).then_some(own)
    })
}

fn max_term(board: &BTreeMap<NodeId, Seen>) -> u64 {
    board.values().map(Seen::term).max().unwrap_or(0)
}

/// What one seed did under the cut.
struct Outcome {
    seed: u64,
    expected: u64,
    /// The effective leader at the end of the window.
    final_leader: Option<Leader>,
    /// From the cut until the effective leader of the end took over for good;
    /// `None` if there was none at the end.
    stable_after: Option<Duration>,
    /// Changes of effective leader (a new leader, a new term, or none) in the
    /// window.
    changes: u64,
    term_growth: u64,
    /// What each member named at the end, and its term.
    named: BTreeMap<NodeId, Seen>,
}

impl Outcome {
    fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        match (self.final_leader, self.stable_after) {
            (Some(leader), Some(after)) => {
                if leader.id.0 != self.expected {
                    failures.push(format!(
                        "led by {} at the end, not the expected {}",
                        leader.id, self.expected
                    ));
                }
                if after > STABLE_WITHIN {
                    failures.push(format!(
                        "stable only {} ms after the cut (bound {} ms)",
                        after.as_millis(),
                        STABLE_WITHIN.as_millis()
                    ));
                }
            }
            _ => failures.push("no leader that a majority follows at the end".to_owned()),
        }
        if self.term_growth > MAX_TERM_GROWTH {
            failures.push(format!(
                "terms grew by {} (at most {MAX_TERM_GROWTH})",
                self.term_growth
            ));
        }
        failures
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let leader = self
            .final_leader
            .map_or_else(|| "none".to_owned(), |leader| leader.to_string());
        let stable = self
            .stable_after
            .map_or_else(|| "never".to_owned(), |t| format!("{} ms", t.as_millis()));
        write!(
            f,
            "seed {}: leader {leader} (expected {}), stable after {stable}, {} changes, terms +{}; named:",
            self.seed, self.expected, self.changes, self.term_growth
        )?;
        for (id, seen) in &self.named {
            let named = seen
                .leader
                .map_or_else(|| "-".to_owned(), |leader| leader.to_string());
            write!(f, " {id}->{named}@t{}", seen.term())?;
        }
        Ok(())
    }
}

/// Boots five hosts, waits for 5 to lead, lets a seed-dependent part of a
/// heartbeat pass, cuts, and watches the window.
fn run(seed: u64, cut: &Cut) -> Outcome {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .rng_seed(seed)
        .build();
    let board: Board = Arc::default();
    for id in 1..=N {
        let board = board.clone();
        sim.host(host(id), move || run_node(NodeId(id), board.clone()));
    }
    let settle = config().settle_bound(N as usize) * 4;
    let everyone_follows_5 = |board: &BTreeMap<NodeId, Seen>| {
        let first = board.values().next().and_then(|seen| seen.leader);
        board.len() == N as usize
            && first.is_some_and(|leader| leader.id == NodeId(N))
            && board.values().all(|seen| seen.leader == first)
    };
    while !everyone_follows_5(&board.lock().unwrap()) {
        assert!(
            sim.elapsed() < settle,
            "seed {seed}: the cluster did not settle on 5 within {settle:?}: {:?}",
            board.lock().unwrap()
        );
        sim.step().unwrap();
    }
    // The cut lands at a different point of the heartbeat for each seed.
    let phase = sim.elapsed() + Duration::from_millis(100 + seed * 37 % 100);
    while sim.elapsed() < phase {
        sim.step().unwrap();
    }

    for &(from, to) in &cut.cut {
        sim.partition_oneway(host(from), host(to));
    }
    let cut_at = sim.elapsed();
    let term_before = max_term(&board.lock().unwrap());
    let mut previous = effective_leader(&board.lock().unwrap(), cut);
    let mut last_change = Duration::ZERO;
    let mut changes = 0;
    while sim.elapsed() - cut_at < WINDOW {
        sim.step().unwrap();
        let leader = effective_leader(&board.lock().unwrap(), cut);
        if leader != previous || leader.is_none() {
            if leader != previous {
                changes += 1;
            }
            last_change = sim.elapsed() - cut_at;
        }
        previous = leader;
    }
    let named = board.lock().unwrap().clone();
    Outcome {
        seed,
        expected: cut
            .highest_quorum_connected()
            .expect("the scenario leaves a quorum-connected member"),
        final_leader: previous,
        stable_after: previous.map(|_| last_change),
        changes,
        term_growth: max_term(&named) - term_before,
        named,
    }
}

/// How many simulator seeds each scenario runs (`BULLY_TURMOIL_SEEDS`, default 16).
fn seeds() -> impl Iterator<Item = u64> {
    let n = std::env::var("BULLY_TURMOIL_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);
    1..=n
}

/// Runs `cut` over every seed, prints each outcome, and fails with the list of
/// seeds that missed.
fn check(cut: &Cut) {
    let outcomes: Vec<Outcome> = seeds().map(|seed| run(seed, cut)).collect();
    let mut missed = Vec::new();
    for outcome in &outcomes {
        println!("{}: {outcome}", cut.name);
        let failures = outcome.failures();
        if !failures.is_empty() {
            missed.push(format!("  {outcome}\n    {}", failures.join("; ")));
        }
    }
    let mut stable: Vec<Duration> = outcomes.iter().filter_map(|o| o.stable_after).collect();
    stable.sort();
    let growth = outcomes.iter().map(|o| o.term_growth).max().unwrap_or(0);
    println!(
        "{}: {} seeds; stable after median {:?}, worst {:?} ({} seeds never); terms grew by at most {growth}",
        cut.name,
        outcomes.len(),
        stable.get(stable.len() / 2),
        stable.last(),
        outcomes.len() - stable.len(),
    );
    assert!(
        missed.is_empty(),
        "{}: {} of {} seeds missed (within {:?} of the cut, the highest quorum-connected member leads for the rest of the {:?} window; terms +{MAX_TERM_GROWTH} at most):\n{}",
        cut.name,
        missed.len(),
        outcomes.len(),
        STABLE_WITHIN,
        WINDOW,
        missed.join("\n")
    );
}

#[test]
fn the_scenarios_expect_the_highest_quorum_connected_member() {
    // 5 reaches only 4: two of five, no quorum. 4 reaches everyone.
    assert_eq!(Cut::chained().highest_quorum_connected(), Some(4));
    for hub in [4, 3, 1] {
        assert_eq!(Cut::quorum_loss(hub).highest_quorum_connected(), Some(hub));
    }
    // A link that works one way only does not count: 5 reaches no quorum.
    assert_eq!(Cut::leader_send_only().highest_quorum_connected(), Some(4));
    assert_eq!(
        Cut::leader_receive_only().highest_quorum_connected(),
        Some(4)
    );
}

#[test]
fn chained_five_members_4_takes_over_from_5_which_reaches_only_4() {
    check(&Cut::chained());
}

#[test]
fn quorum_loss_the_highest_hub_takes_over_from_the_cut_off_leader() {
    check(&Cut::quorum_loss(4));
}

#[test]
fn quorum_loss_a_hub_in_the_middle_takes_over_over_higher_members_without_a_quorum() {
    check(&Cut::quorum_loss(3));
}

#[test]
fn quorum_loss_the_lowest_member_as_hub_takes_over() {
    check(&Cut::quorum_loss(1));
}

#[test]
fn a_leader_that_sends_but_hears_nobody_gives_way_to_4() {
    check(&Cut::leader_send_only());
}

#[test]
fn a_leader_that_hears_all_but_reaches_nobody_gives_way_to_4() {
    check(&Cut::leader_receive_only());
}
