//! The configuration's unit tests: accepted files, and a mistake per field.

use std::os::unix::fs::PermissionsExt;

use super::*;

/// Writes `text` as the configuration and a secret only its owner may read.
fn write(dir: &Path, text: &str) -> PathBuf {
    write_secret(dir, "a secret of at least sixteen bytes\n");
    let path = dir.join("cluster.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const THREE: &str = r#"
cluster = 7
id = 2
data_dir = "data"
secret_file = "secret"
[[members]]
id = 1
address = "127.0.0.1:7001"
[[members]]
id = 2
address = "[::1]:7002"
[[members]]
id = 3
address = "localhost:7003"
"#;

#[test]
fn a_three_member_file_takes_ipv4_ipv6_and_host_names() {
    let dir = tempfile::tempdir().unwrap();
    let settings = load(&write(dir.path(), THREE)).unwrap();
    assert_eq!(settings.id, NodeId(2));
    assert_eq!(
        settings.own_address(),
        &Address::Ip("[::1]:7002".parse().unwrap())
    );
    assert_eq!(settings.peers().count(), 2);
    assert_eq!(
        settings.members[2].address,
        Address::Name {
            host: "localhost".to_owned(),
            port: 7003
        }
    );
    assert_eq!(
        settings.config.quorum(),
        Quorum::Majority,
        "quorum is on by default"
    );
    assert_eq!(settings.keys.len(), 1);
    assert_eq!(settings.keys[0].id, SINGLE_KEY_ID);
    assert_eq!(
        settings.keys[0].secret,
        b"a secret of at least sixteen bytes"
    );
    assert_eq!(settings.data_dir, dir.path().join("data"));
    assert_eq!(settings.config.lease_margin(), Duration::from_millis(1250));
    assert!(
        !format!("{settings:?}").contains("sixteen"),
        "the secret leaked into Debug"
    );
}

#[test]
fn every_mistake_names_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (THREE.replacen("id = 2\n", "id = 9\n", 1), "`id`"),
        (THREE.replace("id = 3", "id = 1"), "`members[2].id`"),
        (
            THREE.replace("localhost:7003", "localhost"),
            "`members[2].address`",
        ),
        (
            THREE.replace("[::1]:7002", "no such host:7002"),
            "`members[1].address`",
        ),
        (
            THREE.replace("cluster = 7\n", ""),
            "missing field `cluster`",
        ),
        (
            THREE.replace("cluster = 7", "cluster = 7\nclustr = 8"),
            "unknown field `clustr`",
        ),
        (
            THREE.replace("secret_file = \"secret\"", "secret_file = \"nope\""),
            "`secret_file`",
        ),
        (
            THREE.replace("secret_file = \"secret\"", ""),
            "`secret_file`",
        ),
        (
            THREE.replace(
                "secret_file = \"secret\"",
                "secret_file = \"secret\"\nsecret_env = \"X\"",
            ),
            "give one of secret_file, secret_env and secret_credential",
        ),
        (
            THREE.replace(
                "secret_file = \"secret\"",
                "secret_env = \"BULLY_AGENT_TEST_UNSET\"",
            ),
            "`secret_env`",
        ),
        (
            THREE.replace("data_dir", "quorum = \"most\"\ndata_dir"),
            "`quorum`",
        ),
        (
            THREE.replace("data_dir", "algorithm = \"raft\"\ndata_dir"),
            "algorithm",
        ),
        (
            format!(
                "{}\n[timing]\nleader_timeout_ms = 100\nheartbeat_ms = 200\n",
                THREE
            ),
            "`timing`",
        ),
        (
            format!("{}\n[child]\ngrace_ms = 5000\n", THREE),
            "`timing.lease_margin_ms`",
        ),
        (
            format!(
                "{}\n[timing]\nlease_margin_ms = 500\n[child]\ngrace_ms = 500\n",
                THREE
            ),
            "does not exceed child.grace_ms",
        ),
    ];
    for (text, expected) in cases {
        let error = load(&write(dir.path(), &text)).unwrap_err().to_string();
        assert!(error.contains(expected), "{expected:?} not in: {error}");
    }
}

