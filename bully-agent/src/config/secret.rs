//! The cluster's keys: one secret (`secret_file`, `secret_env` or
//! `secret_credential`), or a `[[keys]]` list for a rotation, each read and
//! refused when it is too short, too uniform to be a key, or in a file that
//! other users may read (as ssh refuses such a private key).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bully_core::wire::{KeyId, MIN_KEY_LEN};
use serde::Deserialize;

use super::field;
use crate::error::ConfigError;

/// The environment variable systemd sets to the directory of the unit's
/// credentials (`LoadCredential=`).
pub const CREDENTIALS_DIRECTORY: &str = "CREDENTIALS_DIRECTORY";

/// The most keys `[[keys]]` may list: the one that signs and one more that is
/// accepted, which is what the wire codec checks a frame with
/// (`bully_core::wire::Auth::Hmac`'s `current` and `previous`). A rotation
/// never needs more: `[old, new]` on every member, then `[new, old]`.
pub const MAX_KEYS: usize = 2;

/// The id of the key a single secret (`secret_file`, `secret_env`,
/// `secret_credential` at the top level) is used as.
pub const SINGLE_KEY_ID: KeyId = KeyId(1);

/// One `[[keys]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyEntry {
    id: u32,
    secret_file: Option<PathBuf>,
    secret_env: Option<String>,
    secret_credential: Option<String>,
}

/// A cluster key as read: its id and its secret (never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct KeySecret {
    /// The id frames signed with it carry.
    pub id: KeyId,
    /// The secret's bytes.
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySecret")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Reads the keys: the top-level secret as key 1, or the `[[keys]]` list (the
/// first signs, every one is accepted), never both.
pub(super) fn read_keys(
    single: &SecretSource<'_>,
    keys: &[KeyEntry],
    base: &Path,
) -> Result<Vec<KeySecret>, ConfigError> {
    let single_given = single.file.is_some() || single.env.is_some() || single.credential.is_some();
    if keys.is_empty() {
        let secret = read_secret(single, base, "")?;
        return Ok(vec![KeySecret {
            id: SINGLE_KEY_ID,
            secret,
        }]);
    }
    if single_given {
        return Err(field(
            "keys",
            "give either [[keys]] or one secret (secret_file, secret_env, secret_credential),              not both",
        ));
    }
    if keys.len() > MAX_KEYS {
        return Err(field(
            &format!("keys[{MAX_KEYS}]"),
            format!(
                "at most {MAX_KEYS} keys: the first signs, the second is accepted as well; a                  rotation is [old, new] on every member, then [new, old], then [new]"
            ),
        ));
    }
    let mut read: Vec<KeySecret> = Vec::with_capacity(keys.len());
    for (index, entry) in keys.iter().enumerate() {
        let prefix = format!("keys[{index}].");
        if entry.id == KeyId::NONE.0 {
            return Err(field(
                &format!("{prefix}id"),
                "key id 0 is reserved for unauthenticated frames; use 1 or more",
            ));
        }
        if read.iter().any(|key| key.id == KeyId(entry.id)) {
            return Err(field(
                &format!("{prefix}id"),
                format!("key {} is listed twice", entry.id),
            ));
        }
        let source = SecretSource {
            file: entry.secret_file.as_deref(),
            env: entry.secret_env.as_deref(),
            credential: entry.secret_credential.as_deref(),
            mode_check: single.mode_check,
        };
        let secret = read_secret(&source, base, &prefix)?;
        if let Some(same) = read.iter().position(|key| key.secret == secret) {
            return Err(field(
                &format!("{prefix}secret_file"),
                format!(
                    "key {} has the same secret as keys[{same}] (key {}): a new key needs a new                      secret",
                    entry.id, read[same].id
                ),
            ));
        }
        read.push(KeySecret {
            id: KeyId(entry.id),
            secret,
        });
    }
    Ok(read)
}

/// The fewest distinct byte values a secret may have: 16 spaces, or
/// "aaaaaaaaaaaaaaaa", is a placeholder, not a key. Random bytes, or their hex
/// or base64 text, have far more.
pub const MIN_DISTINCT_BYTES: usize = 8;

/// Where the secret comes from, as the file names it.
pub(super) struct SecretSource<'a> {
    pub(super) file: Option<&'a Path>,
    pub(super) env: Option<&'a str>,
    pub(super) credential: Option<&'a str>,
    /// `secret_file_mode_check`.
    pub(super) mode_check: bool,
}

