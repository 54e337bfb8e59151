//! Building the page's files and serving them (natively only).
//!
//! [`build`] compiles this crate to `wasm32-unknown-unknown`, generates the
//! JavaScript glue with wasm-bindgen's CLI code (`wasm-bindgen-cli-support`, the
//! same version as the crate, as a library) and copies `static/` beside it: the result is a directory any static
//! host serves. The module is not run through binaryen's `wasm-opt`: Debian 12's
//! (version 108) rewrites wasm-bindgen's externref table so that the glue fails
//! at start-up (`WebAssembly.Table.set(): Argument 1 is invalid for table`);
//! `opt-level = "s"`, LTO and the dropped name section already keep it small.
//! [`serve`] serves such a directory over HTTP.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use tokio::net::TcpListener;
use tower_http::services::ServeDir;

/// This crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where [`build`] puts the site unless told otherwise: `examples/web/dist`.
pub fn default_out_dir() -> PathBuf {
    crate_dir().join("dist")
}

/// What [`build`] produced.
#[derive(Clone, Debug)]
pub struct Built {
    /// The site's directory.
    pub dir: PathBuf,
    /// The module's size in bytes, as served.
    pub wasm_bytes: u64,
}

/// Builds the site into `out`: the wasm module and its glue under `out/pkg`, the
/// page's files at the top.
pub fn build(out: &Path) -> io::Result<Built> {
    let dir = crate_dir();
    // A target directory of its own, so that building from inside this crate's
    // tests never waits for the lock of the build that runs them.
    let target = dir.join("target").join("site");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    run(Command::new(cargo)
        .args([
            "build",
            "--lib",
            "--release",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target))?;
    let wasm = target
        .join("wasm32-unknown-unknown")
        .join("release")
        .join("bully_web.wasm");
    let pkg = out.join("pkg");
    std::fs::create_dir_all(&pkg)?;
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&wasm)
        .web(true)
        .map_err(|error| glue_error(&wasm, error))?
        .typescript(false)
        // As the CLI does: `init()` finds the module beside the glue. (The
        // library's default leaves the page to pass its path.)
        .omit_default_module_path(false)
        // Function names and the toolchain's versions serve nobody in the page.
        .remove_name_section(true)
        .remove_producers_section(true)
        .generate(&pkg)
        .map_err(|error| glue_error(&wasm, error))?;
    let module = pkg.join("bully_web_bg.wasm");
    for entry in std::fs::read_dir(dir.join("static"))? {
        let entry = entry?;
        std::fs::copy(entry.path(), out.join(entry.file_name()))?;
    }
    Ok(Built {
        dir: out.to_owned(),
        wasm_bytes: std::fs::metadata(&module)?.len(),
    })
}

fn glue_error(wasm: &Path, error: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("wasm-bindgen on {}: {error:#}", wasm.display()))
}

fn run(command: &mut Command) -> io::Result<()> {
    let status = command.status().map_err(|error| {
        io::Error::new(
            error.kind(),
            format!("cannot run {:?}: {error}", command.get_program()),
        )
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{command:?} failed: {status}")))
    }
}

/// Serves `dir` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, dir: PathBuf) -> io::Result<()> {
    let app = axum::Router::new().fallback_service(ServeDir::new(dir));
    axum::serve(listener, app).await
}

/// Binds `addr` (port 0 picks a free one) and returns the listener and the address
/// it got.
pub async fn bind(addr: SocketAddr) -> io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
