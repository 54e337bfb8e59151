//! What a reload would change: the running configuration against the file as
//! read now. Settings that cannot change while the agent runs refuse the
//! reload, naming the field; the others make a [`Plan`].
//!
//! **May change:** the members (one added or removed per reload, and the
//! addresses of the others), the keys, the `[child]` settings but
//! `containment` and `cgroup_parent` (from the command's next run; a new
//! `grace_ms` only within the running lease margin), and the `[names]` table.
//!
//! **May not:** `cluster`, `id`, `data_dir`, `listen`, `bind`, this node's own
//! address, `algorithm`, `quorum`, `preemption`, every `[timing]` value and the
//! lease margin they and `child.grace_ms` imply (the node and its driver are
//! built with them), `child.containment` and `child.cgroup_parent` (the job's
//! container is prepared at start), and the `[health]` table. Restart the agent to change them.

use std::time::Duration;

use bully_core::NodeId;

use crate::config::{ChildPolicy, KeySecret, Member, NamesPolicy, Settings};
use crate::error::ConfigError;

/// The changes a reload makes, all checked.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// A member to add.
    pub added: Option<Member>,
    /// A member to remove.
    pub removed: Option<NodeId>,
    /// Members still in the cluster whose configured address changed.
    pub readdressed: Vec<Member>,
    /// The new keys, when they changed.
    pub keys: Option<Vec<KeySecret>>,
    /// The command's new treatment, when it changed.
    pub child: Option<ChildPolicy>,
    /// The new `[names]` table, when it changed.
    pub names: Option<NamesPolicy>,
}

impl Plan {
    /// Whether the reload changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Plan::default()
    }

    /// Compares `running` with `new`; refuses, naming the field, a change that
    /// cannot be made at runtime.
    pub fn between(running: &Settings, new: &Settings) -> Result<Plan, ConfigError> {
        fixed(running, new)?;
        let (added, removed) = membership(running, new)?;
        let readdressed = new
            .members
            .iter()
            .filter(|member| member.id != new.id)
            .filter(|member| {
                running
                    .members
                    .iter()
                    .any(|old| old.id == member.id && old.address != member.address)
            })
            .cloned()
            .collect();
        Ok(Plan {
            added,
            removed,
            readdressed,
            keys: (running.keys != new.keys).then(|| new.keys.clone()),
            child: (running.child != new.child).then_some(new.child),
            names: (running.names != new.names).then_some(new.names),
        })
    }
}

/// A field that cannot change at runtime.
fn unchangeable(field: &str, was: impl std::fmt::Debug, now: impl std::fmt::Debug) -> ConfigError {
    ConfigError::Field {
        field: field.to_owned(),
        message: format!(
            "cannot change while the agent runs ({was:?} -> {now:?}); restart the agent to \
             change it, or put the running value back"
        ),
    }
}

fn ms(duration: Duration) -> u128 {
    duration.as_millis()
}

