//! The data directory: the node's durable state (term, vote, incarnation) in one
//! file, replaced atomically at every change, and a lock that keeps a second agent
//! out.
//!
//! The file is JSON with a SHA-256 of its contents, so a torn, truncated or
//! edited file is told apart from a valid one and refused: a node that forgot its
//! vote could vote twice in one term.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use bully_core::wire::{ClusterId, Incarnation};
use bully_core::{DurableState, NodeId, Term};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::StateError;

/// The state file's name inside the data directory.
pub const STATE_FILE: &str = "state.json";
const LOCK_FILE: &str = "lock";
const FORMAT: &str = "bully-agent-state";
const VERSION: u32 = 1;

/// What survives a restart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    /// The node's term and vote.
    pub durable: DurableState,
    /// The incarnation of the last run: the next must be higher.
    pub incarnation: Incarnation,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    format: String,
    version: u32,
    cluster: u64,
    node: u64,
    term: u64,
    vote: Option<(u64, u64)>,
    incarnation: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    state: Body,
    sha256: String,
}

/// The data directory, locked for this process's life.
#[derive(Debug)]
pub struct DataDir {
    dir: PathBuf,
    cluster: ClusterId,
    node: NodeId,
    _lock: Flock<File>,
}

impl DataDir {
    /// Creates the directory if needed, takes its lock, and checks it can be
    /// written (before anything binds).
    pub fn open(dir: &Path, cluster: ClusterId, node: NodeId) -> Result<DataDir, StateError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| StateError::Io { path, source }
        };
        fs::create_dir_all(dir).map_err(io(dir))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        let lock = Flock::lock(lock, FlockArg::LockExclusiveNonblock)
            .map_err(|_| StateError::Locked { path: lock_path })?;
        Ok(DataDir {
            dir: dir.to_owned(),
            cluster,
            node,
            _lock: lock,
        })
    }

    /// The state file's path.
    pub fn state_path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// The stored state, or the initial one if there is no file yet. A file that
    /// is not exactly one the agent wrote for this cluster and node is an error.
    pub fn load(&self) -> Result<Stored, StateError> {
        let path = self.state_path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Stored::default());
            }
            Err(source) => return Err(StateError::Io { path, source }),
        };
        let corrupt = |reason: String| StateError::Corrupt {
            path: path.clone(),
            reason,
        };
        let on_disk: OnDisk =
            serde_json::from_slice(&bytes).map_err(|error| corrupt(error.to_string()))?;
        if on_disk.sha256 != checksum(&on_disk.state) {
            return Err(corrupt(
                "its checksum does not match its contents".to_owned(),
            ));
        }
        let body = on_disk.state;
        if body.format != FORMAT || body.version != VERSION {
            return Err(corrupt(format!(
                "format {:?} version {}, expected {FORMAT:?} version {VERSION}",
                body.format, body.version
            )));
        }
        if body.cluster != self.cluster.0 || body.node != self.node.0 {
            return Err(StateError::Foreign {
                path,
                found: format!("node {} of cluster {}", body.node, body.cluster),
                expected: format!("node {} of cluster {}", self.node.0, self.cluster.0),
            });
        }
        Ok(Stored {
            durable: DurableState {
                term: Term(body.term),
                vote: body.vote.map(|(term, id)| (Term(term), NodeId(id))),
                first_boot: false,
            },
            incarnation: Incarnation(body.incarnation),
        })
    }

    /// A writer for the driver's persist callback (it needs no lock of its own:
    /// this `DataDir` keeps the lock while the process lives).
    pub fn writer(&self) -> StateWriter {
        StateWriter {
            dir: self.dir.clone(),
            cluster: self.cluster,
            node: self.node,
        }
    }
}

/// Writes the state file atomically: a temporary file, fsync, rename over the
/// old one, fsync the directory. A crash at any point leaves the old file or the
/// new one, whole.
#[derive(Clone, Debug)]
pub struct StateWriter {
    dir: PathBuf,
    cluster: ClusterId,
    node: NodeId,
}

impl StateWriter {
    /// Replaces the state file with `stored`, durably.
    pub fn write(&self, stored: Stored) -> Result<(), StateError> {
        let body = Body {
            format: FORMAT.to_owned(),
            version: VERSION,
            cluster: self.cluster.0,
            node: self.node.0,
            term: stored.durable.term.0,
            vote: stored.durable.vote.map(|(term, id)| (term.0, id.0)),
            incarnation: stored.incarnation.0,
        };
        let sha256 = checksum(&body);
        let mut text = serde_json::to_vec_pretty(&OnDisk {
            state: body,
            sha256,
        })
        .expect("a struct of numbers and strings serializes");
        text.push(b'\n');

        let temporary = self.dir.join(format!("{STATE_FILE}.tmp"));
        let target = self.dir.join(STATE_FILE);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| StateError::Io { path, source }
        };
        let mut file = File::create(&temporary).map_err(io(&temporary))?;
        file.write_all(&text).map_err(io(&temporary))?;
        file.sync_all().map_err(io(&temporary))?;
        drop(file);
        fs::rename(&temporary, &target).map_err(io(&target))?;
        // The rename itself is durable only once the directory is.
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(io(&self.dir))
    }
}

fn checksum(body: &Body) -> String {
    let bytes = serde_json::to_vec(body).expect("a struct of numbers and strings serializes");
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path) -> DataDir {
        DataDir::open(dir, ClusterId(7), NodeId(2)).unwrap()
    }

    #[test]
    fn a_written_state_is_read_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let data = open(dir.path());
        assert_eq!(
            data.load().unwrap(),
            Stored::default(),
            "no file: the initial state"
        );
        let stored = Stored {
            durable: DurableState {
                term: Term(12),
                vote: Some((Term(12), NodeId(5))),
                first_boot: false,
            },
            incarnation: Incarnation(3),
        };
        data.writer().write(stored).unwrap();
        drop(data);
        assert_eq!(open(dir.path()).load().unwrap(), stored);
        assert!(!dir.path().join("state.json.tmp").exists());
    }

    #[test]
    fn a_second_agent_cannot_take_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let _first = open(dir.path());
        let error = DataDir::open(dir.path(), ClusterId(7), NodeId(2)).unwrap_err();
        assert!(matches!(error, StateError::Locked { .. }), "{error}");
    }

    #[test]
    fn corrupt_edited_and_foreign_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let data = open(dir.path());
        let path = data.state_path();
        fs::write(&path, b"\x00garbage").unwrap();
        assert!(matches!(data.load(), Err(StateError::Corrupt { .. })));

        data.writer().write(Stored::default()).unwrap();
        let edited = fs::read_to_string(&path)
            .unwrap()
            .replace("\"term\": 0", "\"term\": 9");
        fs::write(&path, edited).unwrap();
        let error = data.load().unwrap_err().to_string();
        assert!(error.contains("checksum"), "{error}");

        let other = DataDir::open(&dir.path().join("other"), ClusterId(8), NodeId(2)).unwrap();
        other.writer().write(Stored::default()).unwrap();
        fs::copy(other.state_path(), &path).unwrap();
        let error = data.load().unwrap_err();
        assert!(matches!(error, StateError::Foreign { .. }), "{error}");
        assert!(error.to_string().contains("cluster 8"), "{error}");
    }

    #[test]
    fn a_directory_under_a_file_is_an_error_even_for_root() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a file");
        fs::write(&file, b"").unwrap();
        let error = DataDir::open(&file.join("data"), ClusterId(7), NodeId(2)).unwrap_err();
        assert!(matches!(error, StateError::Io { .. }), "{error}");
    }
}
