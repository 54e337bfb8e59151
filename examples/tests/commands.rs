//! The README's commands, run as a user would: the programs exit 0 and print what
//! they promise. No timing is asserted beyond what a program promises itself (the
//! `cluster` demo fails its run when its failover is over the bound its
//! configuration computes); each program gives up by itself if nothing is agreed
//! within seconds.

use std::process::Command;

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program} failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The `cluster` demo's last line: `summary: leader=5 failover_ms=132.1 bound_ms=174.0`.
#[derive(Debug, PartialEq)]
struct Summary {
    leader: u64,
    failover_ms: f64,
    bound_ms: f64,
}

fn parse_summary(line: &str) -> Option<Summary> {
    let mut fields = line.strip_prefix("summary: ")?.split(' ');
    let mut field = |name: &str| fields.next()?.strip_prefix(name)?.strip_prefix('=');
    let leader = field("leader")?.parse().ok()?;
    let failover_ms = field("failover_ms")?.parse().ok()?;
    let bound_ms = field("bound_ms")?.parse().ok()?;
    Some(Summary {
        leader,
        failover_ms,
        bound_ms,
    })
}

#[test]
fn the_cluster_demo_fails_over_within_the_bound_and_ends_with_its_summary() {
    // `run` asserts the exit status: the demo exits 1 when the failover is late.
    let stdout = run(env!("CARGO_BIN_EXE_cluster"), &[]);
    let line = stdout.lines().last().expect("some output");
    let summary = parse_summary(line).unwrap_or_else(|| panic!("not a summary: {line}"));
    assert_eq!(summary.leader, 5, "{stdout}");
    // Config::failover_bound for the demo's settings and five members.
    assert_eq!(summary.bound_ms, 174.0, "{stdout}");
    assert!(
        summary.failover_ms <= summary.bound_ms,
        "the failover took longer than the bound: {stdout}"
    );
    assert!(
        stdout.contains("Failover: every survivor names 4"),
        "{stdout}"
    );
    assert!(stdout.contains("(within the bound)"), "{stdout}");
    assert!(
        stdout.contains("bullies its way back: every node names 5"),
        "{stdout}"
    );
}

