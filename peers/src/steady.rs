//! Steady-state cost: one heartbeat at a follower (the message handled and its
//! reply drained) and one leader round (the leader's heartbeat round sent and every
//! reply it gets handled), in nanoseconds (median of batches) and instructions
//! (callgrind inside [`probe_loop`] only).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bully_core::Message as BullyMessage;
use omnipaxos::messages::Message as OmniMessage;
use omnipaxos::messages::ballot_leader_election::{BLEMessage, HeartbeatMsg, HeartbeatRequest};
use raft::eraftpb::MessageType;
use raft::prelude::Message as RaftMessage;

use crate::bully::BullyPeer;
use crate::callgrind::callgrind;
use crate::matching::{bully_config, with_system};
use crate::members::Visit;
use crate::omni::{NoEntry, OmniPeer};
use crate::peer::{Outbox, Peer};
use crate::raft_peer::{RaftPeer, drain_ready};
use crate::report::{Table, median, ratio, thousands};
use crate::scenario::{PATIENCE, cluster};
use crate::sim::Sim;
use crate::system::{Library, System, system_arg};

/// What a probe measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Probe {
    /// One heartbeat handled by a follower, its reply (if any) drained.
    Follower,
    /// One heartbeat round of the leader, with every follower's reply handled.
    Leader,
}

/// A steady-state cluster: booted, agreed, then `settle` more of simulated time.
pub fn steady<P: Peer>(
    build: &dyn Fn(u64, u64, u64) -> P,
    n: u64,
    settle: Duration,
) -> (Sim<P>, u64) {
    let mut sim = cluster(build, n, 1);
    sim.start_all();
    sim.run_until_agreed(PATIENCE).expect("the cluster agrees");
    let until = sim.now() + settle;
    sim.run_until(until);
    let leader = sim.agreed_leader().expect("still agreed after settling");
    (sim, leader)
}

/// A probe's iterations, prepared outside the measured loop.
// Built once per probe, outside the measured loop; boxing the bully variant (a
// whole `Node`, larger since the start's announcement) would only add an
// indirection inside it.
#[allow(clippy::large_enum_variant)]
pub enum Prepared {
    /// bully-core.
    Bully(BullyPrepared),
    /// raft-rs.
    Raft(RaftPrepared),
    /// omnipaxos.
    Omni(OmniPrepared),
}

/// bully-core's probe.
pub struct BullyPrepared {
    peer: BullyPeer,
    probe: Probe,
    leader: u64,
    acks: bool,
    n: u64,
    /// The round of the next heartbeat the follower probe hears: each a new
    /// round, as in the steady state (a repeated round is a duplicate, which
    /// the loss-adaptive detector handles on its slower path). It starts far
    /// past the rounds the cluster ran, so the first one reads as a silence and
    /// the rest follow in order.
    next_round: u64,
}

/// raft-rs's probe.
pub struct RaftPrepared {
    peer: RaftPeer,
    probe: Probe,
    heartbeat: RaftMessage,
    responses: Vec<RaftMessage>,
    heartbeat_tick: usize,
}

/// omnipaxos's probe.
pub struct OmniPrepared {
    peer: OmniPeer,
    probe: Probe,
    leader: u64,
    replies: Vec<OmniMessage<NoEntry>>,
    ticks: u64,
    n: u64,
}

