//! A job that runs only while its node leads: three nodes with a majority quorum,
//! each running the job with `run_while_leader`. The leader is cut off from the
//! others, and its job stops before the new leader's starts; the cut heals and the
//! job moves back. Every start and stop is printed with its fencing token.
//!
//! `cargo run -p bully-examples --bin leader_job`

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::{Config, FencingToken, Node, NodeId, Quorum};
use bully_tokio::{Handle, MemNetwork, Permit};
use tokio::time::Instant;

type Error = Box<dyn std::error::Error>;

/// Each job's interval: who ran it, under which token, from when to when.
type Log = Arc<Mutex<Vec<(NodeId, FencingToken, Instant, Option<Instant>)>>>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The job: whatever only one member may do at a time. Here it "writes" every
/// 100 ms with its fencing token; `run_while_leader` drops it (printing the stop)
/// as soon as the leadership ends or its lease is about to run out.
async fn job(id: NodeId, leadership: Permit, log: Log, epoch: Instant) {
    let token = leadership.token();
    let start = Instant::now();
    println!(
        "{}  node {id}: job starts, fencing token {token}",
        at(epoch)
    );
    let index = {
        let mut log = log.lock().unwrap();
        log.push((id, token, start, None));
        log.len() - 1
    };
    let _stop = PrintStop {
        id,
        token,
        log,
        index,
        epoch,
    };
    let mut writes = tokio::time::interval(Duration::from_millis(100));
    loop {
        writes.tick().await;
        // A real job would write to storage here, passing `token` for fencing.
    }
}

/// Prints the stop when the job is dropped, which is how it is cancelled.
struct PrintStop {
    id: NodeId,
    token: FencingToken,
    log: Log,
    index: usize,
    epoch: Instant,
}

impl Drop for PrintStop {
    fn drop(&mut self) {
        println!(
            "{}  node {}: job stops, fencing token {}",
            at(self.epoch),
            self.id,
            self.token
        );
        self.log.lock().unwrap()[self.index].3 = Some(Instant::now());
    }
}

fn at(epoch: Instant) -> String {
    format!("{:>7.1} ms", epoch.elapsed().as_secs_f64() * 1e3)
}

async fn run() -> Result<(), Error> {
    let epoch = Instant::now();
    let config = Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(300))
        .with_max_message_delay(Duration::from_millis(10))
        .with_max_processing_time(Duration::from_millis(5))
        .with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let network = MemNetwork::new();
    let log: Log = Arc::default();
    let mut handles: Vec<Handle> = Vec::new();
    let mut jobs = Vec::new();
    for id in members {
        let node = Node::new(id, members, config.clone())?;
        let handle = bully_tokio::spawn(node, network.endpoint(id));
        let log = log.clone();
        jobs.push(tokio::spawn(handle.run_while_leader(move |leadership| {
            job(id, leadership, log.clone(), epoch)
        })));
        handles.push(handle);
    }
    println!(
        "Three nodes with a majority quorum; the leader's lease lasts {:.1} ms after each acknowledged heartbeat round.",
        config.leader_lease().as_secs_f64() * 1e3
    );

    let give_up = Duration::from_secs(10);
    handles[2].permit(give_up).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("{}  cutting node 3 off from 1 and 2", at(epoch));
    network.partition(&[NodeId(3)], &[NodeId(1), NodeId(2)]);
    let second = handles[1].permit(give_up).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("{}  healing the cut", at(epoch));
    network.heal();
    // 3 takes over again (preemption), in a later term than 2's.
    tokio::time::timeout(give_up, async {
        loop {
            let leadership = handles[2].permit(Duration::MAX).await?;
            if leadership.token() > second.token() {
                return Ok::<_, bully_tokio::DriverError>(());
            }
            leadership.ended().await;
        }
    })
    .await??;
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!("{}  shutting down", at(epoch));
    for handle in handles {
        handle.shutdown().await?;
    }
    for job in jobs {
        job.await?;
    }

    let log = log.lock().unwrap();
    let mut overlapping = 0;
    for (i, a) in log.iter().enumerate() {
        for b in &log[i + 1..] {
            let (a_end, b_end) = (
                a.3.ok_or("a job never stopped")?,
                b.3.ok_or("a job never stopped")?,
            );
            if a.2 < b_end && b.2 < a_end {
                overlapping += 1;
            }
        }
    }
    println!("summary: jobs={} overlapping={overlapping}", log.len());
    Ok(())
}
