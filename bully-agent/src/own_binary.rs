//! The agent's own binary, which it runs again as the command's supervisor and
//! as `exec-child` (a new file keeps running the old code after an upgrade).

use std::io;
use std::path::PathBuf;

/// The agent's own binary, to re-execute as supervisor or `exec-child`:
/// `/proc/self/exe` on Linux, which still runs after the file was replaced (a
/// package upgrade while the agent runs); `ps` still shows the agent's path,
/// as the new process's `argv[0]`.
pub fn own_binary() -> io::Result<std::process::Command> {
    use std::os::unix::process::CommandExt;
    let path = std::env::current_exe()?;
    // After a replacement the link reads "PATH (deleted)".
    let shown = path.to_string_lossy();
    let shown = shown
        .strip_suffix(" (deleted)")
        .unwrap_or(&shown)
        .to_owned();
    let program = if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        path
    };
    let mut command = std::process::Command::new(program);
    command.arg0(shown);
    Ok(command)
}