/// Reads the secret and checks it; `base` resolves a relative `secret_file`;
/// the fields an error names start with `prefix` (`keys[1].`).
pub(super) fn read_secret(
    source: &SecretSource<'_>,
    base: &Path,
    prefix: &str,
) -> Result<Vec<u8>, ConfigError> {
    let named = |name: &str| format!("{prefix}{name}");
    let given = [
        source.file.is_some(),
        source.env.is_some(),
        source.credential.is_some(),
    ];
    let (name, secret) = match (source.file, source.env, source.credential) {
        _ if given.iter().filter(|&&given| given).count() > 1 => {
            return Err(field(
                &named("secret_file"),
                "give one of secret_file, secret_env and secret_credential",
            ));
        }
        (Some(path), _, _) => {
            let path = base.join(path);
            let bytes = std::fs::read(&path).map_err(|error| {
                field(
                    &named("secret_file"),
                    format!("{}: {error}", path.display()),
                )
            })?;
            if source.mode_check {
                check_mode(&path, &named("secret_file"))?;
            }
            (named("secret_file"), trim_newline(bytes))
        }
        (_, Some(name), _) => (
            named("secret_env"),
            std::env::var_os(name)
                .ok_or_else(|| {
                    field(
                        &named("secret_env"),
                        format!("the variable {name} is not set"),
                    )
                })?
                .into_encoded_bytes(),
        ),
        (_, _, Some(name)) => {
            let path = credential_path(name)
                .map_err(|message| field(&named("secret_credential"), message))?;
            let bytes = std::fs::read(&path).map_err(|error| {
                field(
                    &named("secret_credential"),
                    format!("{}: {error}", path.display()),
                )
            })?;
            (named("secret_credential"), trim_newline(bytes))
        }
        (None, None, None) => {
            return Err(field(
                &named("secret_file"),
                "no secret: set secret_file (a file holding it), secret_env (a variable \
                 holding it) or secret_credential (a systemd credential's name)",
            ));
        }
    };
    let name = name.as_str();
    if secret.len() < MIN_KEY_LEN {
        return Err(field(
            name,
            format!(
                "the secret is {} bytes; at least {MIN_KEY_LEN} are needed",
                secret.len()
            ),
        ));
    }
    let distinct = distinct_bytes(&secret);
    if distinct < MIN_DISTINCT_BYTES {
        return Err(field(
            name,
            format!(
                "the secret has only {distinct} distinct byte values; at least \
                 {MIN_DISTINCT_BYTES} are needed (it looks like a placeholder): make one with \
                 `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`"
            ),
        ));
    }
    Ok(secret)
}

/// `echo secret > file` adds a newline that is not part of the secret.
fn trim_newline(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    bytes
}

/// The file of the systemd credential `name`: `$CREDENTIALS_DIRECTORY/name`.
fn credential_path(name: &str) -> Result<PathBuf, String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(format!(
            "{name:?} is not a credential's name (the first part of LoadCredential=NAME:PATH)"
        ));
    }
    let directory = std::env::var_os(CREDENTIALS_DIRECTORY).ok_or_else(|| {
        format!(
            "${CREDENTIALS_DIRECTORY} is not set: the credential {name:?} comes from systemd \
             (LoadCredential={name}:PATH in the unit); outside systemd use secret_file"
        )
    })?;
    Ok(Path::new(&directory).join(name))
}

/// How many different byte values `bytes` holds.
fn distinct_bytes(bytes: &[u8]) -> usize {
    let mut seen = [false; 256];
    for &byte in bytes {
        seen[usize::from(byte)] = true;
    }
    seen.iter().filter(|&&seen| seen).count()
}

/// Refuses a secret file that its group or other users may read or change
/// (after following symbolic links: the mode of the file read).
fn check_mode(path: &Path, name: &str) -> Result<(), ConfigError> {
    let mode = std::fs::metadata(path)
        .map_err(|error| field(name, format!("{}: {error}", path.display())))?
        .permissions()
        .mode()
        & 0o7777;
    if mode & 0o077 != 0 {
        return Err(field(
            name,
            format!(
                "{} is accessible by its group or by others (mode {mode:04o}): anyone who reads \
                 it can join the cluster; run `chmod 600 {}` (or, if another user must read \
                 it, set secret_file_mode_check = false)",
                path.display(),
                path.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_bytes_are_counted() {
        assert_eq!(distinct_bytes(b"                "), 1);
        assert_eq!(distinct_bytes(b"abababababababab"), 2);
        assert_eq!(distinct_bytes(b"0123456701234567"), 8);
        assert_eq!(distinct_bytes(&[0, 255, 0, 255]), 2);
    }
}
