//! The stable runner's engine: replays a corpus through a target and searches
//! for a crash with [`Mutator`]-made inputs on several threads, without
//! libFuzzer (so on a stable toolchain), and saves a crash where `cargo fuzz run`
//! replays it (`fuzz/artifacts/<target>/crash-<sha1 of the input>`).
//!
//! `fuzz/stable` wraps it in the `fuzz-stable` command, and `tests/corpus.rs`
//! calls it from `cargo test`.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};

use super::mutate::Mutator;

/// A fuzz target: its name (as `cargo fuzz` knows it) and its body.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// `decode`, `node` or `cluster`.
    pub name: &'static str,
    /// The function libFuzzer calls with each input.
    pub run: fn(&[u8]),
}

/// Every target, in the order CI runs them.
pub const TARGETS: [Target; 3] = [
    Target {
        name: "decode",
        run: super::decode,
    },
    Target {
        name: "node",
        run: super::node,
    },
    Target {
        name: "cluster",
        run: super::cluster,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.into_iter().find(|target| target.name == name)
}

/// An input that made a target panic.
#[derive(Clone, Debug)]
pub struct Crash {
    /// The input.
    pub input: Vec<u8>,
    /// The panic's message.
    pub message: String,
    /// Where the input came from: a file, or the thread and input number.
    pub found: String,
}

/// Runs `target` on `input`, returning the panic's message if it panics.
pub fn run_one(target: Target, input: &[u8]) -> Result<(), String> {
    panic::catch_unwind(AssertUnwindSafe(|| (target.run)(input))).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic with a payload that is not a string".to_owned())
    })
}

/// The files under `path` (itself if it is a file), sorted, with their bytes.
pub fn read_inputs(path: &Path) -> io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = if path.is_dir() {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let file = entry?.path();
            if file.is_file() {
                files.push(file);
            }
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    files.sort();
    files
        .into_iter()
        .map(|file| std::fs::read(&file).map(|data| (file, data)))
        .collect()
}

/// Runs every input through `target`; the first that panics is the crash.
/// `inflight`, if given, holds each input while it runs (see [`Search::inflight`]).
pub fn replay(
    target: Target,
    inputs: &[(PathBuf, Vec<u8>)],
    inflight: Option<&Path>,
) -> Result<(), Crash> {
    let mut holder = inflight.map(InFlight::create);
    for (file, input) in inputs {
        if let Some(Ok(holder)) = &mut holder {
            holder.hold(input);
        }
        run_one(target, input).map_err(|message| Crash {
            input: input.clone(),
            message,
            found: file.display().to_string(),
        })?;
    }
    Ok(())
}

/// How to search.
#[derive(Clone, Debug)]
pub struct Search {
    /// The run's seed: thread `t` draws from stream `t` of it.
    pub seed: u64,
    /// Inputs to try, over all threads (`u64::MAX`: until `time_limit`).
    pub inputs: u64,
    /// Threads, each with its own stream of the seed.
    pub threads: usize,
    /// Stop after this long, even if inputs remain.
    pub time_limit: Option<Duration>,
    /// The longest input to make.
    pub max_len: usize,
    /// A directory where thread `t` keeps the input it is running in
    /// `inflight-<t>`: if the process dies without a panic (a stack overflow,
    /// an abort), the input that killed it is there.
    pub inflight: Option<PathBuf>,
    /// Print a progress line this often.
    pub progress: Option<Duration>,
    /// Go on after a crash (libFuzzer's `-ignore_crashes`), keeping the first
    /// crash of each kind ([`Searched::crashes`]): one known bug then hides no
    /// other.
    pub keep_going: bool,
}

/// What a search did.
#[derive(Clone, Debug)]
pub struct Searched {
    /// Inputs run.
    pub inputs: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// With [`Search::keep_going`]: the first crash of each kind (its message
    /// with the numbers taken out), and how many inputs crashed that way.
    pub crashes: Vec<(Crash, u64)>,
}

/// A crash's kind: its message with every number taken out, so that the same
/// broken check with other ids, terms or counts is one kind.
pub fn crash_kind(message: &str) -> String {
    let mut kind = String::with_capacity(message.len());
    for c in message.chars() {
        if !c.is_ascii_digit() {
            kind.push(c);
        } else if !kind.ends_with('#') {
            kind.push('#');
        }
    }
    kind
}

