//! `std_cluster` runs its story over real UDP on 127.0.0.1 and exits 0.

use std::process::Command;

#[test]
fn std_cluster_kills_the_leader_re_elects_and_exits_0() {
    let output = Command::new(env!("CARGO_BIN_EXE_std_cluster"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    for line in [
        "-> everyone follows 3 (term 1)",
        "-> 1 and 2 follow 2 (term 2)",
        "-> everyone follows 3 (term 3)",
        "(3 sent 2 Resign)",
        "ok: every step went as described",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}
