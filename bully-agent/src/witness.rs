//! Witnesses: members marked `witness = true` in `[[members]]`. A witness
//! votes toward the quorum and never stands, so it never leads and never runs
//! the command: with two machines and a witness, the witness's vote is the
//! majority that lets the surviving machine lead when the other dies.
//!
//! A witness's `run` therefore takes no command, and a command given to one is
//! refused rather than silently never run; every other member needs one.

use std::ffi::OsString;

use crate::config::Settings;

/// Refuses a command on a witness, and no command on any other member.
pub fn check_command(settings: &Settings, command: &[OsString]) -> Result<(), String> {
    match (settings.is_witness(), command.is_empty()) {
        (true, false) => Err(format!(
            "{}: node {} is a witness (witness = true in its [[members]] entry): it never \
             leads, so it never runs a command; start it without `-- CMD`",
            settings.file.display(),
            settings.id
        )),
        (false, true) => Err(format!(
            "{}: node {} runs a command while it leads: give it after `--` \
             (bully-agent run --config FILE -- CMD [ARGS...]); only a witness runs none",
            settings.file.display(),
            settings.id
        )),
        _ => Ok(()),
    }
}

/// What `bully-agent check` says of the witnesses, when there are any.
pub fn describe(settings: &Settings) -> Option<String> {
    let witnesses = settings.config.observers();
    if witnesses.is_empty() {
        return None;
    }
    let ids: Vec<u64> = witnesses.iter().map(|id| id.0).collect();
    Some(if settings.is_witness() {
        format!("witnesses {ids:?}: this node is one (it votes, never leads, and runs no command)")
    } else {
        format!("witnesses {ids:?}: they vote, never lead, and run no command")
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use bully_core::NodeId;

    use super::*;
    use crate::config::load;

    /// Two machines, 1 and 2, and witness 3; this file is member `id`'s.
    fn file(id: u64) -> String {
        format!(
            r#"
cluster = 7
id = {id}
data_dir = "data"
secret_file = "secret"
[[members]]
id = 1
address = "127.0.0.1:7001"
[[members]]
id = 2
address = "127.0.0.1:7002"
[[members]]
id = 3
address = "127.0.0.1:7003"
witness = true
"#
        )
    }

    fn write(dir: &Path, text: &str) -> PathBuf {
        let secret = dir.join("secret");
        std::fs::write(&secret, "a secret of at least sixteen bytes").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let path = dir.join("cluster.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn error(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        load(&write(dir.path(), text)).unwrap_err().to_string()
    }

    #[test]
    fn a_witness_votes_never_stands_and_takes_no_command() {
        let dir = tempfile::tempdir().unwrap();
        let witness = load(&write(dir.path(), &file(3))).unwrap();
        assert!(witness.is_witness());
        assert_eq!(witness.config.observers(), [NodeId(3)]);
        assert!(witness.config.observers_vote(), "a witness's vote counts");
        assert_eq!(witness.lease_name, "bully-agent-7");
        assert_eq!(check_command(&witness, &[]), Ok(()));
        let refused = check_command(&witness, &["sleep".into()]).unwrap_err();
        assert!(refused.contains("is a witness"), "{refused}");
        assert!(describe(&witness).unwrap().contains("this node is one"));

        let machine = load(&write(dir.path(), &file(1))).unwrap();
        assert!(!machine.is_witness());
        assert_eq!(machine.config.observers(), [NodeId(3)]);
        assert_eq!(check_command(&machine, &["sleep".into()]), Ok(()));
        let refused = check_command(&machine, &[]).unwrap_err();
        assert!(refused.contains("give it after `--`"), "{refused}");
    }

    #[test]
    fn a_file_without_witnesses_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let settings = load(&write(dir.path(), &file(1).replace("witness = true\n", ""))).unwrap();
        assert!(settings.config.observers().is_empty());
        assert!(describe(&settings).is_none());
    }

    #[test]
    fn witnesses_nobody_could_follow_or_that_nothing_asks_to_vote_are_refused() {
        let all = file(1)
            .replace("7001\"\n", "7001\"\nwitness = true\n")
            .replace("7002\"\n", "7002\"\nwitness = true\n");
        let message = error(&all);
        assert!(
            message.contains("`members`") && message.contains("every member is a witness"),
            "{message}"
        );
        let none = file(1).replace("data_dir", "quorum = \"none\"\ndata_dir");
        let message = error(&none);
        assert!(
            message.contains("`members`") && message.contains("quorum = \"none\""),
            "{message}"
        );
        let message = error(&file(1).replace("witness = true", "witness = \"yes\""));
        assert!(message.contains("witness"), "{message}");
    }
}
