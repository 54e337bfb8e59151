//! The shared secret: read from `secret_file` or `secret_env`, and refused when
//! it is too short, too uniform to be a key, or in a file that other users may
//! read (as ssh refuses such a private key).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bully_core::wire::MIN_KEY_LEN;

use super::field;
use crate::error::ConfigError;

/// The fewest distinct byte values a secret may have: 16 spaces, or
/// "aaaaaaaaaaaaaaaa", is a placeholder, not a key. Random bytes, or their hex
/// or base64 text, have far more.
pub const MIN_DISTINCT_BYTES: usize = 8;

/// Where the secret comes from, as the file names it.
pub(super) struct SecretSource<'a> {
    pub(super) file: Option<&'a Path>,
    pub(super) env: Option<&'a str>,
    /// `secret_file_mode_check`.
    pub(super) mode_check: bool,
}

/// Reads the secret and checks it; `base` resolves a relative `secret_file`.
pub(super) fn read_secret(source: &SecretSource<'_>, base: &Path) -> Result<Vec<u8>, ConfigError> {
    let (name, secret) = match (source.file, source.env) {
        (Some(_), Some(_)) => {
            return Err(field(
                "secret_file",
                "give secret_file or secret_env, not both",
            ));
        }
        (None, None) => {
            return Err(field(
                "secret_file",
                "no secret: set secret_file (a file holding it) or secret_env (a variable holding it)",
            ));
        }
        (Some(path), None) => {
            let path = base.join(path);
            let mut bytes = std::fs::read(&path)
                .map_err(|error| field("secret_file", format!("{}: {error}", path.display())))?;
            if source.mode_check {
                check_mode(&path)?;
            }
            // `echo secret > file` adds a newline that is not part of the secret.
            while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                bytes.pop();
            }
            ("secret_file", bytes)
        }
        (None, Some(name)) => (
            "secret_env",
            std::env::var_os(name)
                .ok_or_else(|| field("secret_env", format!("the variable {name} is not set")))?
                .into_encoded_bytes(),
        ),
    };
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
fn check_mode(path: &Path) -> Result<(), ConfigError> {
    let mode = std::fs::metadata(path)
        .map_err(|error| field("secret_file", format!("{}: {error}", path.display())))?
        .permissions()
        .mode()
        & 0o7777;
    if mode & 0o077 != 0 {
        return Err(field(
            "secret_file",
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
