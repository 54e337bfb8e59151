//! A test harness for the allocation tests, whose counting allocator is
//! process-wide: every case runs on the main thread, with no other thread
//! alive (libtest runs a test on a thread of its own while its main thread
//! allocates). It speaks as much of libtest's command line as `cargo test`
//! and `cargo nextest` use: `--list` (with `--format terse`), a name filter,
//! `--exact`, and `--ignored` (there are none).

/// A named case.
pub(crate) type Case = (&'static str, fn());

/// Runs the cases the command line selects, one after the other, and prints
/// each as libtest does; a failing case panics, which fails the binary.
pub(crate) fn run(cases: &[Case]) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|arg| arg == name);
    let exact = flag("--exact");
    // Options that take a value; their values are not filters.
    let valued = ["--format", "--test-threads", "--color", "-Z", "--logfile"];
    let mut filters = Vec::new();
    let mut skip_value = false;
    for arg in &args {
        if skip_value {
            skip_value = false;
        } else if valued.contains(&arg.as_str()) {
            skip_value = true;
        } else if !arg.starts_with('-') {
            filters.push(arg.as_str());
        }
    }
    let selected = cases.iter().filter(|(name, _)| {
        filters.is_empty()
            || filters.iter().any(|filter| {
                if exact {
                    name == filter
                } else {
                    name.contains(filter)
                }
            })
    });
    if flag("--list") {
        if !flag("--ignored") {
            for (name, _) in selected {
                println!("{name}: test");
            }
        }
        return;
    }
    if flag("--ignored") {
        return;
    }
    for (name, case) in selected {
        case();
        println!("test {name} ... ok");
    }
}