#[test]
fn the_cluster_demo_fails_when_the_failover_is_over_its_bound() {
    // A bound of 1 ms, which no failover meets (the leader timeout alone is
    // 150 ms): the demo says so and exits 1.
    let output = Command::new(env!("CARGO_BIN_EXE_cluster"))
        .arg("--judge-bound-ms=1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("OVER the bound"), "{stdout}");
    assert!(stderr.contains("over the bound of 1.0 ms"), "{stderr}");
    let line = stdout.lines().last().expect("some output");
    let summary = parse_summary(line).unwrap_or_else(|| panic!("not a summary: {line}"));
    assert_eq!(summary.bound_ms, 1.0);
    assert!(summary.failover_ms > summary.bound_ms, "{stdout}");
}

#[test]
fn the_summary_parser_reads_the_demo_s_last_line_and_nothing_else() {
    assert_eq!(
        parse_summary("summary: leader=5 failover_ms=132.1 bound_ms=174.0"),
        Some(Summary {
            leader: 5,
            failover_ms: 132.1,
            bound_ms: 174.0
        })
    );
    assert_eq!(parse_summary("summary: leader=5 failover_ms=132.1"), None);
    assert_eq!(parse_summary("All nodes stopped."), None);
    assert_eq!(
        parse_summary("summary: leader=5 bound_ms=174.0 failover_ms=132.1"),
        None
    );
}

#[test]
fn the_leader_job_stops_on_the_old_leader_before_it_starts_on_the_new_one() {
    let stdout = run(env!("CARGO_BIN_EXE_leader_job"), &[]);
    let summary = stdout.lines().last().expect("some output");
    assert!(summary.ends_with(" overlapping=0"), "{stdout}");
    // Node 3's first job stops before node 2's starts, and 2's before 3's next.
    // (A node whose lease was renewed late stops and starts again: one run.)
    let mut events: Vec<(&str, &str)> = Vec::new();
    for line in stdout.lines() {
        let Some((_, rest)) = line.split_once("  node ") else {
            continue;
        };
        let Some((node, rest)) = rest.split_once(": job ") else {
            continue;
        };
        let what = rest.split_once(',').map_or(rest, |(what, _)| what);
        if what == "starts" && events.last() == Some(&(node, "stops")) {
            events.pop();
        } else {
            events.push((node, what));
        }
    }
    assert_eq!(
        events,
        [
            ("3", "starts"),
            ("3", "stops"),
            ("2", "starts"),
            ("2", "stops"),
            ("3", "starts"),
            ("3", "stops"),
        ],
        "{stdout}"
    );
}

#[test]
fn the_custom_transport_example_hands_over_over_tcp() {
    let stdout = run(env!("CARGO_BIN_EXE_custom_transport"), &[]);
    assert!(stdout.contains("leader: 3 (term"), "{stdout}");
    assert!(stdout.contains("new leader: 2 (term"), "{stdout}");
}

#[test]
fn the_failover_benchmark_reports_percentiles() {
    let stdout = run(env!("CARGO_BIN_EXE_failover"), &["--trials", "3"]);
    assert!(
        stdout.contains("summary: mode=crash trials=3 p50_ms="),
        "{stdout}"
    );
    let stdout = run(
        env!("CARGO_BIN_EXE_failover"),
        &["--trials", "3", "--graceful"],
    );
    assert!(
        stdout.contains("summary: mode=graceful trials=3"),
        "{stdout}"
    );
}

/// Three `node` processes, as in bully-tokio's README's three terminals; Ctrl-C (SIGINT)
/// on the leader makes it resign, and the next one takes over.
#[cfg(unix)]
#[test]
fn three_node_processes_elect_and_hand_over_on_ctrl_c() {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    // Fresh ports: bind, note, release.
    let ports: Vec<u16> = (0..3)
        .map(|_| {
            let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            socket.local_addr().unwrap().port()
        })
        .collect();
    let (lines_tx, lines) = mpsc::channel::<(u64, String)>();
    /// Kills the processes if the test fails half-way, so none outlives it.
    struct Processes(Vec<Child>);
    impl Drop for Processes {
        fn drop(&mut self) {
            for child in &mut self.0 {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
    let children: Vec<Child> = (1..=3u64)
        .map(|id| {
            let mut args = vec![
                "--id".to_owned(),
                id.to_string(),
                "--listen".to_owned(),
                format!("127.0.0.1:{}", ports[id as usize - 1]),
            ];
            for peer in (1..=3u64).filter(|&peer| peer != id) {
                args.push("--peer".to_owned());
                args.push(format!("{peer}=127.0.0.1:{}", ports[peer as usize - 1]));
            }
            let mut child = Command::new(env!("CARGO_BIN_EXE_node"))
                .args(&args)
                .env("BULLY_SECRET", "a test secret, long enough")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let tx = lines_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let _ = tx.send((id, line));
                }
            });
            child
        })
        .collect();
    // Every line seen so far, so that waiting for one node's line does not lose
    // another's.
    let seen = std::cell::RefCell::new(Vec::<(u64, String)>::new());
    let wait_for = |id: u64, text: &str| loop {
        if seen
            .borrow()
            .iter()
            .any(|(from, line)| *from == id && line.contains(text))
        {
            return;
        }
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("node {id} never printed {text:?}: {:?}", seen.borrow()));
        seen.borrow_mut().push(line);
    };
    let interrupt = |child: &Child| {
        let status = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };

    let mut children = Processes(children);
    wait_for(1, "leader: 3 (term");
    wait_for(2, "leader: 3 (term");
    // 3 announces as it boots and leads once a round trip brought no objection:
    // the others follow it a little before it leads.
    wait_for(3, "I am the leader");
    interrupt(&children.0[2]);
    wait_for(3, "resigned and stopped");
    wait_for(2, "I am the leader");
    for child in &children.0[..2] {
        interrupt(child);
    }
    for child in &mut children.0 {
        assert!(child.wait().unwrap().success());
    }
}
