//! `secret_credential`: under systemd (`LoadCredential=NAME:PATH`) the key is
//! the file NAME in `$CREDENTIALS_DIRECTORY`; the agent's own `check` reads it
//! there, and refuses a credential that is missing or too short.

use std::process::Command;

const AGENT: &str = env!("CARGO_BIN_EXE_bully-agent");

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("cluster.toml");
    std::fs::write(
        &path,
        "cluster = 7\nid = 1\ndata_dir = \"data\"\nsecret_credential = \"bully-secret\"\n\
         [[members]]\nid = 1\naddress = \"127.0.0.1:7001\"\n",
    )
    .unwrap();
    path
}

#[test]
fn the_secret_is_read_from_the_credentials_directory_systemd_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path());
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    let check = |directory: Option<&std::path::Path>| {
        let mut command = Command::new(AGENT);
        command.args(["check", "--config"]).arg(&path);
        command.env_remove("CREDENTIALS_DIRECTORY");
        if let Some(directory) = directory {
            command.env("CREDENTIALS_DIRECTORY", directory);
        }
        let output = command.output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };

    // Outside systemd: refused, and the message says where it comes from.
    let (fine, stderr) = check(None);
    assert!(
        !fine && stderr.contains("LoadCredential=bully-secret:PATH"),
        "{stderr}"
    );
    // Under systemd, before the credential exists.
    let (fine, stderr) = check(Some(&credentials));
    assert!(!fine && stderr.contains("`secret_credential`"), "{stderr}");
    // A credential too short to be a key.
    std::fs::write(credentials.join("bully-secret"), "short\n").unwrap();
    let (fine, stderr) = check(Some(&credentials));
    assert!(!fine && stderr.contains("5 bytes"), "{stderr}");
    // The real one.
    std::fs::write(
        credentials.join("bully-secret"),
        "a credential of sixteen bytes or more\n",
    )
    .unwrap();
    let (fine, stderr) = check(Some(&credentials));
    assert!(fine, "{stderr}");
}