/// Sets up `probe` on `system` at `n` members.
pub fn prepare(system: System, n: u64, probe: Probe) -> Prepared {
    let settle = Duration::from_millis(if n >= 1000 { 300 } else { 1000 });
    match system.library() {
        Library::Bully => {
            let (sim, leader) = with_system_sim::<BullyPeer>(system, n, settle);
            let id = if probe == Probe::Leader {
                leader
            } else {
                follower_of(n, leader)
            };
            let mut peers = sim.into_peers();
            let peer = peers.swap_remove(id as usize - 1);
            Prepared::Bully(BullyPrepared {
                peer,
                probe,
                leader,
                acks: bully_config(system, n).quorum() != bully_core::Quorum::None,
                n,
                next_round: 1 << 32,
            })
        }
        Library::Raft => {
            let (sim, leader) = with_system_sim::<RaftPeer>(system, n, settle);
            let settings = system.raft_settings();
            let mut peers = sim.into_peers();
            // A real heartbeat of the leader to a follower, and each follower's response.
            let follower = follower_of(n, leader);
            let mut out: Outbox<RaftMessage> = Vec::new();
            let lead = &mut peers[leader as usize - 1];
            lead.raw_mut().ping();
            drain_ready(lead.raw_mut(), &mut out);
            let heartbeat = out
                .iter()
                .find(|(to, m)| *to == follower && m.get_msg_type() == MessageType::MsgHeartbeat)
                .expect("ping sends heartbeats")
                .1
                .clone();
            let mut responses = Vec::new();
            for (to, m) in std::mem::take(&mut out) {
                let f = peers[to as usize - 1].raw_mut();
                let _ = f.step(m);
                let mut replies = Vec::new();
                drain_ready(f, &mut replies);
                responses.extend(replies.into_iter().map(|(_, r)| r));
            }
            let id = if probe == Probe::Leader {
                leader
            } else {
                follower
            };
            let peer = peers.swap_remove(id as usize - 1);
            Prepared::Raft(RaftPrepared {
                peer,
                probe,
                heartbeat,
                responses,
                heartbeat_tick: settings.heartbeat_tick,
            })
        }
        Library::Omni => {
            let (sim, leader) = with_system_sim::<OmniPeer>(system, n, settle);
            let ticks = system.omni_settings().election_tick_timeout;
            let mut peers = sim.into_peers();
            // Each follower's real reply to a leader's request (the round is rewritten
            // to the leader's current one in the loop).
            let mut replies = Vec::new();
            for f in (1..=n).filter(|&f| f != leader) {
                let p = &mut peers[f as usize - 1];
                let mut out = Vec::new();
                p.server_mut().handle_incoming(request(leader, f, 0));
                p.drain(&mut out);
                replies.extend(
                    out.into_iter()
                        .filter(|(to, m)| *to == leader && matches!(m, OmniMessage::BLE(_)))
                        .map(|(_, m)| m),
                );
            }
            let id = if probe == Probe::Leader {
                leader
            } else {
                follower_of(n, leader)
            };
            let peer = peers.swap_remove(id as usize - 1);
            Prepared::Omni(OmniPrepared {
                peer,
                probe,
                leader,
                replies,
                ticks,
                n,
            })
        }
    }
}

fn follower_of(n: u64, leader: u64) -> u64 {
    if leader == 1 { n } else { 1 }
}

fn request(from: u64, to: u64, round: u32) -> OmniMessage<NoEntry> {
    OmniMessage::BLE(BLEMessage {
        from,
        to,
        msg: HeartbeatMsg::Request(HeartbeatRequest { round }),
    })
}

/// Runs `iterations` of the probe. Never inlined, so callgrind can count inside it
/// alone; the messages it feeds are cloned from prepared ones (a clone of a
/// heartbeat-sized message allocates nothing in any of the three libraries).
#[inline(never)]
pub fn probe_loop(p: &mut Prepared, iterations: u64) -> u64 {
    let mut sent = 0u64;
    match p {
        Prepared::Bully(b) => {
            let base = b.peer.base();
            let mut now = b.peer.node().poll_timeout().unwrap_or(base);
            let term = b.peer.node().term();
            for _ in 0..iterations {
                match b.probe {
                    Probe::Follower => {
                        now += Duration::from_micros(1);
                        let node = b.peer.node_mut();
                        let round = b.next_round;
                        b.next_round += 1;
                        node.handle_message(
                            now,
                            bully_core::NodeId(b.leader),
                            BullyMessage::Heartbeat { term, round },
                        );
                        while let Some(t) = node.poll_transmit() {
                            sent += 1;
                            black_box(t);
                        }
                    }
                    Probe::Leader => {
                        let node = b.peer.node_mut();
                        now = node.poll_timeout().expect("a leader's heartbeat timer");
                        node.handle_timeout(now);
                        let mut round = 0;
                        while let Some(t) = node.poll_transmit() {
                            if let BullyMessage::Heartbeat { round: r, .. } = t.message {
                                round = r;
                            }
                            sent += 1;
                            black_box(t);
                        }
                        if b.acks {
                            for f in (1..=b.n).filter(|&f| f != b.leader) {
                                node.handle_message(
                                    now,
                                    bully_core::NodeId(f),
                                    BullyMessage::Ack { term, round },
                                );
                                while let Some(t) = node.poll_transmit() {
                                    sent += 1;
                                    black_box(t);
                                }
                            }
                        }
                        while node.poll_event().is_some() {}
                    }
                }
            }
        }
        Prepared::Raft(r) => {
            let mut out = Vec::new();
            for _ in 0..iterations {
                let raw = r.peer.raw_mut();
                match r.probe {
                    Probe::Follower => {
                        let _ = raw.step(r.heartbeat.clone());
                        drain_ready(raw, &mut out);
                    }
                    Probe::Leader => {
                        for _ in 0..r.heartbeat_tick {
                            raw.tick();
                        }
                        drain_ready(raw, &mut out);
                        for m in &r.responses {
                            let _ = raw.step(m.clone());
                        }
                        drain_ready(raw, &mut out);
                    }
                }
                sent += out.len() as u64;
                black_box(&out);
                out.clear();
            }
        }
        Prepared::Omni(o) => {
            let mut out = Vec::new();
            for _ in 0..iterations {
                match o.probe {
                    Probe::Follower => {
                        let me = o.peer.id();
                        o.peer
                            .server_mut()
                            .handle_incoming(request(o.leader, me, 1));
                        o.peer.drain(&mut out);
                    }
                    Probe::Leader => {
                        // BLE is symmetric: a round at any member is its own requests
                        // out, every peer's request answered, every reply handled.
                        for _ in 0..o.ticks {
                            o.peer.server_mut().tick();
                        }
                        o.peer.drain(&mut out);
                        let round = out
                            .iter()
                            .find_map(|(_, m)| match m {
                                OmniMessage::BLE(BLEMessage {
                                    msg: HeartbeatMsg::Request(r),
                                    ..
                                }) => Some(r.round),
                                _ => None,
                            })
                            .unwrap_or(0);
                        let me = o.peer.id();
                        for f in (1..=o.n).filter(|&f| f != me) {
                            o.peer.server_mut().handle_incoming(request(f, me, round));
                        }
                        for m in &o.replies {
                            let mut m = m.clone();
                            if let OmniMessage::BLE(BLEMessage {
                                msg: HeartbeatMsg::Reply(r),
                                ..
                            }) = &mut m
                            {
                                r.round = round;
                            }
                            o.peer.server_mut().handle_incoming(m);
                        }
                        o.peer.drain(&mut out);
                    }
                }
                sent += out.len() as u64;
                black_box(&out);
                out.clear();
            }
        }
    }
    sent
}

