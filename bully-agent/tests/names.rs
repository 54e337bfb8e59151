//! Members by host name, with real processes and the system's resolver: each
//! agent runs in a mount namespace of its own where `/etc/hosts` is a file
//! the test writes (bind-mounted; glibc reads it at every lookup), so the
//! names resolve through `getaddrinfo` exactly as in production, to addresses
//! the test chooses on the loopback network (127.0.0.0/8).
//!
//! - A name that appears late: member 3's name does not resolve when 1 and 2
//!   start; they start all the same, say so in the log and in `status`, and
//!   elect 2 between them. Once the name resolves and 3 starts, 3 leads.
//! - A name that changes address: 3's machine dies and 3 comes back at
//!   another address under the same name; the others find it and 3 leads
//!   again.
//!
//! Needs root and `unshare` (as the network namespace test does); otherwise it
//! says why and passes without running.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::cluster::{AGENT, Cluster, Options, Ports, Timing, now_millis};
use support::reconfig::write_config;

const PATIENCE: Duration = Duration::from_secs(30);

/// How often names are looked up again in this test.
const NAMES: &str = "\n[names]\nretry_ms = 200\nrefresh_ms = 1000\n";

fn host(id: u64) -> String {
    format!("bully-member-{id}.test")
}

/// Whether this process may make mount namespaces; if not, why.
fn can_unshare() -> Result<(), String> {
    match Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .output()
    {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        Err(error) => Err(format!("unshare: {error}")),
    }
}

/// Writes the hosts file in place (the agents' `/etc/hosts` is this inode).
fn write_hosts(path: &std::path::Path, entries: &[(u64, &str)]) {
    let text: String = entries
        .iter()
        .map(|(id, ip)| format!("{ip} {}\n", host(*id)))
        .collect();
    std::fs::write(path, text).expect("write the hosts file");
}

/// Starts `id`'s agent in a mount namespace whose `/etc/hosts` is `hosts`.
fn spawn(cluster: &mut Cluster, id: u64, hosts: &std::path::Path) {
    let hosts = hosts.to_str().expect("a UTF-8 path");
    cluster.spawn_wrapped(
        id,
        &[
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
            hosts,
        ],
    );
}

/// Waits until `observer`'s status has member `id` resolved to `address`.
fn wait_resolved(cluster: &Cluster, observer: u64, id: u64, address: &str) -> u64 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let resolved = cluster.status(observer).and_then(|status| {
            status
                .members
                .into_iter()
                .find(|member| member.id == id)
                .and_then(|member| member.resolved)
        });
        if resolved.as_deref() == Some(address) {
            return now_millis();
        }
        assert!(
            Instant::now() < deadline,
            "member {observer} never resolved {id} to {address} (has {resolved:?})\n{}",
            cluster.all_logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_member_whose_name_appears_late_and_then_moves_is_found_each_time() {
    if let Err(why) = can_unshare() {
        println!("skipped: members by name need a mount namespace per agent: {why}");
        return;
    }
    let mut cluster = Cluster::configure(Options {
        size: 3,
        timing: Timing::FAST,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    let ports: Vec<u16> = (0..=3)
        .map(|id| {
            if id == 0 {
                0
            } else {
                cluster.udp_address(id).port()
            }
        })
        .collect();
    let port = |id: u64| ports[id as usize];
    let members: Vec<(u64, String)> = (1..=3)
        .map(|id| (id, format!("{}:{}", host(id), port(id))))
        .collect();
    for id in 1..=3 {
        write_config(&cluster, id, &members, "", NAMES);
    }
    let hosts = cluster.dir().join("hosts");

    // 3's name does not resolve yet: 1 and 2 start anyway and elect 2.
    write_hosts(&hosts, &[(1, "127.0.0.11"), (2, "127.0.0.12")]);
    spawn(&mut cluster, 1, &hosts);
    spawn(&mut cluster, 2, &hosts);
    assert_eq!(cluster.wait_for_agreement_among(&[1, 2], PATIENCE), 2);
    let three = |status: bully_agent::status::Status| {
        status.members.into_iter().find(|member| member.id == 3)
    };
    let unresolved = three(cluster.status(1).expect("a status")).expect("3 is a member");
    assert_eq!(unresolved.resolved, None);
    assert!(
        cluster.node_log(1).contains("does not resolve"),
        "{}",
        cluster.node_log(1)
    );
    let shown = Command::new(AGENT)
        .args(["status", "--endpoint"])
        .arg(cluster.http_address(1).to_string())
        .output()
        .expect("bully-agent status");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(&format!("{}:{} does not resolve", host(3), port(3))),
        "{shown}"
    );

    // The name appears and 3 starts: the others find it, and 3 leads.
    write_hosts(
        &hosts,
        &[(1, "127.0.0.11"), (2, "127.0.0.12"), (3, "127.0.0.13")],
    );
    let appeared = now_millis();
    let at = format!("127.0.0.13:{}", port(3));
    let found = wait_resolved(&cluster, 1, 3, &at).max(wait_resolved(&cluster, 2, 3, &at));
    spawn(&mut cluster, 3, &hosts);
    let before = cluster.child_log().newest_token();
    let start = cluster.wait_for_start_above(before, PATIENCE);
    assert_eq!(start.token.leader.0, 3, "{}", cluster.all_logs());
    assert_eq!(cluster.wait_for_agreement(PATIENCE), 3);
    println!(
        "late name: 1 and 2 resolved it {} ms after it appeared (names.retry_ms = 200)",
        found - appeared
    );

    // 3's machine dies; it comes back at another address under its name.
    cluster.crash(3);
    write_hosts(
        &hosts,
        &[(1, "127.0.0.11"), (2, "127.0.0.12"), (3, "127.0.0.33")],
    );
    let moved = now_millis();
    spawn(&mut cluster, 3, &hosts);
    let at = format!("127.0.0.33:{}", port(3));
    let found = wait_resolved(&cluster, 1, 3, &at).max(wait_resolved(&cluster, 2, 3, &at));
    let start = cluster.wait_for_start_above(Some(start.token), PATIENCE);
    // 2 may lead for a while in between; 3, the highest, ends up leading.
    let leader = cluster.wait_for_agreement(PATIENCE);
    assert_eq!(leader, 3, "{}", cluster.all_logs());
    println!(
        "moved: 1 and 2 sent to 3's new address {} ms after it moved (names.refresh_ms = \
         1000; the leader's loss triggers a lookup at once); the first job after it started \
         {} ms after the move, under member {}",
        found - moved,
        start.millis - moved,
        start.token.leader.0
    );
    let log = cluster.child_log();
    assert!(log.overlaps().is_empty(), "{:?}", log.overlaps());
}
