//! Three nodes on std threads over real UDP (127.0.0.1, authenticated frames):
//! node 3 leads, is killed, node 2 takes over; node 3 returns and takes the lead
//! back; node 3 then leaves gracefully and node 2 takes over at once.
//!
//! ```sh
//! cargo run -p bully-examples --bin std_cluster
//! ```
//!
//! Exits 0 when every step happened as described, 1 otherwise.

use std::error::Error;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bully_core::{Config, Event, Leader, MessageKind, Node, NodeId};
use bully_std::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_std::{Events, Handle, RecvError, UdpTransport};

const MEMBERS: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];
const CLUSTER: ClusterId = ClusterId(0x0b011);
/// In production: 32 random bytes from a secret store.
const SECRET: &[u8; 32] = b"std_cluster example key 32 bytes";
/// Generous: the machine may be busy.
const WAIT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    match scenario() {
        Ok(()) => {
            println!("\nok: every step went as described");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One running member: its handle, and its transport (for the wire counters).
struct Member {
    handle: Handle,
    link: Arc<UdpTransport>,
}

struct Cluster {
    start: Instant,
    book: Vec<(NodeId, SocketAddr)>,
    /// Every node's event subscription, printed by `print_events`.
    events: Vec<(NodeId, Events)>,
}

impl Cluster {
    /// Starts member `id` on `socket`, in `incarnation` (it grows at each restart,
    /// so the others do not take the new life's frames for replays).
    fn start(
        &mut self,
        id: NodeId,
        socket: UdpSocket,
        incarnation: u64,
    ) -> Result<Member, Box<dyn Error>> {
        let auth = Auth::hmac(Key::new(KeyId(1), SECRET)?);
        let codec = Codec::new(CLUSTER, id, Incarnation(incarnation), MEMBERS, auth)?;
        let peers = self.book.iter().copied().filter(|&(peer, _)| peer != id);
        let link = Arc::new(UdpTransport::new(socket, codec, peers)?);
        let node = Node::new(id, MEMBERS, Config::default())?;
        let handle = bully_std::spawn(node, link.clone());
        self.events.push((id, handle.events()));
        Ok(Member { handle, link })
    }

    /// Waits until every one of `members` names `id` as its leader, in a term
    /// after `after` (if given).
    fn agree_on(
        &self,
        members: &[Member],
        id: NodeId,
        after: Option<Leader>,
    ) -> Result<Leader, Box<dyn Error>> {
        let mut agreed = None;
        for member in members {
            let leader = member
                .handle
                .leader_watch()
                .wait_for(WAIT, |leader| {
                    leader.is_some_and(|l| l.id == id && after.is_none_or(|a| l.term > a.term))
                })
                .map_err(|error| {
                    format!("node {} never followed {id}: {error}", member.handle.id())
                })?
                .expect("the condition holds");
            if agreed.is_some_and(|a: Leader| a != leader) {
                return Err(format!("nodes disagree: {agreed:?} and {leader:?}").into());
            }
            agreed = Some(leader);
        }
        Ok(agreed.expect("at least one member"))
    }

    /// Prints every event published so far, until the cluster is quiet for a
    /// moment (events trail the leader watch by microseconds).
    fn print_events(&mut self) {
        let mut quiet_since = Instant::now();
        while quiet_since.elapsed() < Duration::from_millis(20) {
            let mut printed = false;
            self.events.retain(|(id, events)| {
                loop {
                    let line = match events.try_recv() {
                        Ok(Some(event)) => describe(event),
                        Ok(None) => return true,
                        Err(RecvError::Lagged(n)) => format!("missed {n} events"),
                        // Stopped, and everything it said was printed.
                        Err(_) => return false,
                    };
                    printed = true;
                    let at = self.start.elapsed().as_millis();
                    println!("  {at:>6} ms  node {id}: {line}");
                }
            });
            if printed {
                quiet_since = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

fn describe(event: Event) -> String {
    match event {
        Event::ElectionStarted { term } => format!("starts an election (term {term})"),
        Event::LeaderElected { leader, term } => format!("follows {leader} (term {term})"),
        Event::LeaderLost { leader, term } => format!("has lost leader {leader} (term {term})"),
        Event::BecameLeader { term } => format!("LEADS (term {term})"),
        Event::SteppedDown { term } => format!("steps down (term {term})"),
        other => format!("{other:?}"),
    }
}

fn scenario() -> Result<(), Box<dyn Error>> {
    let sockets: Vec<UdpSocket> = MEMBERS
        .iter()
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    let book: Vec<(NodeId, SocketAddr)> = MEMBERS
        .iter()
        .zip(&sockets)
        .map(|(&id, socket)| Ok((id, socket.local_addr()?)))
        .collect::<io::Result<_>>()?;
    for (id, addr) in &book {
        println!("node {id} listens on {addr}");
    }
    let mut cluster = Cluster {
        start: Instant::now(),
        book,
        events: Vec::new(),
    };

    println!("\n1. Three nodes boot: the highest, 3, wins.");
    let mut members = Vec::new();
    for (&id, socket) in MEMBERS.iter().zip(sockets) {
        members.push(cluster.start(id, socket, 1)?);
    }
    let first = cluster.agree_on(&members, NodeId(3), None)?;
    cluster.print_events();
    println!("   -> everyone follows {first}");

    println!("\n2. Node 3 is killed (no goodbye: the others wait out the leader timeout).");
    let Member { handle, link } = members.pop().expect("three members");
    let crashed_at = Instant::now();
    handle.abort();
    // The last reference to its socket: the port is free again.
    drop(link);
    let second = cluster.agree_on(&members, NodeId(2), Some(first))?;
    let took = crashed_at.elapsed();
    cluster.print_events();
    let bound = Node::new(NodeId(1), MEMBERS, Config::default())?.failover_bound();
    println!(
        "   -> 1 and 2 follow {second} after {} ms (the configured bound is {} ms)",
        took.as_millis(),
        bound.as_millis()
    );

    println!("\n3. Node 3 restarts on the same port and bullies its way back.");
    let socket = UdpSocket::bind(cluster.book[2].1)?;
    members.push(cluster.start(NodeId(3), socket, 2)?);
    let third = cluster.agree_on(&members, NodeId(3), Some(second))?;
    cluster.print_events();
    println!("   -> everyone follows {third}");

    println!("\n4. Node 3 shuts down gracefully: it resigns, and 2 takes over at once.");
    let three = members.pop().expect("three members").handle;
    let left_at = Instant::now();
    let status = three.shutdown()?;
    let fourth = cluster.agree_on(&members, NodeId(2), Some(third))?;
    let took = left_at.elapsed();
    cluster.print_events();
    println!(
        "   -> 1 and 2 follow {fourth} after {} ms (3 sent {} Resign)",
        took.as_millis(),
        status.node.sent[MessageKind::Resign]
    );

    println!("\n5. The others shut down.");
    for member in members {
        let id = member.handle.id();
        member.handle.shutdown()?;
        let wire = member.link.wire_stats();
        println!(
            "   node {id}: {} frames accepted, {} refused",
            wire.accepted,
            wire.rejected()
        );
    }
    cluster.print_events();
    Ok(())
}