/// Nanoseconds per iteration: the median of `batches` batches.
pub fn time_probe(p: &mut Prepared, iterations: u64, batches: usize) -> f64 {
    let mut per: Vec<f64> = Vec::new();
    probe_loop(p, iterations.div_ceil(10));
    for _ in 0..batches {
        let start = Instant::now();
        black_box(probe_loop(p, iterations));
        per.push(start.elapsed().as_secs_f64() * 1e9 / iterations as f64);
    }
    median(&per).expect("at least one batch")
}

/// Iterations per batch: fewer for bigger rounds.
pub fn iterations(n: u64, probe: Probe) -> u64 {
    match probe {
        Probe::Follower => 20_000,
        Probe::Leader => (200_000 / n).max(20),
    }
}

/// The steady-state table.
pub fn table(sizes: &[u64], systems: &[System], callgrind_max: u64) -> String {
    let mut t = Table::new(&[
        "N",
        "system",
        "follower heartbeat: ns",
        "instructions",
        "vs bully",
        "leader round: ns",
        "instructions",
        "vs bully",
        "messages sent per leader round",
    ]);
    for &n in sizes {
        let mut reference: [Option<f64>; 2] = [None, None];
        for &system in systems {
            let mut cells = vec![thousands(n), system.label().to_string()];
            for (k, probe) in [Probe::Follower, Probe::Leader].into_iter().enumerate() {
                let mut p = prepare(system, n, probe);
                let iters = iterations(n, probe);
                let ns = time_probe(&mut p, iters, 7);
                let sent = probe_loop(&mut p, 1);
                let instr = (n <= callgrind_max)
                    .then(|| {
                        callgrind(
                            "*probe_loop*",
                            &[
                                "probe".into(),
                                "--system".into(),
                                system_arg(system),
                                "--nodes".into(),
                                n.to_string(),
                                "--what".into(),
                                if probe == Probe::Leader {
                                    "leader".into()
                                } else {
                                    "follower".into()
                                },
                                "--iterations".into(),
                                iters.min(2000).to_string(),
                            ],
                        )
                        .map(|(all, _)| all as f64 / iters.min(2000) as f64)
                    })
                    .flatten();
                if system == System::Bully {
                    reference[k] = instr;
                }
                cells.push(format!("{ns:.0}"));
                cells.push(instr.map_or("–".into(), |i| thousands(i.round() as u64)));
                cells.push(instr.map_or("–".into(), |i| ratio(i, reference[k])));
                if probe == Probe::Leader {
                    cells.push(thousands(sent));
                }
            }
            t.row(cells);
        }
    }
    t.markdown()
}

/// A steady-state cluster of `system` with members of type `P` (which must be
/// `system`'s), and its leader.
pub fn with_system_sim<P: Peer + 'static>(
    system: System,
    n: u64,
    settle: std::time::Duration,
) -> (crate::sim::Sim<P>, u64) {
    struct Steady<P> {
        n: u64,
        settle: std::time::Duration,
        _p: std::marker::PhantomData<P>,
    }
    impl<Q: Peer + 'static> Visit for Steady<Q> {
        type Out = (crate::sim::Sim<Q>, u64);
        fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
            let (sim, leader) = steady(build, self.n, self.settle);
            let boxed: Box<dyn std::any::Any> = Box::new(sim);
            let sim = *boxed
                .downcast::<crate::sim::Sim<Q>>()
                .expect("the member type matches the system's library");
            (sim, leader)
        }
    }
    with_system(
        system,
        Steady::<P> {
            n,
            settle,
            _p: std::marker::PhantomData,
        },
    )
}