/// Runs `target` on inputs mutated from `corpus` until `search.inputs` ran, the
/// time limit passed, or an input panicked (the crash; the other threads stop).
pub fn search(target: Target, corpus: &[Vec<u8>], search: &Search) -> Result<Searched, Crash> {
    let threads = search.threads.max(1);
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let kept = Mutex::new(Vec::new());
    let start = Instant::now();
    let crash = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let quota = share(search.inputs, threads, thread);
                let shared = Shared {
                    stop: &stop,
                    done: &done,
                    kept: &kept,
                };
                std::thread::Builder::new()
                    .name(format!("fuzz-{thread}"))
                    .spawn_scoped(scope, move || {
                        worker(target, corpus, search, (thread, quota), shared, start)
                    })
                    .expect("a thread for the search")
            })
            .collect();
        let mut last_report = start;
        while !workers.iter().all(|worker| worker.is_finished()) {
            std::thread::sleep(Duration::from_millis(50));
            if search
                .progress
                .is_some_and(|every| last_report.elapsed() >= every)
            {
                last_report = Instant::now();
                let ran = done.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64();
                eprintln!(
                    "{}: {ran} inputs in {secs:.0} s ({:.0}/s)",
                    target.name,
                    ran as f64 / secs
                );
            }
        }
        workers
            .into_iter()
            .filter_map(|worker| match worker.join() {
                Ok(result) => result.err(),
                Err(payload) => panic::resume_unwind(payload),
            })
            .next()
    });
    match crash {
        Some(crash) => Err(crash),
        None => Ok(Searched {
            inputs: done.load(Ordering::Relaxed),
            elapsed: start.elapsed(),
            crashes: kept
                .into_inner()
                .unwrap_or_else(|poison| poison.into_inner()),
        }),
    }
}

/// Thread `thread`'s part of `total` inputs.
fn share(total: u64, threads: usize, thread: usize) -> u64 {
    if total == u64::MAX {
        return u64::MAX;
    }
    let threads = threads as u64;
    total / threads + u64::from((thread as u64) < total % threads)
}

/// What the search's threads share.
#[derive(Clone, Copy)]
struct Shared<'a> {
    stop: &'a AtomicBool,
    done: &'a AtomicU64,
    kept: &'a Mutex<Vec<(Crash, u64)>>,
}

impl Shared<'_> {
    /// Keeps `crash` if it is the first of its kind, else counts it.
    fn keep(&self, crash: Crash) {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let kind = crash_kind(&crash.message);
        match kept
            .iter_mut()
            .find(|(seen, _)| crash_kind(&seen.message) == kind)
        {
            Some((_, count)) => *count += 1,
            None => kept.push((crash, 1)),
        }
    }
}

fn worker(
    target: Target,
    corpus: &[Vec<u8>],
    search: &Search,
    (thread, quota): (usize, u64),
    shared: Shared<'_>,
    start: Instant,
) -> Result<(), Crash> {
    let Shared { stop, done, .. } = shared;
    let mut mutator = Mutator::new(search.seed, thread as u64, search.max_len);
    let mut holder = match &search.inflight {
        Some(dir) => Some(
            InFlight::create(&dir.join(format!("inflight-{thread}")))
                .map_err(|error| setup_failure(&format!("{}: {error}", dir.display())))?,
        ),
        None => None,
    };
    let mut input = Vec::with_capacity(search.max_len);
    let mut ran = 0u64;
    while ran < quota && !stop.load(Ordering::Relaxed) {
        let out_of_time = search
            .time_limit
            .is_some_and(|limit| ran % 64 == 0 && start.elapsed() >= limit);
        if out_of_time {
            break;
        }
        mutator.next_input(corpus, &mut input);
        if let Some(holder) = &mut holder {
            holder.hold(&input);
        }
        if let Err(message) = run_one(target, &input) {
            let crash = Crash {
                input: input.clone(),
                message,
                found: format!(
                    "thread {thread} (stream {thread} of seed {:#x}), input {}",
                    search.seed,
                    ran + 1
                ),
            };
            if !search.keep_going {
                stop.store(true, Ordering::Relaxed);
                return Err(crash);
            }
            shared.keep(crash);
        }
        ran += 1;
        done.fetch_add(1, Ordering::Relaxed);
    }
    if let (Some(holder), Some(dir)) = (holder, &search.inflight) {
        drop(holder);
        let _ = std::fs::remove_file(dir.join(format!("inflight-{thread}")));
    }
    Ok(())
}