#[test]
fn a_short_secret_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), THREE);
    write_secret(dir.path(), "short\n");
    let error = load(&path).unwrap_err().to_string();
    assert!(
        error.contains("`secret_file`") && error.contains("5 bytes"),
        "{error}"
    );
}

#[test]
fn quorum_none_and_a_number_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let none = THREE.replace("data_dir", "quorum = \"none\"\ndata_dir");
    assert_eq!(
        load(&write(dir.path(), &none)).unwrap().config.quorum(),
        Quorum::None
    );
    let two = THREE.replace("data_dir", "quorum = 2\ndata_dir");
    assert_eq!(
        load(&write(dir.path(), &two)).unwrap().config.quorum(),
        Quorum::AtLeast(2)
    );
}

#[test]
fn the_shipped_example_is_a_valid_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let example = include_str!("../../cluster.example.toml")
        .replace("/etc/bully-agent/secret", "secret")
        .replace("/var/lib/bully-agent", "data");
    let settings = load(&write(dir.path(), &example)).unwrap();
    assert_eq!(settings.members.len(), 3);
    assert!(settings.members[2].address.ip().unwrap().is_ipv6());
    assert_eq!(settings.listen, Some("127.0.0.1:9101".parse().unwrap()));
}

#[test]
fn the_packaged_configuration_is_valid_with_its_key_where_the_unit_puts_it() {
    let dir = tempfile::tempdir().unwrap();
    // The unit's credential stands in as a file here (tests/credential.rs
    // reads a real credentials directory).
    let packaged = include_str!("../../debian/cluster.toml")
        .replace(
            "secret_credential = \"bully-secret\"",
            "secret_file = \"secret\"",
        )
        .replace("/var/lib/bully-agent", "data");
    let settings = load(&write(dir.path(), &packaged)).unwrap();
    assert_eq!(settings.members.len(), 3);
    assert!(
        include_str!("../../debian/cluster.toml").contains("secret_credential = \"bully-secret\"")
    );
    assert!(
        include_str!("../../debian/bully-agent.service").contains("LoadCredential=bully-secret:")
    );
}

fn write_secret(dir: &Path, secret: &str) {
    let path = dir.join("secret");
    std::fs::write(&path, secret).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn two_members_with_one_address_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let same = THREE.replace("localhost:7003", "127.0.0.1:7001");
    let error = load(&write(dir.path(), &same)).unwrap_err().to_string();
    assert!(
        error.starts_with("`members[2].address`") && error.contains("members[0]"),
        "{error}"
    );
    // The same name twice too.
    let same = THREE.replace("127.0.0.1:7001", "localhost:7003");
    let error = load(&write(dir.path(), &same)).unwrap_err().to_string();
    assert!(error.starts_with("`members[2].address`"), "{error}");
}

#[test]
fn a_secret_file_others_may_read_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), THREE);
    for mode in [0o644, 0o640, 0o604, 0o620] {
        std::fs::set_permissions(
            dir.path().join("secret"),
            std::fs::Permissions::from_mode(mode),
        )
        .unwrap();
        let error = load(&path).unwrap_err().to_string();
        assert!(
            error.starts_with("`secret_file`")
                && error.contains(&format!("mode {mode:04o}"))
                && error.contains("chmod 600")
                && error.contains("secret_file_mode_check = false"),
            "{error}"
        );
    }
    for mode in [0o600, 0o400] {
        std::fs::set_permissions(
            dir.path().join("secret"),
            std::fs::Permissions::from_mode(mode),
        )
        .unwrap();
        assert!(load(&path).is_ok(), "mode {mode:04o} is refused");
    }
    std::fs::set_permissions(
        dir.path().join("secret"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let allowed = THREE.replace(
        "secret_file = \"secret\"",
        "secret_file = \"secret\"\nsecret_file_mode_check = false",
    );
    let text = std::fs::read_to_string(dir.path().join("secret")).unwrap();
    let path = dir.path().join("allowed.toml");
    std::fs::write(&path, &allowed).unwrap();
    assert_eq!(
        load(&path).unwrap().keys[0].secret,
        text.trim_end().as_bytes()
    );
}

#[test]
fn a_secret_of_few_distinct_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), THREE);
    for (secret, distinct) in [
        ("                \n", 1),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1),
        ("abcdefgabcdefgabcdefg", 7),
    ] {
        write_secret(dir.path(), secret);
        let error = load(&path).unwrap_err().to_string();
        assert!(
            error.starts_with("`secret_file`")
                && error.contains(&format!("only {distinct} distinct byte values")),
            "{error}"
        );
    }
    write_secret(dir.path(), "abcdefghabcdefghabcdefgh");
    assert!(load(&path).is_ok(), "8 distinct byte values are enough");
}

