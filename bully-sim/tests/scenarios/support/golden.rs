//! Golden digests of the simulator's traces: the proof that a change meant to
//! move code (a rename, a split, a new driver layout) moved no behaviour.
//!
//! A sweep feeds every run's trace (the JSON lines `simulate` prints) into one
//! SHA-256 digest per sweep, and compares it with the digest recorded in
//! `tests/golden/traces/<sweep>.txt` when the number of runs so far matches a
//! line there (`<runs> <digest>`: one line for the sweep's default count, one
//! for the count CI runs). A sweep run at another count checks the recorded
//! counts it passes on the way. `BULLY_GOLDEN=record` writes the digest at the
//! count the sweep ended on instead, for a change that means to alter
//! behaviour; the diff of the golden file then shows which sweeps moved.
//! `BULLY_GOLDEN=off` checks nothing: mutation testing sets it, because a
//! golden file catches every change of behaviour, right or wrong, and the
//! mutation score is to measure the tests of the claims.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bully_sim::Simulation;
use sha2::{Digest, Sha256};

/// The running digest of one sweep's traces.
pub(crate) struct GoldenTraces {
    name: String,
    hasher: Sha256,
    runs: u64,
    recorded: BTreeMap<u64, String>,
    checked: u64,
    /// The recorded counts at which the digest differed: reported by
    /// [`finish`](Self::finish), after the sweep's own checks have spoken.
    differed: Vec<u64>,
}

impl GoldenTraces {
    /// A digest for the sweep `name` (a file name: letters, digits, `-`).
    pub(crate) fn new(name: &str) -> GoldenTraces {
        let recorded = std::fs::read_to_string(path(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (runs, digest) = line.split_once(' ')?;
                Some((runs.parse().ok()?, digest.to_owned()))
            })
            .collect();
        GoldenTraces {
            name: name.to_owned(),
            hasher: Sha256::new(),
            runs: 0,
            recorded,
            checked: 0,
            differed: Vec::new(),
        }
    }

    /// Starts recording `sim`'s trace unless the golden files stand aside
    /// (`BULLY_GOLDEN=off`, where tracing would only cost time). Call it
    /// before the simulation starts.
    pub(crate) fn trace(&self, sim: &mut Simulation) {
        if !off() {
            sim.enable_trace();
        }
    }

    /// Adds one run's trace (see [`trace`](Self::trace)) and, when the count
    /// of runs reaches a recorded one, compares the digest so far.
    pub(crate) fn add(&mut self, sim: &Simulation) {
        if off() {
            return;
        }
        assert!(
            !sim.trace().is_empty(),
            "{}: a traced run records its start at least",
            self.name
        );
        self.hasher.update(sim.trace_json_lines().as_bytes());
        // A separator, so that two runs never hash like one.
        self.hasher.update(b"\n--\n");
        self.runs += 1;
        if recording() {
            return;
        }
        if let Some(expected) = self.recorded.get(&self.runs) {
            if hex(&self.hasher.clone().finalize()) != *expected {
                self.differed.push(self.runs);
            }
            self.checked += 1;
        }
    }

    /// Ends the sweep: records its digest under `BULLY_GOLDEN=record`, else
    /// says which recorded counts it checked and fails if any differed.
    pub(crate) fn finish(self) {
        if recording() {
            let mut lines = self.recorded;
            lines.insert(self.runs, hex(&self.hasher.finalize()));
            let text: String = lines
                .iter()
                .map(|(runs, digest)| format!("{runs} {digest}\n"))
                .collect();
            std::fs::create_dir_all(path(&self.name).parent().unwrap()).unwrap();
            std::fs::write(path(&self.name), text).unwrap();
            eprintln!(
                "{}: golden digest recorded at {} runs",
                self.name, self.runs
            );
        } else {
            eprintln!(
                "{}: {} golden digests checked ({} runs; recorded at {:?})",
                self.name,
                self.checked,
                self.runs,
                self.recorded.keys().collect::<Vec<_>>()
            );
            assert!(
                self.differed.is_empty(),
                "{}: the traces of the first {:?} runs differ from the golden digests \
                 (tests/golden/traces/{}.txt). A change meant to keep behaviour changed \
                 it; a change meant to alter it records the new digests with \
                 BULLY_GOLDEN=record",
                self.name,
                self.differed,
                self.name
            );
        }
    }
}

fn recording() -> bool {
    std::env::var("BULLY_GOLDEN").is_ok_and(|value| value == "record")
}

/// `BULLY_GOLDEN=off`: mutation testing (`.ci/mutants`).
pub(crate) fn off() -> bool {
    std::env::var("BULLY_GOLDEN").is_ok_and(|value| value == "off")
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/traces")
        .join(format!("{name}.txt"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
