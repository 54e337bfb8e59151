//! Five real nodes over UDP on loopback, in one process: they elect the highest,
//! the leader is killed, the others fail over (measured against the bound the
//! configuration implies), the leader comes back and takes over again. Exits 1
//! if the failover took longer than the bound.
//!
//! `cargo run -p bully-examples --bin cluster`

use std::process::ExitCode;
use std::time::Duration;

use bully_core::wire::{Auth, Codec, Key, KeyId};
use bully_core::{Config, Node, NodeId};
use bully_examples::loopback::{Error, LoopbackCluster, NodeSetup};
use bully_tokio::{Handle, UdpTransport};
use clap::Parser;
use tokio::time::Instant;

#[derive(Parser)]
#[command(about = "A five-node Bully cluster over authenticated UDP on 127.0.0.1")]
struct Cli {
    /// Number of nodes.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(2..=64))]
    nodes: u64,
    /// Print the driver's debug events (elections, leader changes) as well.
    #[arg(long, short)]
    verbose: bool,
    /// Judge the failover against this bound, in milliseconds, instead of the
    /// configuration's: for the test that shows a late failover fails the run.
    #[arg(long, hide = true)]
    judge_bound_ms: Option<u64>,
}

/// If nothing is agreed within this long, something is wrong: give up.
const GIVE_UP: Duration = Duration::from_secs(10);

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    bully_examples::init_tracing(cli.verbose);
    let judge = cli.judge_bound_ms.map(Duration::from_millis);
    match run(cli.nodes, judge).await {
        Ok(Failover { took, bound }) if took <= bound => ExitCode::SUCCESS,
        Ok(Failover { took, bound }) => {
            eprintln!(
                "error: the failover took {}, over the bound of {}: the configuration's \
                 promise was not kept (on a loaded machine, timers fire late)",
                ms(took),
                ms(bound)
            );
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// How one node is set up over authenticated UDP: the lines to copy into a
/// service. (The loopback cluster calls it for each node, and again at each
/// restart with a new incarnation.)
fn start_node(setup: NodeSetup<'_>) -> Result<Handle, Error> {
    // The same 32-byte secret on every member (here random per run; in a service,
    // from a secret store). Frames are authenticated with HMAC-SHA256.
    let auth = Auth::hmac(Key::new(KeyId(1), setup.secret)?);
    // The codec frames, authenticates and numbers this node's messages, and
    // refuses anything forged, replayed or from another cluster.
    let codec = Codec::new(
        setup.cluster,
        setup.id,
        setup.incarnation,
        setup.members.iter().copied(),
        auth,
    )?;
    // One datagram per message, sent to each member's address.
    let peers = setup.peers.iter().map(|(&id, &addr)| (id, addr));
    let transport = UdpTransport::new(setup.socket, codec, peers);
    // The state machine, and the task that drives it over the transport.
    let node = Node::new(
        setup.id,
        setup.members.iter().copied(),
        setup.config.clone(),
    )?;
    Ok(bully_tokio::spawn(node, transport))
}

/// How long the failover took, and the bound it was judged against.
struct Failover {
    took: Duration,
    bound: Duration,
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

async fn run(n: u64, judge: Option<Duration>) -> Result<Failover, Error> {
    let config = Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(150))
        .with_max_message_delay(Duration::from_millis(5))
        .with_max_processing_time(Duration::from_millis(2));
    let highest = NodeId(n);
    let next = NodeId(n - 1);

    let started = Instant::now();
    let mut cluster = LoopbackCluster::start_with(n, config.clone(), start_node).await?;
    let bound = judge.unwrap_or_else(|| cluster.failover_bound());
    println!("Starting {n} nodes on 127.0.0.1 (UDP, HMAC-SHA256 with a freshly generated key):");
    for (id, addr) in cluster.addrs() {
        println!("  node {id} on {addr}");
    }
    println!(
        "Heartbeat every {}, leader suspected after {} of silence; messages within {}.",
        ms(config.heartbeat_interval()),
        ms(config.leader_timeout()),
        ms(config.max_message_delay()),
    );
    match judge {
        None => println!(
            "Failover bound (Config::failover_bound for {n} members): {}.\n",
            ms(bound)
        ),
        Some(_) => println!(
            "Failover bound (given with --judge-bound-ms, not the configuration's): {}.\n",
            ms(bound)
        ),
    }

    let elected = cluster.wait_for_leader(highest, GIVE_UP).await?;
    let leader = cluster.agreed_leader().ok_or("no agreed leader")?;
    println!(
        "1. Elected: every node names {} after {}.   [{}]",
        leader,
        ms(elected - started),
        cluster.describe()
    );

    // Give the heartbeats a moment, so the crash falls mid-interval.
    tokio::time::sleep(Duration::from_millis(120)).await;
    println!("\n2. Killing leader {highest} (no goodbye: to the others it is a crash).");
    let killed = Instant::now();
    cluster.crash(highest).await;
    let failed_over = cluster.wait_for_leader(next, GIVE_UP).await?;
    let failover = failed_over - killed;
    let leader = cluster.agreed_leader().ok_or("no agreed leader")?;
    let verdict = if failover <= bound {
        "within the bound"
    } else {
        "OVER the bound: the run will fail"
    };
    println!(
        "   Failover: every survivor names {} after {}; bound {} ({verdict}).   [{}]",
        leader,
        ms(failover),
        ms(bound),
        cluster.describe()
    );

    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("\n3. Restarting node {highest} on its old port, in a new incarnation.");
    let restarted = Instant::now();
    cluster.restart(highest).await?;
    let retaken = cluster.wait_for_leader(highest, GIVE_UP).await?;
    let leader = cluster.agreed_leader().ok_or("no agreed leader")?;
    println!(
        "   It bullies its way back: every node names {} after {}.   [{}]",
        leader,
        ms(retaken - restarted),
        cluster.describe()
    );

    let mut refused = 0;
    for id in cluster.running() {
        if let Some(handle) = cluster.handle(id) {
            refused += handle.stats().await?.transport_dropped;
        }
    }
    println!("\n4. Shutting {highest} down gracefully: it resigns, so nobody waits for a timeout.");
    let resigned = Instant::now();
    cluster.shutdown(highest).await?;
    let handed_over = cluster.wait_for_leader(next, GIVE_UP).await?;
    println!(
        "   Every remaining node names {next} after {} (the crash took {}).   [{}]",
        ms(handed_over - resigned),
        ms(failover),
        cluster.describe()
    );
    cluster.shutdown_all().await?;
    println!("   All nodes stopped. Datagrams refused by the transports: {refused}.\n");

    println!(
        "summary: leader={} failover_ms={:.1} bound_ms={:.1}",
        leader.id,
        failover.as_secs_f64() * 1e3,
        bound.as_secs_f64() * 1e3
    );
    Ok(Failover {
        took: failover,
        bound,
    })
}
