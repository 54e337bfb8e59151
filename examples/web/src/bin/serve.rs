//! Builds the browser simulator and serves it on 127.0.0.1.
//!
//! ```sh
//! cargo run --manifest-path examples/web/Cargo.toml --bin serve
//! ```
//! then open <http://127.0.0.1:8080/>. `--no-build` serves what is there;
//! `--build-only` writes the site (to `examples/web/dist`, or `--out DIR`) for a
//! static host and exits.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;

use bully_web::site;
use clap::Parser;

/// Build and serve the browser simulator.
#[derive(Debug, Parser)]
struct Args {
    /// Address to serve on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Where to write the site.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Serve the site as it is, without building it.
    #[arg(long, conflicts_with = "build_only")]
    no_build: bool,
    /// Build the site and exit.
    #[arg(long)]
    build_only: bool,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let out = args.out.unwrap_or_else(site::default_out_dir);
    if !args.no_build {
        let built = site::build(&out)?;
        println!(
            "built {} (module: {} bytes, {} with brotli, {} with gzip)",
            built.dir.display(),
            built.wasm_bytes,
            built.wasm_compressed.brotli,
            built.wasm_compressed.gzip
        );
    }
    if args.build_only {
        return Ok(());
    }
    let (listener, addr) = site::bind(args.addr).await?;
    println!("serving {} on http://{addr}/ (Ctrl-C stops)", out.display());
    tokio::select! {
        served = site::serve(listener, out) => served?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