/// Refuses a change to any setting the node, its driver, the sockets or the
/// job's container were built with.
fn fixed(running: &Settings, new: &Settings) -> Result<(), ConfigError> {
    let (a, b) = (&running.config, &new.config);
    macro_rules! same {
        ($field:expr, $old:expr, $new:expr) => {
            if $old != $new {
                return Err(unchangeable($field, $old, $new));
            }
        };
    }
    same!("cluster", running.cluster.0, new.cluster.0);
    same!("id", running.id.0, new.id.0);
    same!("data_dir", &running.data_dir, &new.data_dir);
    same!("listen", running.listen, new.listen);
    same!("bind", running.bind, new.bind);
    same!("algorithm", a.algorithm(), b.algorithm());
    same!("quorum", a.quorum(), b.quorum());
    // Who votes decides the quorum's size: every member must agree on it.
    same!("members.witness", a.observers(), b.observers());
    same!("lease_name", &running.lease_name, &new.lease_name);
    same!("preemption", a.preemption(), b.preemption());
    same!("health", &running.health, &new.health);
    same!(
        "timing.heartbeat_ms",
        ms(a.heartbeat_interval()),
        ms(b.heartbeat_interval())
    );
    same!(
        "timing.leader_timeout_ms",
        ms(a.leader_timeout()),
        ms(b.leader_timeout())
    );
    same!(
        "timing.max_message_delay_ms",
        ms(a.max_message_delay()),
        ms(b.max_message_delay())
    );
    same!(
        "timing.max_processing_ms",
        ms(a.max_processing_time()),
        ms(b.max_processing_time())
    );
    if a.lease_margin() != b.lease_margin() {
        return Err(ConfigError::Field {
            field: "timing.lease_margin_ms".to_owned(),
            message: format!(
                "cannot change while the agent runs ({} ms -> {} ms; unless set, it is \
                 child.grace_ms + 250 ms); set timing.lease_margin_ms = {} to change \
                 child.grace_ms alone, or restart the agent",
                ms(a.lease_margin()),
                ms(b.lease_margin()),
                ms(a.lease_margin())
            ),
        });
    }
    same!(
        "child.containment",
        running.containment.mode,
        new.containment.mode
    );
    same!(
        "child.cgroup_parent",
        &running.containment.cgroup_parent,
        &new.containment.cgroup_parent
    );
    let own = |settings: &Settings| settings.own_address().to_string();
    if own(running) != own(new) {
        let index = new
            .members
            .iter()
            .position(|member| member.id == new.id)
            .unwrap_or_default();
        return Err(unchangeable(
            &format!("members[{index}].address"),
            own(running),
            own(new),
        ));
    }
    Ok(())
}

