//! The agent's errors: each says what is wrong and where, in one line.

use std::path::PathBuf;

/// A configuration the agent refuses, before anything binds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The configuration file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, misses a field, has an unknown one, or a value
    /// of the wrong type (the message names the field and the line).
    #[error("{}: {message}", path.display())]
    Parse {
        /// The configuration file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A field's value is refused.
    #[error("`{field}`: {message}")]
    Field {
        /// The field, as a path (`members[2].address`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

/// The durable state file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Reading, writing or syncing failed (an unwritable data directory, a full disk).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a state file the agent wrote (truncated, edited, damaged).
    #[error("{}: corrupt state file ({reason}); it is never ignored: restore it from a backup or remove it if this node's vote may be forgotten", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file belongs to another cluster or another node.
    #[error("{}: this state belongs to {found}, not to {expected}: is data_dir shared with another agent?", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Who it belongs to.
        found: String,
        /// Who reads it.
        expected: String,
    },
    /// `bully-agent init` found a state file: it never replaces one.
    #[error("{}: a state file exists, so this member has run (or was declared new) already; `bully-agent init` never replaces it, as that would forget the promises it holds: start the member with `bully-agent run`", path.display())]
    Exists {
        /// The state file.
        path: PathBuf,
    },
    /// Another agent holds the data directory.
    #[error("{}: another bully-agent is using this data directory", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
}
