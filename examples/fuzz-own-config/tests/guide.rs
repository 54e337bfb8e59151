//! The guide, docs/guides/fuzz-your-config.md, shows this crate's code: each
//! file it quotes appears there whole, as one Rust block, so the page and
//! the crate cannot part.

use std::path::Path;

#[test]
fn the_guide_quotes_this_crates_files_whole() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(here.join("../../docs/guides/fuzz-your-config.md"))
        .expect("the guide beside the crate");
    for file in ["src/lib.rs", "fuzz_targets/my_config.rs", "tests/stable.rs"] {
        let code = std::fs::read_to_string(here.join(file)).expect("the crate's file");
        let block = format!("```rust\n{code}```\n");
        assert!(
            guide.contains(&block),
            "docs/guides/fuzz-your-config.md no longer shows {file} as it is"
        );
    }
}
