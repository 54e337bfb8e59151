//! Building the page's files and serving them (natively only).
//!
//! [`build`] compiles this crate to `wasm32-unknown-unknown`, generates the
//! JavaScript glue with wasm-bindgen's CLI code (`wasm-bindgen-cli-support`, the
//! same version as the crate, as a library) and copies `static/` beside it: the result is a directory any static
//! host serves. The module is not run through binaryen's `wasm-opt`: Debian 12's
//! (version 108) rewrites wasm-bindgen's externref table so that the glue fails
//! at start-up (`WebAssembly.Table.set(): Argument 1 is invalid for table`);
//! `opt-level = "s"`, LTO and the dropped name section already keep it small.
//! Every text file and the module are also written compressed beside themselves
//! (`.br` with brotli, `.gz` with gzip, each at its best level, once per build),
//! and [`serve`] serves such a directory over HTTP, sending the compressed copy
//! with its `Content-Encoding` to a browser that accepts it.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::io::Write;

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
    /// The module's size in bytes.
    pub wasm_bytes: u64,
    /// The module's size compressed, as served to a browser that accepts it.
    pub wasm_compressed: Compressed,
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
    let mut compressed = Compressed::default();
    for folder in [out.to_owned(), pkg] {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            let served = path
                .extension()
                .and_then(|ext| ext.to_str())
                .is_some_and(|ext| COMPRESSED.contains(&ext));
            if served {
                let sizes = compress(&path)?;
                if path == module {
                    compressed = sizes;
                }
            }
        }
    }
    Ok(Built {
        dir: out.to_owned(),
        wasm_bytes: std::fs::metadata(&module)?.len(),
        wasm_compressed: compressed,
    })
}

/// The kinds of file written compressed too.
const COMPRESSED: [&str; 6] = ["wasm", "js", "html", "css", "svg", "json"];

/// A file's compressed sizes in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compressed {
    /// With gzip.
    pub gzip: u64,
    /// With brotli.
    pub brotli: u64,
}

/// Writes `path.gz` and `path.br` beside `path`.
fn compress(path: &Path) -> io::Result<Compressed> {
    let bytes = std::fs::read(path)?;
    let with = |ext: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(".");
        name.push(ext);
        PathBuf::from(name)
    };
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(&bytes)?;
    let gzip = gzip.finish()?;
    std::fs::write(with("gz"), &gzip)?;
    let mut brotli = Vec::new();
    {
        // Quality 11 (the best), a 4 MiB window (22 bits): more than the module.
        let mut writer = brotli::CompressorWriter::new(&mut brotli, 64 * 1024, 11, 22);
        writer.write_all(&bytes)?;
    }
    std::fs::write(with("br"), &brotli)?;
    Ok(Compressed {
        gzip: gzip.len() as u64,
        brotli: brotli.len() as u64,
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

/// Serves `dir` on `listener` until the task is dropped: a file's `.br` or `.gz`
/// copy, where [`build`] wrote one, to a browser whose `Accept-Encoding` takes
/// it (brotli first), with `Content-Encoding` set; the file itself otherwise.
pub async fn serve(listener: TcpListener, dir: PathBuf) -> io::Result<()> {
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    let app = axum::Router::new().fallback_service(files);
    axum::serve(listener, app).await
}

/// Binds `addr` (port 0 picks a free one) and returns the listener and the address
/// it got.
pub async fn bind(addr: SocketAddr) -> io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
