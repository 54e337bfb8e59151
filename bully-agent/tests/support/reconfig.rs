//! Changing a running cluster's configuration: a member's file rewritten with
//! other members, keys or settings, and the agent told to read it again
//! (SIGHUP, or `bully-agent reload`), for the reload and member-name tests.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::cluster::{AGENT, CLUSTER_ID, Cluster};

/// A member's configuration file: `members` are (id, address) pairs as
/// written; `top` goes among the top-level keys (`secret_file` is there
/// unless `top` gives keys of its own with `keys`), `tail` after the members
/// (`[[keys]]` tables, `[names]`).
pub(crate) fn write_config(
    cluster: &Cluster,
    id: u64,
    members: &[(u64, String)],
    top: &str,
    tail: &str,
) {
    let secret = if tail.contains("[[keys]]") {
        ""
    } else {
        "secret_file = \"secret\"\n"
    };
    let mut text = format!(
        "cluster = {CLUSTER_ID}\nid = {id}\ndata_dir = \"data/{id}\"\n{secret}\
         algorithm = \"classic\"\nquorum = \"majority\"\npreemption = \"always\"\n\
         listen = \"{}\"\n{top}\n{}",
        cluster.http_address(id),
        cluster.timing().toml()
    );
    for (member, address) in members {
        text.push_str(&format!(
            "\n[[members]]\nid = {member}\naddress = \"{address}\"\n"
        ));
    }
    text.push_str(tail);
    std::fs::write(cluster.config_path(id), text).expect("write a configuration");
}

/// `ids` at their own UDP addresses, as `write_config` takes them.
pub(crate) fn at_addresses(cluster: &Cluster, ids: &[u64]) -> Vec<(u64, String)> {
    ids.iter()
        .map(|&id| (id, cluster.udp_address(id).to_string()))
        .collect()
}

/// SIGHUP to `id`'s agent, as `systemctl reload` sends it.
pub(crate) fn sighup(cluster: &Cluster, id: u64) {
    let pid = Pid::from_raw(i32::try_from(cluster.pid(id)).expect("a pid fits in i32"));
    kill(pid, Signal::SIGHUP).expect("SIGHUP the agent");
}

/// `bully-agent reload --config` of `id`'s file: its exit status and output.
pub(crate) fn reload_command(cluster: &Cluster, id: u64) -> Output {
    Command::new(AGENT)
        .arg("reload")
        .arg("--config")
        .arg(cluster.config_path(id))
        .output()
        .expect("run bully-agent reload")
}

/// Waits until `id`'s endpoint counts `applied` reloads; panics if it counts
/// a refused one instead, or on a timeout.
pub(crate) fn wait_for_reloads(cluster: &Cluster, id: u64, applied: u64, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = cluster.status(id) {
            assert_eq!(
                status.config.refused,
                0,
                "member {id} refused a reload: {:?}\n{}",
                status.config.last_error,
                cluster.node_log(id)
            );
            if status.config.reloads >= applied {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "member {id} did not apply reload {applied} within {timeout:?}\n{}",
            cluster.node_log(id)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A counter or gauge of `/metrics` text with the given labels (`""` for
/// none), or `None` if the series is absent.
pub(crate) fn metric(text: &str, name: &str, labels: &str) -> Option<f64> {
    let series = if labels.is_empty() {
        name.to_owned()
    } else {
        format!("{name}{{{labels}}}")
    };
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            (key == series).then(|| value.parse().ok())?
        })
}
