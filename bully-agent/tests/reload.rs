//! Reload with real processes: a cluster grows from three members to five and
//! shrinks back while its first three agents keep running (each new highest
//! member takes the job over through the hand-over), keys rotate under
//! traffic with no frame refused, and a file that cannot be applied changes
//! nothing.
//!
//! Bounds are "give up" guards derived from the configuration, never timings
//! asserted; the times printed (`--nocapture`) are what the README reports.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use support::cluster::{Cluster, Options, Ports, Timing, now_millis, write_secret};
use support::reconfig::{
    at_addresses, metric, reload_command, sighup, wait_for_reloads, write_config,
};

const PATIENCE: Duration = Duration::from_secs(30);

fn options(size: u64) -> Options {
    Options {
        size,
        timing: Timing::FAST,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    }
}

/// The pid of each running agent among `ids`.
fn pids(cluster: &Cluster, ids: &[u64]) -> BTreeMap<u64, u32> {
    ids.iter().map(|&id| (id, cluster.pid(id))).collect()
}

/// Every member in `reload` gets a file listing `members` and applies it (the
/// first through `bully-agent reload`, the others through SIGHUP); `applied`
/// counts each member's reloads so far.
fn reload_all(
    cluster: &Cluster,
    reload: &[u64],
    members: &[u64],
    applied: &mut BTreeMap<u64, u64>,
    tail: &str,
) {
    let listed = at_addresses(cluster, members);
    for (index, &id) in reload.iter().enumerate() {
        write_config(cluster, id, &listed, "", tail);
        if index == 0 {
            let output = reload_command(cluster, id);
            assert!(
                output.status.success(),
                "bully-agent reload of member {id}: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        } else {
            sighup(cluster, id);
        }
        let count = applied.entry(id).or_default();
        *count += 1;
        wait_for_reloads(cluster, id, *count, PATIENCE);
    }
}

/// Waits until the members `ids` agree that `expected` leads and runs the job.
fn expect_leader(cluster: &Cluster, ids: &[u64], expected: u64) {
    let leader = cluster.wait_for_agreement_among(ids, PATIENCE);
    assert_eq!(
        leader,
        expected,
        "members {ids:?} follow {leader}\n{}",
        cluster.all_logs()
    );
    let members = cluster.status(ids[0]).expect("a status").members.len() + 1;
    assert_eq!(
        members,
        ids.len(),
        "member {} counts {members} members",
        ids[0]
    );
}

#[test]
fn three_members_grow_to_five_and_shrink_back_without_a_restart() {
    let mut cluster = Cluster::configure(options(5));
    for id in 1..=3 {
        write_config(&cluster, id, &at_addresses(&cluster, &[1, 2, 3]), "", "");
        cluster.spawn(id);
    }
    expect_leader(&cluster, &[1, 2, 3], 3);
    let first = pids(&cluster, &[1, 2, 3]);
    let mut applied = BTreeMap::new();
    let timing = cluster.timing();

    // Member 4 starts knowing four members; the three learn of it by reload,
    // and 4, the highest, takes the job over.
    let mut token = Some(cluster.wait_for_start_above(None, PATIENCE).token);
    for new in [4, 5] {
        let members: Vec<u64> = (1..=new).collect();
        write_config(&cluster, new, &at_addresses(&cluster, &members), "", "");
        cluster.spawn(new);
        let others = &members[..members.len() - 1];
        reload_all(&cluster, others, &members, &mut applied, "");
        let reloaded = now_millis();
        let start = cluster.wait_for_start_above(token, PATIENCE);
        assert_eq!(start.token.leader.0, new, "{}", cluster.all_logs());
        token = Some(start.token);
        expect_leader(&cluster, &members, new);
        println!(
            "grow to {new}: member {new}'s job started {} ms after the last member reloaded \
             (the failover bound with {new} members is {} ms)",
            i128::from(start.millis) - i128::from(reloaded),
            timing.failover_bound(new as usize).as_millis()
        );
    }

    // Shrinking: the highest leaves (SIGTERM: it stops its job and resigns),
    // then the others forget it by reload.
    for (leaving, remaining) in [(5, vec![1, 2, 3, 4]), (4, vec![1, 2, 3])] {
        let stopped = now_millis();
        assert!(cluster.terminate(leaving, PATIENCE).success());
        let start = cluster.wait_for_start_above(token, PATIENCE);
        assert_eq!(start.token.leader.0, leaving - 1, "{}", cluster.all_logs());
        token = Some(start.token);
        reload_all(&cluster, &remaining, &remaining, &mut applied, "");
        expect_leader(&cluster, &remaining, leaving - 1);
        println!(
            "shrink to {}: member {}'s job started {} ms after {leaving} was told to leave",
            remaining.len(),
            leaving - 1,
            start.millis - stopped
        );
    }

    // The first three never restarted; the job ran under 3, 4, 5, 4, 3 in
    // that order, never two at once.
    assert_eq!(pids(&cluster, &[1, 2, 3]), first, "an agent restarted");
    let log = cluster.child_log();
    let leaders: Vec<u64> = log.tokens().iter().map(|token| token.leader.0).collect();
    assert_eq!(leaders, [3, 4, 5, 4, 3], "{}", log.describe());
    assert!(
        log.overlaps().is_empty(),
        "jobs overlapped: {:?}",
        log.overlaps()
    );
    assert!(log.token_regressions().is_empty());
    let from = log.lines()[0].millis;
    let until = log
        .first_start_since(from)
        .map_or(from, |_| log.lines().last().expect("lines").millis);
    println!(
        "longest time without a job from the first start to the end: {} ms",
        log.longest_gap(from, until)
    );
}

/// The `[[keys]]` tables for `ids` (the first signs): key 1 is the cluster's
/// secret file, key 2 a new one.
fn keys(ids: &[u32]) -> String {
    ids.iter()
        .map(|id| {
            let file = if *id == 1 {
                "secret".to_owned()
            } else {
                format!("secret-{id}")
            };
            format!("\n[[keys]]\nid = {id}\nsecret_file = \"{file}\"\n")
        })
        .collect()
}

/// Frames `id` refused because their key or tag did not check out.
fn refused_for_authentication(cluster: &Cluster, id: u64) -> f64 {
    let text = cluster.metrics(id);
    ["unknown_key", "bad_tag"]
        .iter()
        .map(|reason| {
            metric(
                &text,
                "bully_frames_refused_total",
                &format!("reason=\"{reason}\""),
            )
            .unwrap_or(0.0)
        })
        .sum()
}

#[test]
fn keys_rotate_under_traffic_with_two_reloads_and_no_frame_refused() {
    let cluster = Cluster::start(options(3));
    write_secret(
        &cluster.dir().join("secret-2"),
        "the new cluster key, 32 bytes!!!",
    );
    write_secret(
        &cluster.dir().join("secret-3"),
        "a key only member 1 will have!!!",
    );
    expect_leader(&cluster, &[1, 2, 3], 3);
    let all = [1, 2, 3];
    let first_token = Some(cluster.wait_for_start_above(None, PATIENCE).token);
    let mut applied = BTreeMap::new();
    let accepted_before: Vec<f64> = all
        .iter()
        .map(|&id| metric(&cluster.metrics(id), "bully_messages_received_total", "").unwrap_or(0.0))
        .collect();

    // Step 1, every member: the new key is accepted too. Step 2: it signs.
    // Step 3: the old one is retired. Heartbeats flow all along (every 50 ms).
    for (step, list) in [(1, keys(&[1, 2])), (2, keys(&[2, 1])), (3, keys(&[2]))] {
        for &id in &all {
            write_config(&cluster, id, &at_addresses(&cluster, &all), "", &list);
            sighup(&cluster, id);
            let count = applied.entry(id).or_default();
            *count += 1;
            wait_for_reloads(&cluster, id, *count, PATIENCE);
            // A few heartbeats with the members in different steps.
            std::thread::sleep(Duration::from_millis(200));
        }
        for &id in &all {
            assert_eq!(
                refused_for_authentication(&cluster, id),
                0.0,
                "after step {step}, member {id} refused frames:\n{}",
                cluster.metrics(id)
            );
        }
    }
    for (&id, before) in all.iter().zip(&accepted_before) {
        let status = cluster.status(id).expect("a status");
        assert_eq!(
            (status.config.signing_key, status.config.keys.clone()),
            (2, vec![2])
        );
        let received =
            metric(&cluster.metrics(id), "bully_messages_received_total", "").unwrap_or(0.0);
        println!(
            "member {id}: {} messages accepted during the rotation, 0 refused",
            received - before
        );
        assert!(
            received > *before,
            "member {id} heard nothing during the rotation"
        );
    }
    // The job never moved nor restarted.
    assert_eq!(cluster.child_log().newest_token(), first_token);
    assert_eq!(cluster.child_log().intervals().len(), 1);

    // The counter does count: member 1 alone jumps to a key nobody else has,
    // and the others refuse its frames as signed with an unknown key.
    write_config(&cluster, 1, &at_addresses(&cluster, &all), "", &keys(&[3]));
    sighup(&cluster, 1);
    wait_for_reloads(&cluster, 1, 4, PATIENCE);
    let deadline = Instant::now() + PATIENCE;
    while refused_for_authentication(&cluster, 3) == 0.0 {
        assert!(
            Instant::now() < deadline,
            "member 3 never refused member 1's frames"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `id` has refused `count` reloads.
fn wait_for_refusals(cluster: &Cluster, id: u64, count: u64) {
    let deadline = Instant::now() + PATIENCE;
    while cluster
        .status(id)
        .is_none_or(|status| status.config.refused < count)
    {
        assert!(
            Instant::now() < deadline,
            "member {id} did not refuse the file\n{}",
            cluster.node_log(id)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Lines of `id`'s log that carry `error:`.
fn error_lines(cluster: &Cluster, id: u64) -> usize {
    cluster
        .node_log(id)
        .lines()
        .filter(|line| line.contains("error:"))
        .count()
}

#[test]
fn a_file_that_cannot_be_applied_changes_nothing() {
    let cluster = Cluster::start(options(3));
    let all = [1, 2, 3];
    expect_leader(&cluster, &all, 3);
    cluster.wait_for_start_above(None, PATIENCE);
    let job = cluster.child_log().intervals();
    let valid = std::fs::read_to_string(cluster.config_path(3)).expect("the file");
    let pid = cluster.pid(3);
    let two_more = format!(
        "{valid}\n[[members]]\nid = 4\naddress = \"127.0.0.1:1\"\n[[members]]\nid = 5\naddress = \"127.0.0.1:2\"\n"
    );
    let cases = [
        (
            "not TOML",
            valid.replace("cluster = 7", "cluster = = 7"),
            "line 1",
        ),
        (
            "a timing that cannot change",
            valid.replace("heartbeat_ms = 50", "heartbeat_ms = 40"),
            "`timing.heartbeat_ms`",
        ),
        (
            "two members at once",
            two_more,
            "one member may be added or removed per reload",
        ),
        (
            "a missing secret file",
            valid.replace("secret_file = \"secret\"", "secret_file = \"gone\""),
            "`secret_file`",
        ),
        (
            "an unknown field",
            valid.replace("[child]\n", "[child]\ncolour = 1\n"),
            "colour",
        ),
    ];
    for (index, (case, text, says)) in cases.iter().enumerate() {
        std::fs::write(cluster.config_path(3), text).expect("write the broken file");
        let errors = error_lines(&cluster, 3);
        if *case == "a timing that cannot change" {
            // `bully-agent reload` reports the agent's verdict.
            let output = reload_command(&cluster, 3);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !output.status.success(),
                "{case}: reload said it applied the file"
            );
            assert!(stderr.contains(says), "{case}: {says:?} not in {stderr:?}");
        } else {
            sighup(&cluster, 3);
            wait_for_refusals(&cluster, 3, index as u64 + 1);
        }
        let status = cluster.status(3).expect("the leader answers");
        assert_eq!(status.config.refused, index as u64 + 1, "{case}");
        assert_eq!(status.config.reloads, 0, "{case}");
        assert!(
            status
                .config
                .last_error
                .as_deref()
                .is_some_and(|error| error.contains(says))
        );
        assert_eq!(
            error_lines(&cluster, 3),
            errors + 1,
            "{case}: not one `error:` line\n{}",
            cluster.node_log(3)
        );
        assert_eq!(status.role, "leader", "{case}");
        assert_eq!(status.members.len(), 2, "{case}");
    }
    // Still the same agent and the same run of the job, never stopped.
    assert_eq!(cluster.pid(3), pid);
    let now = cluster.child_log().intervals();
    assert_eq!(
        now.len(),
        job.len(),
        "the job restarted:\n{}",
        cluster.child_log().describe()
    );
    assert!(!now[0].stopped);
    assert_eq!(cluster.wait_for_agreement_among(&all, PATIENCE), 3);
    // The file put back is applied.
    std::fs::write(cluster.config_path(3), &valid).expect("restore the file");
    let output = reload_command(&cluster, 3);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(cluster.status(3).expect("a status").config.reloads, 1);
}