/// One member added or one removed, at most: a quorum computed from different
/// views of the membership can be met twice, so members change one at a time
/// (every member reloads one change before the next is made), as the core
/// requires (`Node::add_member`).
fn membership(
    running: &Settings,
    new: &Settings,
) -> Result<(Option<Member>, Option<NodeId>), ConfigError> {
    let added: Vec<&Member> = new
        .members
        .iter()
        .filter(|member| !running.members.iter().any(|old| old.id == member.id))
        .collect();
    let removed: Vec<NodeId> = running
        .member_ids()
        .filter(|id| !new.members.iter().any(|member| member.id == *id))
        .collect();
    if added.len() + removed.len() > 1 {
        let list = |ids: Vec<NodeId>| {
            ids.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(ConfigError::Field {
            field: "members".to_owned(),
            message: format!(
                "adds [{}] and removes [{}]: one member may be added or removed per reload \
                 (two majorities of different member lists need not overlap); make one change, \
                 reload every member, then the next",
                list(added.iter().map(|member| member.id).collect()),
                list(removed)
            ),
        });
    }
    Ok((
        added.first().map(|&member| member.clone()),
        removed.first().copied(),
    ))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::load;

    const BASE: &str = r#"
cluster = 7
id = 1
data_dir = "data"
secret_file = "secret"
[timing]
heartbeat_ms = 50
leader_timeout_ms = 600
max_message_delay_ms = 20
[child]
grace_ms = 200
[[members]]
id = 1
address = "127.0.0.1:7001"
[[members]]
id = 2
address = "127.0.0.1:7002"
[[members]]
id = 3
address = "127.0.0.1:7003"
"#;

    fn settings(dir: &Path, text: &str) -> Settings {
        use std::os::unix::fs::PermissionsExt;
        for (name, secret) in [
            ("secret", "the first secret, 32 bytes long!"),
            ("secret-2", "the second secret, 32 bytes too!"),
        ] {
            std::fs::write(dir.join(name), secret).unwrap();
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600))
                .unwrap();
        }
        let path = dir.join("cluster.toml");
        std::fs::write(&path, text).unwrap();
        load(&path).unwrap()
    }

    #[test]
    fn the_same_file_plans_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let running = settings(dir.path(), BASE);
        assert!(
            Plan::between(&running, &settings(dir.path(), BASE))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_fourth_member_keys_and_child_settings_make_a_plan() {
        let dir = tempfile::tempdir().unwrap();
        let running = settings(dir.path(), BASE);
        let text = BASE.replace(
            "secret_file = \"secret\"\n",
            "[[keys]]\nid = 1\nsecret_file = \"secret\"\n[[keys]]\nid = 2\nsecret_file = \"secret-2\"\n",
        );
        let text = text
            .replace("grace_ms = 200", "grace_ms = 200\nrestart_delay_ms = 300")
            .replace("127.0.0.1:7003", "node-3.example:7003")
            + "[[members]]\nid = 4\naddress = \"127.0.0.1:7004\"\n";
        let plan = Plan::between(&running, &settings(dir.path(), &text)).unwrap();
        assert_eq!(plan.added.as_ref().map(|member| member.id), Some(NodeId(4)));
        assert_eq!(plan.removed, None);
        assert_eq!(plan.readdressed.len(), 1);
        assert_eq!(plan.readdressed[0].id, NodeId(3));
        let keys = plan.keys.unwrap();
        assert_eq!(keys.iter().map(|key| key.id.0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            plan.child.unwrap().restart_delay,
            Duration::from_millis(300)
        );
    }

    #[test]
    fn what_cannot_change_at_runtime_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let running = settings(dir.path(), BASE);
        let with_four = format!("{BASE}[[members]]\nid = 4\naddress = \"127.0.0.1:7004\"\n");
        let cases = [
            (BASE.replace("cluster = 7", "cluster = 8"), "`cluster`"),
            (
                BASE.replace("heartbeat_ms = 50", "heartbeat_ms = 60"),
                "`timing.heartbeat_ms`",
            ),
            (
                BASE.replace("leader_timeout_ms = 600", "leader_timeout_ms = 900"),
                "`timing.leader_timeout_ms`",
            ),
            (
                BASE.replace("grace_ms = 200", "grace_ms = 150"),
                "`timing.lease_margin_ms`",
            ),
            (
                BASE.replace("data_dir = \"data\"", "data_dir = \"other\""),
                "`data_dir`",
            ),
            (
                BASE.replace("data_dir", "quorum = \"none\"\ndata_dir"),
                "`quorum`",
            ),
            (
                BASE.replace("data_dir", "preemption = \"never\"\ndata_dir"),
                "`preemption`",
            ),
            (
                BASE.replace("127.0.0.1:7003\"", "127.0.0.1:7003\"\nwitness = true"),
                "`members.witness`",
            ),
            (
                BASE.replace("data_dir", "lease_name = \"nightly\"\ndata_dir"),
                "`lease_name`",
            ),
            (
                BASE.replace("data_dir", "listen = \"127.0.0.1:9999\"\ndata_dir"),
                "`listen`",
            ),
            (
                BASE.replace("127.0.0.1:7001", "127.0.0.1:7011"),
                "`members[0].address`",
            ),
            (
                BASE.replace(
                    "grace_ms = 200",
                    "grace_ms = 200\ncontainment = \"subreaper\"",
                ),
                "`child.containment`",
            ),
            (
                with_four.replace("[[members]]\nid = 3\naddress = \"127.0.0.1:7003\"\n", ""),
                "one member may be added or removed per reload",
            ),
        ];
        for (text, expected) in cases {
            let error = Plan::between(&running, &settings(dir.path(), &text))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{expected:?} not in {error:?}");
        }
        // The grace period alone may change when the margin is set explicitly.
        let margin = BASE.replace(
            "leader_timeout_ms = 600",
            "leader_timeout_ms = 600\nlease_margin_ms = 450",
        );
        let running = settings(dir.path(), &margin);
        let plan = Plan::between(
            &running,
            &settings(
                dir.path(),
                &margin.replace("grace_ms = 200", "grace_ms = 300"),
            ),
        )
        .unwrap();
        assert_eq!(plan.child.unwrap().grace, Duration::from_millis(300));
    }
}
