//! The data directory: the node's durable state (term, vote, incarnation, and
//! whether its first boot was declared) in one file, replaced atomically at
//! every change, and a lock that keeps a second agent out.
//!
//! The file is JSON with a SHA-256 of its contents, so a torn, truncated or
//! edited file is told apart from a valid one and refused: a node that forgot its
//! vote could vote twice in one term.
//!
//! A missing file is not a first boot: the member may have run and lost its
//! data directory (a replaced disk, a pod rescheduled without its volume), so
//! [`DataDir::load`] says it found nothing and the node starts as a restart,
//! which waits a follower lease before it votes. Only `bully-agent init`
//! ([`DataDir::declare_first_boot`]) writes a state that votes at once.

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
    /// Written only while true: the checksum is taken over the serialized
    /// body, so leaving a false value out keeps every file written before the
    /// field existed valid (same bytes, same sum), and reads them as a
    /// restart. The format's version stays 1 for the same reason; an agent
    /// older than the field refuses a file that holds it (an unknown field),
    /// which it would only meet after a downgrade between `init` and the
    /// member's first vote.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    first_boot: bool,
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

    /// The stored state, or `None` when there is no state file: a member that
    /// never ran, or one that lost its state, which nothing here can tell
    /// apart (the caller starts it from [`Stored::default`], a restart). A
    /// file that is not exactly one the agent wrote for this cluster and node
    /// is an error.
    pub fn load(&self) -> Result<Option<Stored>, StateError> {
        let path = self.state_path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
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
        Ok(Some(Stored {
            durable: DurableState {
                term: Term(body.term),
                vote: body.vote.map(|(term, id)| (Term(term), NodeId(id))),
                first_boot: body.first_boot,
            },
            incarnation: Incarnation(body.incarnation),
        }))
    }

    /// `bully-agent init`: declares this member's first boot in a new cluster
    /// by writing [`DurableState::first_boot`] (incarnation 0), so that its
    /// first start votes at once. Refused when a state file exists: that
    /// member has run, or was declared already, and its file may hold
    /// promises that replacing it would forget. Returns the file's path.
    pub fn declare_first_boot(&self) -> Result<PathBuf, StateError> {
        let path = self.state_path();
        // Under the directory's lock: no agent can write the file between
        // this look and the write below.
        match fs::symlink_metadata(&path) {
            Ok(_) => return Err(StateError::Exists { path }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(StateError::Io { path, source }),
        }
        self.writer().write(Stored {
            durable: DurableState::first_boot(),
            incarnation: Incarnation(0),
        })?;
        Ok(path)
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
            first_boot: stored.durable.first_boot,
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
        assert_eq!(data.load().unwrap(), None, "no file: nothing found");
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
        assert_eq!(open(dir.path()).load().unwrap(), Some(stored));
        assert!(!dir.path().join("state.json.tmp").exists());
    }

    /// A state file as the agent wrote it before `first_boot` existed (node 2
    /// of cluster 7, term 12, a vote for 5 in term 12, incarnation 3), byte
    /// for byte, checksum included.
    const WRITTEN_BEFORE_FIRST_BOOT: &str = r#"{
  "state": {
    "format": "bully-agent-state",
    "version": 1,
    "cluster": 7,
    "node": 2,
    "term": 12,
    "vote": [
      12,
      5
    ],
    "incarnation": 3
  },
  "sha256": "1a06b7b27996b2aef9b4755781b94ed9bbbd4e43159f84c8ef0214e7048541ba"
}
"#;

    #[test]
    fn a_file_written_before_first_boot_existed_loads_as_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let data = open(dir.path());
        fs::write(data.state_path(), WRITTEN_BEFORE_FIRST_BOOT).unwrap();
        let stored = Stored {
            durable: DurableState {
                term: Term(12),
                vote: Some((Term(12), NodeId(5))),
                first_boot: false,
            },
            incarnation: Incarnation(3),
        };
        assert_eq!(data.load().unwrap(), Some(stored), "its checksum verifies");
        // A state that is no first boot is written as before: an older agent
        // reads what this one writes, until a first boot is declared.
        data.writer().write(stored).unwrap();
        assert_eq!(
            fs::read_to_string(data.state_path()).unwrap(),
            WRITTEN_BEFORE_FIRST_BOOT
        );
        // Declaring a first boot by hand is an edit the checksum catches.
        let declared = WRITTEN_BEFORE_FIRST_BOOT.replace(
            "\"incarnation\": 3\n",
            "\"incarnation\": 3,\n    \"first_boot\": true\n",
        );
        assert_ne!(declared, WRITTEN_BEFORE_FIRST_BOOT);
        fs::write(data.state_path(), declared).unwrap();
        let error = data.load().unwrap_err().to_string();
        assert!(error.contains("checksum"), "{error}");
    }

    #[test]
    fn a_declared_first_boot_round_trips_until_the_node_promises_something() {
        let dir = tempfile::tempdir().unwrap();
        let data = open(dir.path());
        let path = data.declare_first_boot().unwrap();
        assert_eq!(path, data.state_path());
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .contains("\"first_boot\": true"),
            "the declaration is in the file"
        );
        let declared = Stored {
            durable: DurableState::first_boot(),
            incarnation: Incarnation(0),
        };
        assert_eq!(data.load().unwrap(), Some(declared));
        // The run rewrites it with its incarnation, still a first boot ...
        let running = Stored {
            incarnation: Incarnation(1),
            ..declared
        };
        data.writer().write(running).unwrap();
        drop(data);
        let data = open(dir.path());
        assert_eq!(data.load().unwrap(), Some(running));
        // ... until the node's first vote ends it.
        let voted = Stored {
            durable: DurableState {
                term: Term(1),
                vote: Some((Term(1), NodeId(3))),
                first_boot: false,
            },
            incarnation: Incarnation(1),
        };
        data.writer().write(voted).unwrap();
        assert!(
            !fs::read_to_string(data.state_path())
                .unwrap()
                .contains("first_boot")
        );
        assert_eq!(data.load().unwrap(), Some(voted));
    }

    #[test]
    fn a_first_boot_is_never_declared_over_a_state_file() {
        let dir = tempfile::tempdir().unwrap();
        let data = open(dir.path());
        let voted = Stored {
            durable: DurableState {
                term: Term(4),
                vote: Some((Term(4), NodeId(2))),
                first_boot: false,
            },
            incarnation: Incarnation(9),
        };
        data.writer().write(voted).unwrap();
        let error = data.declare_first_boot().unwrap_err();
        assert!(matches!(error, StateError::Exists { .. }), "{error}");
        assert!(error.to_string().contains("bully-agent run"), "{error}");
        assert_eq!(data.load().unwrap(), Some(voted), "the state is untouched");
        // A second declaration is refused too: the first may have run since.
        let fresh = tempfile::tempdir().unwrap();
        let data = open(fresh.path());
        data.declare_first_boot().unwrap();
        assert!(matches!(
            data.declare_first_boot(),
            Err(StateError::Exists { .. })
        ));
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
