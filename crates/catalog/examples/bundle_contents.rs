//! Writes `data/artifacts-2026-12-01.jsonl.zst`, the contents bundle (data/README.md), from
//! this repository: `cargo run -p ki-catalog --example bundle_contents`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let entries = ki_catalog::contents::bundle_entries(&root)?;
    let out = root.join("data").join(ki_catalog::contents::BUNDLED_CONTENTS_NAME);
    let size = ki_catalog::contents::write_bundle(&entries, &out)?;
    let raw: usize = entries.iter().map(|e| e.content.len()).sum();
    println!("{}: {} contents, {raw} bytes, {size} bytes compressed", out.display(), entries.len());
    Ok(())
}
