//! One real node per process, over authenticated UDP, printing leader changes.
//! Ctrl-C shuts it down gracefully (a leader resigns, so the others elect at
//! once). Three terminals:
//!
//! ```text
//! cargo run -p bully-examples --bin node -- --id 1 --listen 127.0.0.1:7001 --peer 2=127.0.0.1:7002 --peer 3=127.0.0.1:7003
//! cargo run -p bully-examples --bin node -- --id 2 --listen 127.0.0.1:7002 --peer 1=127.0.0.1:7001 --peer 3=127.0.0.1:7003
//! cargo run -p bully-examples --bin node -- --id 3 --listen 127.0.0.1:7003 --peer 1=127.0.0.1:7001 --peer 2=127.0.0.1:7002
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId, MIN_KEY_LEN};
use bully_core::{Config, Event, Node, NodeId};
use bully_tokio::UdpTransport;
use clap::Parser;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

/// The secret used when none is given: fine on your laptop, nowhere else.
const DEMO_SECRET: &str = "bully demo secret: replace me in production";

#[derive(Parser)]
#[command(about = "One Bully node over authenticated UDP; Ctrl-C to leave gracefully")]
struct Cli {
    /// This node's id (a higher id is a stronger candidate).
    #[arg(long)]
    id: u64,
    /// The address to listen on.
    #[arg(long)]
    listen: SocketAddr,
    /// Another member, as ID=ADDRESS; repeat for each.
    #[arg(long = "peer", value_parser = parse_peer, required = true)]
    peers: Vec<(NodeId, SocketAddr)>,
    /// Cluster id: frames of other clusters are refused.
    #[arg(long, default_value_t = 1)]
    cluster: u64,
    /// Heartbeat interval in milliseconds.
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
    /// Leader timeout in milliseconds.
    #[arg(long, default_value_t = 500)]
    leader_timeout_ms: u64,
    /// Print the driver's debug events as well.
    #[arg(long, short)]
    verbose: bool,
}

fn parse_peer(text: &str) -> Result<(NodeId, SocketAddr), String> {
    let (id, addr) = text
        .split_once('=')
        .ok_or_else(|| format!("expected ID=ADDRESS, got {text:?}"))?;
    let id = id
        .parse::<u64>()
        .map_err(|e| format!("bad id {id:?}: {e}"))?;
    let addr = addr
        .parse::<SocketAddr>()
        .map_err(|e| format!("bad address {addr:?}: {e}"))?;
    Ok((NodeId(id), addr))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    bully_examples::init_tracing(cli.verbose);
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let id = NodeId(cli.id);
    let mut members: Vec<NodeId> = cli.peers.iter().map(|&(peer, _)| peer).collect();
    members.push(id);
    members.sort();
    let config = Config::default()
        .with_heartbeat_interval(Duration::from_millis(cli.heartbeat_ms))
        .with_leader_timeout(Duration::from_millis(cli.leader_timeout_ms));
    let node = Node::new(id, members.iter().copied(), config)?;

    // The secret comes from the environment only: on the command line `ps` would
    // show it to every user.
    let secret = match std::env::var("BULLY_SECRET").ok() {
        Some(secret) if secret.len() >= MIN_KEY_LEN => secret,
        Some(_) => return Err(format!("the secret must be at least {MIN_KEY_LEN} bytes").into()),
        None => {
            eprintln!("warning: BULLY_SECRET is not set; using the public demo secret");
            DEMO_SECRET.to_owned()
        }
    };
    let auth = Auth::hmac(Key::new(KeyId(1), secret.as_bytes())?);
    // A restarted process must use a higher incarnation than before, or its peers
    // take its frames for replays: the wall clock gives one.
    let incarnation =
        Incarnation::from_duration_since_epoch(SystemTime::now().duration_since(UNIX_EPOCH)?);
    let codec = Codec::new(
        ClusterId(cli.cluster),
        id,
        incarnation,
        members.iter().copied(),
        auth,
    )?;
    let transport = UdpTransport::bind(cli.listen, codec, cli.peers.iter().copied()).await?;
    println!(
        "node {id}: listening on {}, members {}",
        transport.local_addr()?,
        members
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );

    let handle = bully_tokio::spawn(node, transport);
    let mut events = handle.events();
    let started = Instant::now();
    let stamp = || format!("[{:8.3}s]", started.elapsed().as_secs_f64());
    // One Ctrl-C listener for the whole run: one created per iteration would miss a
    // signal that arrives between two of them.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = &mut ctrl_c => break,
            event = events.recv() => match event {
                Ok(Event::LeaderElected { leader, term }) if leader == id => {
                    println!("{} I am the leader (term {term})", stamp());
                }
                Ok(Event::LeaderElected { leader, term }) => {
                    println!("{} leader: {leader} (term {term})", stamp());
                }
                Ok(Event::LeaderLost { leader, .. }) => {
                    println!("{} lost leader {leader}; electing", stamp());
                }
                Ok(Event::SteppedDown { term }) => {
                    println!("{} stepped down (term {term})", stamp());
                }
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => println!("{} ({missed} events missed)", stamp()),
                Err(RecvError::Closed) => return Err("the node stopped".into()),
            },
        }
    }
    let was_leader = handle.leader().is_some_and(|leader| leader.id == id);
    let stats = handle.shutdown().await?;
    if was_leader {
        println!("{} resigned and stopped: the others elect at once", stamp());
    } else {
        println!("{} stopped", stamp());
    }
    println!(
        "sent {}; received {}; datagrams refused {}",
        stats.node.sent, stats.node.received, stats.transport_dropped
    );
    Ok(())
}
