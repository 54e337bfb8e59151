//! Counting instructions: this program runs itself again under valgrind's
//! callgrind, counting only inside one function.

use std::process::Command;

/// Instructions callgrind counts inside `function` for `args` of this program, and
/// the instructions inside the library adapters' `start`, `on_message` and
/// `on_deadline` (the libraries' own work plus handing messages over).
pub fn callgrind(function: &str, args: &[String]) -> Option<(u64, u64)> {
    let exe = std::env::current_exe().ok()?;
    let out_file =
        std::env::temp_dir().join(format!("bully-peers-{}.callgrind", std::process::id()));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(format!("--toggle-collect={function}"))
        .arg(exe)
        .args(args)
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let total = stderr
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|v| v.trim().parse().ok())?;
    let annotate = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .stderr(std::process::Stdio::null())
        .arg(&out_file)
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&out_file);
    let text = String::from_utf8_lossy(&annotate.stdout);
    let library = text
        .lines()
        .filter(|l| {
            // A function's own total is the line naming its object file in
            // brackets; the other lines are code inlined into it from elsewhere.
            ["on_message [", "on_deadline [", "start ["]
                .iter()
                .any(|f| l.contains(&format!("bully_peers::peer::Peer>::{f}")))
        })
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|n| n.replace(',', "").parse::<u64>().ok())
        .sum();
    Some((total, library))
}