fn setup_failure(what: &str) -> Crash {
    Crash {
        input: Vec::new(),
        message: format!("the runner could not keep its in-flight input: {what}"),
        found: "setup".to_owned(),
    }
}

/// A file that holds the input being run, rewritten in place for each one.
struct InFlight {
    file: File,
}

impl InFlight {
    fn create(path: &Path) -> io::Result<InFlight> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        Ok(InFlight {
            file: File::create(path)?,
        })
    }

    /// Best effort: a failed write only loses the input if the process dies.
    fn hold(&mut self, input: &[u8]) {
        let _ = self
            .file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.write_all(input))
            .and_then(|()| self.file.set_len(input.len() as u64));
    }
}

/// `<artifacts>/<target>/crash-<sha1 of the input>`, as libFuzzer names it.
pub fn crash_path(artifacts: &Path, target: &str, input: &[u8]) -> PathBuf {
    let digest = Sha1::digest(input);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    artifacts.join(target).join(format!("crash-{hex}"))
}

/// Writes `input` to its [`crash_path`] and returns the path.
pub fn save_crash(artifacts: &Path, target: &str, input: &[u8]) -> io::Result<PathBuf> {
    let path = crash_path(artifacts, target, input);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, input)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target with a bug: it panics on inputs that start with `0xB0`.
    fn fragile(data: &[u8]) {
        assert!(data.first() != Some(&0xB0), "a 0xB0 got in");
    }

    const FRAGILE: Target = Target {
        name: "fragile",
        run: fragile,
    };

    fn options(inputs: u64, threads: usize) -> Search {
        Search {
            seed: 11,
            inputs,
            threads,
            time_limit: None,
            max_len: 64,
            inflight: None,
            progress: None,
            keep_going: false,
        }
    }

    #[test]
    fn a_search_finds_the_crashing_byte_and_names_it() {
        let corpus = vec![vec![0x00, 1, 2, 3]];
        let crash = search(FRAGILE, &corpus, &options(100_000, 2)).expect_err("found");
        assert_eq!(crash.input.first(), Some(&0xB0));
        assert_eq!(crash.message, "a 0xB0 got in");
        assert!(crash.found.contains("seed 0xb"), "{}", crash.found);
    }

    #[test]
    fn a_search_without_a_crash_runs_every_input() {
        let corpus = vec![vec![1, 2, 3]];
        let never = Target {
            name: "never",
            run: |_| {},
        };
        let searched = search(never, &corpus, &options(1_001, 2)).expect("no crash");
        assert_eq!(searched.inputs, 1_001);
    }

    #[test]
    fn going_on_after_crashes_keeps_the_first_of_each_kind() {
        let two_bugs = Target {
            name: "two bugs",
            run: |data| match data.first() {
                Some(&byte) if byte >= 0xF0 => panic!("{byte} is too high"),
                Some(&byte) if byte < 0x10 => panic!("{byte} is too low"),
                _ => {}
            },
        };
        let corpus = vec![vec![0x80, 1, 2, 3]];
        let search = Search {
            keep_going: true,
            ..options(20_000, 2)
        };
        let searched = super::search(two_bugs, &corpus, &search).expect("it goes on");
        assert_eq!(searched.inputs, 20_000);
        let mut kinds: Vec<String> = searched
            .crashes
            .iter()
            .map(|(crash, _)| crash_kind(&crash.message))
            .collect();
        kinds.sort();
        assert_eq!(kinds, ["# is too high", "# is too low"]);
        assert!(searched.crashes.iter().all(|&(_, count)| count >= 1));
    }

    #[test]
    fn a_crash_is_saved_under_its_sha1_and_replays() {
        let dir = std::env::temp_dir().join(format!("bully-fuzz-runner-{}", std::process::id()));
        let path = save_crash(&dir, "fragile", b"\xB0 boom").expect("written");
        // sha1("\xB0 boom"), as `printf '\260 boom' | sha1sum` prints it.
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            "crash-20c6762e800900b0aea3b03c11d32d5094390765"
        );
        let inputs = read_inputs(&dir.join("fragile")).expect("readable");
        let crash = replay(FRAGILE, &inputs, None).expect_err("it crashes again");
        assert!(crash.found.contains("crash-20c6762e"), "{}", crash.found);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
