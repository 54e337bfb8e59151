//! Failover benchmark over real UDP on loopback: five nodes, heartbeat 50 ms,
//! leader timeout 150 ms; kill the leader, time until every survivor names the new
//! one, restart it, repeat. Reports p50, p99 and max against
//! `Config::failover_bound`. With `--graceful`, the leader shuts down politely
//! (resigns) instead of being killed.
//!
//! `cargo run --release -p bully-examples --bin failover -- --trials 50`

use std::process::ExitCode;
use std::time::Duration;

use bully_core::{Config, NodeId};
use bully_examples::loopback::{Error, LoopbackCluster};
use clap::Parser;
use tokio::time::Instant;

#[derive(Parser)]
#[command(about = "Measure failover time over UDP on loopback")]
struct Cli {
    /// Number of kill-the-leader trials.
    #[arg(long, default_value_t = 50)]
    trials: u32,
    /// Number of nodes.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(2..=64))]
    nodes: u64,
    /// Shut the leader down gracefully (it resigns) instead of killing it.
    #[arg(long)]
    graceful: bool,
}

const GIVE_UP: Duration = Duration::from_secs(10);

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn run(cli: Cli) -> Result<(), Error> {
    let config = Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(150))
        .with_max_message_delay(Duration::from_millis(5))
        .with_max_processing_time(Duration::from_millis(2));
    let highest = NodeId(cli.nodes);
    let next = NodeId(cli.nodes - 1);
    let mut cluster = LoopbackCluster::start(cli.nodes, config.clone()).await?;
    let bound = cluster.failover_bound();
    let how = if cli.graceful {
        "shut down (resigns)"
    } else {
        "killed"
    };
    println!(
        "{} nodes on loopback UDP; heartbeat {} ms, leader timeout {} ms, message time T_M {} ms, processing time P_p {} ms",
        cli.nodes,
        config.heartbeat_interval().as_millis(),
        config.leader_timeout().as_millis(),
        config.max_message_delay().as_millis(),
        config.max_processing_time().as_millis(),
    );
    println!(
        "{} trials, leader {how}; failover_bound = {:.1} ms",
        cli.trials,
        ms(bound)
    );

    let mut samples = Vec::new();
    for trial in 0..cli.trials {
        cluster.wait_for_leader(highest, GIVE_UP).await?;
        // Vary where in the heartbeat interval the leader goes.
        let phase = 100 + u64::from(trial * 7 % 50);
        tokio::time::sleep(Duration::from_millis(phase)).await;

        let gone = Instant::now();
        if cli.graceful {
            cluster.shutdown(highest).await?;
        } else {
            cluster.crash(highest).await;
        }
        let agreed = cluster.wait_for_leader(next, GIVE_UP).await?;
        samples.push(agreed - gone);

        cluster.restart(highest).await?;
    }
    cluster.wait_for_leader(highest, GIVE_UP).await?;
    cluster.shutdown_all().await?;

    samples.sort();
    let over = samples.iter().filter(|&&s| s > bound).count();
    let (p50, p99, max) = (
        percentile(&samples, 50.0),
        percentile(&samples, 99.0),
        percentile(&samples, 100.0),
    );
    println!("time until every survivor names the new leader:");
    for (name, value) in [("p50", p50), ("p99", p99), ("max", max)] {
        println!(
            "  {name}: {:7.1} ms  ({:5.1}% of the bound)",
            ms(value),
            100.0 * value.as_secs_f64() / bound.as_secs_f64()
        );
    }
    println!("  trials over the bound: {over} of {}", samples.len());
    println!(
        "summary: mode={} trials={} p50_ms={:.1} p99_ms={:.1} max_ms={:.1} bound_ms={:.1}",
        if cli.graceful { "graceful" } else { "crash" },
        samples.len(),
        ms(p50),
        ms(p99),
        ms(max),
        ms(bound)
    );
    Ok(())
}