#[test]
fn restart_delay_and_grace_below_their_floors_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (child, expected) in [
        (
            "grace_ms = 0",
            "`child.grace_ms`: 0 ms is below the least allowed, 100 ms",
        ),
        ("grace_ms = 99", "`child.grace_ms`: 99 ms"),
        (
            "restart_delay_ms = 0",
            "`child.restart_delay_ms`: 0 ms is below the least allowed, 100 ms",
        ),
        ("backoff_ms = 500", "`child.backoff_ms`: 500 ms"),
        (
            "backoff_ms = 5000\nmax_backoff_ms = 4000",
            "`child.max_backoff_ms`",
        ),
    ] {
        let text = format!("{THREE}\n[child]\n{child}\n");
        let error = load(&write(dir.path(), &text)).unwrap_err().to_string();
        assert!(error.starts_with(expected), "{expected:?} not in: {error}");
    }
    // At the floors, and a short back-off when the back-off is off.
    let text = format!(
        "{THREE}\n[child]\ngrace_ms = 100\nrestart_delay_ms = 100\nfailure_limit = 0\nbackoff_ms = 0\n"
    );
    let child = load(&write(dir.path(), &text)).unwrap().child;
    assert_eq!(
        (child.grace, child.restart_delay),
        (MIN_GRACE, MIN_RESTART_DELAY)
    );
    assert_eq!(child.failures.limit, 0);
}

#[test]
fn the_failure_back_off_and_containment_have_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let settings = load(&write(dir.path(), THREE)).unwrap();
    assert_eq!(
        settings.child.failures,
        FailurePolicy {
            limit: 3,
            min_runtime: Duration::from_secs(1),
            backoff: Duration::from_secs(10),
            max_backoff: Duration::from_secs(300),
        }
    );
    assert_eq!(settings.containment.mode, ContainmentMode::Auto);
    assert_eq!(settings.containment.cgroup_parent, None);
    let text = format!("{THREE}\n[child]\ncontainment = \"subreaper\"\ncgroup_parent = \"x\"\n");
    let error = load(&write(dir.path(), &text)).unwrap_err().to_string();
    assert!(error.starts_with("`child.cgroup_parent`"), "{error}");
}

