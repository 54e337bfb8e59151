//! `fuzz-stable`: the bully fuzz targets without libFuzzer, on a stable
//! toolchain. It replays the committed corpus (`fuzz/corpus/<target>/`), then
//! runs inputs mutated from it as libFuzzer mutates (`bully_fuzz::mutate`) on
//! every core, from a seed it prints; a crash is saved as
//! `fuzz/artifacts/<target>/crash-<sha1>`, where `cargo fuzz run <target>
//! <file>` replays it, and the run fails naming it and the panic.
//!
//! It runs the search in a child process of itself, so that an input that kills
//! the process without a panic (a stack overflow, an abort) is still found: each
//! thread keeps the input it is running in a file, and the parent replays those
//! one at a time when the child dies.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bully_fuzz::runner::{self, Crash, Search, Target};

const USAGE: &str = "\
usage: fuzz-stable <decode|node|cluster> [FILE|DIR ...]

Without files: replays fuzz/corpus/<target>/, then runs mutated inputs.
With files: runs just those (as `cargo fuzz run <target> FILE` does).

Environment:
  BULLY_FUZZ_INPUTS   inputs to run after the corpus (default 200000; unlimited
                      when only BULLY_FUZZ_SECONDS is set)
  BULLY_FUZZ_SECONDS  stop after this many seconds
  BULLY_FUZZ_SEED     the seed (decimal or 0x-hex; default: from the clock)
  BULLY_FUZZ_THREADS  threads, each on its own stream of the seed (default: cores)
  BULLY_FUZZ_MAX_LEN  longest input made (default: 4096, or the longest corpus file)
  BULLY_FUZZ_KEEP_GOING=1  go on after a crash, and save the first of each kind
  BULLY_FUZZ_TRACE    the targets print what they do (use with one FILE)";

/// Set in the child that does the work.
const WORKER: &str = "BULLY_FUZZ_STABLE_WORKER";
/// Inputs run when neither a count nor a time is given: CI's count.
const DEFAULT_INPUTS: u64 = 200_000;
/// How often a long search says how far it got.
const PROGRESS: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(name) = args.first().and_then(|name| name.to_str()) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if name == "-h" || name == "--help" {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let Some(target) = runner::target(name) else {
        eprintln!("fuzz-stable: no target {name:?}\n{USAGE}");
        return ExitCode::from(2);
    };
    let files: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
    if !files.is_empty() {
        return replay_files(target, &files);
    }
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz/stable has a parent")
        .to_path_buf();
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("fuzz-stable: {error}");
            return ExitCode::from(2);
        }
    };
    if std::env::var_os(WORKER).is_none() {
        supervise(target, &fuzz, &settings)
    } else {
        work(target, &fuzz, &settings)
    }
}

/// What the environment asks for.
struct Settings {
    seed: u64,
    inputs: u64,
    seconds: Option<f64>,
    threads: usize,
    max_len: Option<usize>,
    keep_going: bool,
}

impl Settings {
    fn from_env() -> Result<Settings, String> {
        let seconds: Option<f64> = parse_env("BULLY_FUZZ_SECONDS", |v| v.parse().ok())?;
        let inputs = parse_env("BULLY_FUZZ_INPUTS", |v| v.parse().ok())?;
        let seed = parse_env("BULLY_FUZZ_SEED", |v| match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse().ok(),
        })?;
        let threads = parse_env("BULLY_FUZZ_THREADS", |v| v.parse().ok())?;
        Ok(Settings {
            seed: seed.unwrap_or_else(clock_seed),
            inputs: inputs.unwrap_or(if seconds.is_some() {
                u64::MAX
            } else {
                DEFAULT_INPUTS
            }),
            seconds,
            threads: threads.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |cores| cores.get())
            }),
            max_len: parse_env("BULLY_FUZZ_MAX_LEN", |v| v.parse().ok())?,
            keep_going: std::env::var("BULLY_FUZZ_KEEP_GOING").is_ok_and(|v| v == "1"),
        })
    }
}

fn parse_env<T>(name: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, String> {
    match std::env::var(name) {
        Ok(value) => parse(value.trim())
            .map(Some)
            .ok_or_else(|| format!("{name}={value:?} is not a number")),
        Err(_) => Ok(None),
    }
}

/// A seed for a run nobody gave one: it is printed, so the run can be repeated.
fn clock_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// Runs the search in a child and, if the child dies without reporting, finds
/// the input that killed it.
fn supervise(target: Target, fuzz: &Path, settings: &Settings) -> ExitCode {
    let exe = std::env::current_exe().expect("the path of this program");
    let status = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(WORKER, "1")
        .env("BULLY_FUZZ_SEED", settings.seed.to_string())
        .status();
    let status = match status {
        Ok(status) => status,
        Err(error) => {
            eprintln!("fuzz-stable: could not start {}: {error}", exe.display());
            return ExitCode::from(2);
        }
    };
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        // The child found a crash and said so.
        Some(1) => ExitCode::FAILURE,
        _ => find_killer(target, fuzz, settings, &exe, status),
    }
}

