//! The ranking index of the bundled public catalog (data/), built once per fuzzing process:
//! shared by the targets that ask it (`#[path]`-included, each target is its own binary).
use std::path::Path;
use std::sync::LazyLock;

use ki_ranking::{CatalogRows, Index};

pub static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/catalog-2026-08-16-0022af0b.jsonl.zst");
    let mut rows = CatalogRows::new();
    for line in ki_model::export::read_export(&path).expect("the bundled export reads") {
        rows.push(&line.table, line.row, Some(line.line as u64));
    }
    Index::from_owned_rows(rows).expect("the bundled export indexes")
});