/// A second secret file, `secret-2`, only its owner may read.
fn write_second_secret(dir: &Path) {
    let path = dir.join("secret-2");
    std::fs::write(&path, "another secret, also sixteen bytes or more").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn a_list_of_keys_signs_with_the_first_and_accepts_both() {
    let dir = tempfile::tempdir().unwrap();
    write_second_secret(dir.path());
    let two = THREE.replace(
        "secret_file = \"secret\"\n",
        "[[keys]]\nid = 7\nsecret_file = \"secret-2\"\n[[keys]]\nid = 1\nsecret_file = \"secret\"\n",
    );
    let settings = load(&write(dir.path(), &two)).unwrap();
    let ids: Vec<u32> = settings.keys.iter().map(|key| key.id.0).collect();
    assert_eq!(ids, [7, 1]);
    match settings.auth().unwrap() {
        Auth::Hmac { current, previous } => {
            assert_eq!(current.id(), bully_core::wire::KeyId(7));
            assert_eq!(
                previous.map(|key| key.id()),
                Some(bully_core::wire::KeyId(1))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !format!("{settings:?}").contains("another secret"),
        "a key leaked into Debug"
    );
}

#[test]
fn every_mistake_in_the_keys_names_its_field() {
    let dir = tempfile::tempdir().unwrap();
    write_second_secret(dir.path());
    let keys = |list: &str| THREE.replace("secret_file = \"secret\"\n", list);
    let cases = [
        (
            keys("[[keys]]\nid = 0\nsecret_file = \"secret\"\n"),
            "`keys[0].id`: key id 0 is reserved",
        ),
        (
            keys(
                "[[keys]]\nid = 2\nsecret_file = \"secret\"\n[[keys]]\nid = 2\nsecret_file = \"secret-2\"\n",
            ),
            "`keys[1].id`: key 2 is listed twice",
        ),
        (
            keys(
                "[[keys]]\nid = 1\nsecret_file = \"secret\"\n[[keys]]\nid = 2\nsecret_file = \"secret\"\n",
            ),
            "the same secret as keys[0]",
        ),
        (
            keys(
                "[[keys]]\nid = 1\nsecret_file = \"secret\"\n[[keys]]\nid = 2\nsecret_file = \"secret-2\"\n\
                 [[keys]]\nid = 3\nsecret_file = \"secret-2\"\n",
            ),
            "`keys[2]`: at most 2 keys",
        ),
        (
            keys("secret_file = \"secret\"\n[[keys]]\nid = 1\nsecret_file = \"secret\"\n"),
            "`keys`: give either [[keys]] or one secret",
        ),
        (
            keys("[[keys]]\nid = 1\nsecret_file = \"missing\"\n"),
            "`keys[0].secret_file`",
        ),
        (
            keys("[[keys]]\nid = 1\nsecret_credential = \"../x\"\n"),
            "`keys[0].secret_credential`",
        ),
    ];
    for (text, expected) in cases {
        let error = load(&write(dir.path(), &text)).unwrap_err().to_string();
        assert!(error.contains(expected), "{expected:?} not in: {error}");
    }
}

#[test]
fn a_credential_is_read_from_the_credentials_directory() {
    let dir = tempfile::tempdir().unwrap();
    let text = THREE.replace(
        "secret_file = \"secret\"",
        "secret_credential = \"bully-secret\"",
    );
    let path = write(dir.path(), &text);
    // Without systemd: the variable is not set, and the message says why.
    if std::env::var_os(CREDENTIALS_DIRECTORY).is_none() {
        let error = load(&path).unwrap_err().to_string();
        assert!(
            error.starts_with("`secret_credential`") && error.contains("LoadCredential="),
            "{error}"
        );
    }
    // Under systemd the file of that name in the directory is read:
    // `tests/credential.rs` runs the agent with the variable set.
}

#[test]
fn an_id_from_the_command_line_replaces_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), THREE);
    assert_eq!(load_as(&path, Some(3)).unwrap().id, NodeId(3));
    assert_eq!(load_as(&path, Some(3)).unwrap().id_override, Some(3));
    let error = load_as(&path, Some(9)).unwrap_err().to_string();
    assert!(error.starts_with("`id`"), "{error}");
}

#[test]
fn bind_and_the_names_table_are_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let text = THREE.replace("data_dir", "bind = \"0.0.0.0:7002\"\ndata_dir")
        + "\n[names]\nrefresh_ms = 2000\nretry_ms = 500\n";
    let settings = load(&write(dir.path(), &text)).unwrap();
    assert_eq!(settings.bind, Some("0.0.0.0:7002".parse().unwrap()));
    assert_eq!(
        settings.names,
        NamesPolicy {
            refresh: Duration::from_secs(2),
            retry: Duration::from_millis(500)
        }
    );
    for (names, expected) in [
        ("retry_ms = 10", "`names.retry_ms`"),
        ("refresh_ms = 500\nretry_ms = 1000", "`names.refresh_ms`"),
    ] {
        let text = format!("{THREE}\n[names]\n{names}\n");
        let error = load(&write(dir.path(), &text)).unwrap_err().to_string();
        assert!(error.starts_with(expected), "{expected:?} not in: {error}");
    }
}