/// The child died: replay each thread's in-flight input alone to find the one.
fn find_killer(
    target: Target,
    fuzz: &Path,
    settings: &Settings,
    exe: &Path,
    status: ExitStatus,
) -> ExitCode {
    eprintln!(
        "fuzz-stable {}: the search died ({status}) without a panic (seed {:#x}); \
         replaying the inputs it was running",
        target.name, settings.seed
    );
    let dir = fuzz.join("artifacts").join(target.name);
    let mut held: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| {
                    path.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| name.starts_with("inflight-"))
                })
                .collect()
        })
        .unwrap_or_default();
    held.sort();
    let killer = held.iter().find(|file| {
        Command::new(exe)
            .arg(target.name)
            .arg(file)
            .env(WORKER, "1")
            .status()
            .is_ok_and(|alone| !alone.success())
    });
    let input = killer.map(|file| std::fs::read(file).unwrap_or_default());
    for file in &held {
        let _ = std::fs::remove_file(file);
    }
    match input {
        Some(input) => {
            eprintln!("fuzz-stable {}: this input kills it alone", target.name);
            match runner::save_crash(&fuzz.join("artifacts"), target.name, &input) {
                Ok(path) => print_replay(target, &path),
                Err(error) => eprintln!("fuzz-stable: could not save the crash: {error}"),
            }
        }
        None => eprintln!("fuzz-stable: no in-flight input kills it alone"),
    }
    ExitCode::FAILURE
}

/// The child's work: the corpus, then the search.
fn work(target: Target, fuzz: &Path, settings: &Settings) -> ExitCode {
    let corpus_dir = fuzz.join("corpus").join(target.name);
    let artifacts = fuzz.join("artifacts");
    let corpus = match runner::read_inputs(&corpus_dir) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("fuzz-stable: {}: {error}", corpus_dir.display());
            return ExitCode::from(2);
        }
    };
    let inflight = artifacts.join(target.name);
    let start = std::time::Instant::now();
    if let Err(crash) = runner::replay(target, &corpus, Some(&inflight.join("inflight-corpus"))) {
        return report(target, &artifacts, &crash);
    }
    let _ = std::fs::remove_file(inflight.join("inflight-corpus"));
    let replayed = start.elapsed();
    let corpus: Vec<Vec<u8>> = corpus.into_iter().map(|(_, input)| input).collect();
    let longest = corpus.iter().map(Vec::len).max().unwrap_or(0);
    let search = Search {
        seed: settings.seed,
        inputs: settings.inputs,
        threads: settings.threads,
        time_limit: settings.seconds.map(Duration::from_secs_f64),
        max_len: settings.max_len.unwrap_or(longest.max(4096)),
        inflight: Some(inflight),
        progress: Some(PROGRESS),
        keep_going: settings.keep_going,
    };
    if search.keep_going {
        // Every crash's message is reported below, once per kind: the default
        // hook would print each of thousands.
        std::panic::set_hook(Box::new(|_| {}));
    }
    let limit = match (search.inputs, settings.seconds) {
        (u64::MAX, Some(seconds)) => format!("for {seconds} s"),
        (inputs, Some(seconds)) => format!("{inputs} inputs or {seconds} s"),
        (inputs, None) => format!("{inputs} inputs"),
    };
    eprintln!(
        "fuzz-stable {}: {} corpus inputs passed in {:.1} s; now {limit} on {} threads, \
         at most {} bytes each, seed {:#x} (BULLY_FUZZ_SEED={:#x} repeats them)",
        target.name,
        corpus.len(),
        replayed.as_secs_f64(),
        search.threads,
        search.max_len,
        search.seed,
        search.seed
    );
    match runner::search(target, &corpus, &search) {
        Ok(searched) => {
            let secs = searched.elapsed.as_secs_f64();
            let crashed: u64 = searched.crashes.iter().map(|&(_, count)| count).sum();
            eprintln!(
                "fuzz-stable {}: {} inputs in {secs:.1} s ({:.0}/s), {} (seed {:#x})",
                target.name,
                searched.inputs,
                searched.inputs as f64 / secs,
                match crashed {
                    0 => "no crash".to_owned(),
                    n => format!("{n} crashed, {} kinds", searched.crashes.len()),
                },
                search.seed
            );
            for (crash, count) in &searched.crashes {
                eprintln!("\n{count} inputs crashed as this one did:");
                report(target, &artifacts, crash);
            }
            if searched.crashes.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(crash) => report(target, &artifacts, &crash),
    }
}

/// Saves a crash and says where, what, and how to replay it.
fn report(target: Target, artifacts: &Path, crash: &Crash) -> ExitCode {
    eprintln!(
        "\nfuzz-stable {}: CRASH in {}\n  panic: {}",
        target.name, crash.found, crash.message
    );
    match runner::save_crash(artifacts, target.name, &crash.input) {
        Ok(path) => print_replay(target, &path),
        Err(error) => eprintln!("fuzz-stable: could not save the crash: {error}"),
    }
    ExitCode::FAILURE
}

fn print_replay(target: Target, path: &Path) {
    let name = target.name;
    let path = path.display();
    eprintln!(
        "  saved: {path}\n  replay: cargo run --release --manifest-path fuzz/stable/Cargo.toml -- \
         {name} {path}\n      or: cd fuzz && cargo +nightly fuzz run {name} {path}\n  \
         (BULLY_FUZZ_TRACE=1 prints what the target does)"
    );
}

/// Runs the given files (or every file of the given directories).
fn replay_files(target: Target, paths: &[PathBuf]) -> ExitCode {
    let mut count = 0;
    for path in paths {
        let inputs = match runner::read_inputs(path) {
            Ok(inputs) => inputs,
            Err(error) => {
                eprintln!("fuzz-stable: {}: {error}", path.display());
                return ExitCode::from(2);
            }
        };
        if let Err(crash) = runner::replay(target, &inputs, None) {
            eprintln!(
                "\nfuzz-stable {}: CRASH in {}\n  panic: {}",
                target.name, crash.found, crash.message
            );
            return ExitCode::FAILURE;
        }
        count += inputs.len();
    }
    eprintln!("fuzz-stable {}: {count} inputs, no crash", target.name);
    ExitCode::SUCCESS
}