#[test]
fn init_reads_who_this_node_is_without_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.toml");
    // No secret file next to it: under systemd the key is a credential that
    // only the service sees, and `init` needs none.
    std::fs::write(&path, THREE).unwrap();
    assert!(load(&path).is_err(), "`run` would need the secret");
    let identity = read_identity(&path, None).unwrap();
    assert_eq!(
        identity,
        Identity {
            cluster: ClusterId(7),
            id: NodeId(2),
            data_dir: dir.path().join("data"),
        }
    );
    assert_eq!(read_identity(&path, Some(3)).unwrap().id, NodeId(3));
    let error = read_identity(&path, Some(4)).unwrap_err().to_string();
    assert!(
        error.starts_with("`id`: 4 is not one of the members"),
        "{error}"
    );
}

#[test]
fn the_lease_name_defaults_to_the_cluster_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        load(&write(dir.path(), THREE)).unwrap().lease_name,
        "bully-agent-7"
    );
    let named = THREE.replace("data_dir", "lease_name = \"nightly\"\ndata_dir");
    assert_eq!(
        load(&write(dir.path(), &named)).unwrap().lease_name,
        "nightly"
    );
    for bad in ["\"\"", "\"  \"", "\"a\\nb\""] {
        let text = THREE.replace("data_dir", &format!("lease_name = {bad}\ndata_dir"));
        let message = load(&write(dir.path(), &text)).unwrap_err().to_string();
        assert!(message.contains("`lease_name`"), "{bad}: {message}");
    }
}

#[test]
fn the_health_table_is_read_with_its_defaults_and_every_mistake_names_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let with = |table: &str| format!("{THREE}\n{}", table.trim());
    let settings = load(&write(dir.path(), THREE)).unwrap();
    assert_eq!(settings.health, None, "no table, no check");
    let settings = load(&write(
        dir.path(),
        &with("[health]\ncommand = [\"/bin/check\", \"-q\"]"),
    ))
    .unwrap();
    assert_eq!(
        settings.health,
        Some(HealthPolicy {
            check: HealthCheck::Command(vec!["/bin/check".into(), "-q".into()]),
            interval: Duration::from_secs(5),
            timeout: Duration::from_secs(2),
            failures: 3,
            backoff: Duration::from_secs(60),
        })
    );
    let cases = [
        ("[health]\ninterval_ms = 1000", "`health`"),
        ("[health]\ncommand = []", "`health.command`"),
        (
            "[health]\ncommand = [\"c\"]\nurl = \"http://127.0.0.1/\"",
            "`health`",
        ),
        ("[health]\nurl = \"https://example.com/\"", "`health.url`"),
        (
            "[health]\ncommand = [\"c\"]\ninterval_ms = 50\ntimeout_ms = 10",
            "`health.interval_ms`",
        ),
        (
            "[health]\ncommand = [\"c\"]\ninterval_ms = 1000\ntimeout_ms = 2000",
            "`health.timeout_ms`",
        ),
        (
            "[health]\ncommand = [\"c\"]\nfailures = 0",
            "`health.failures`",
        ),
        (
            "[health]\ncommand = [\"c\"]\nbackoff_ms = 10",
            "`health.backoff_ms`",
        ),
        (
            "[health]\ncommand = [\"c\"]\nretries = 2",
            "unknown field `retries`",
        ),
    ];
    for (table, expected) in cases {
        let error = load(&write(dir.path(), &with(table)))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{table:?}: {error}");
    }
}
