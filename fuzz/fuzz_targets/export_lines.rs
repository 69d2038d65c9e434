//! Feeds arbitrary bytes to the catalog-export line reader (`ki catalog import`'s front door:
//! zstd detection, bounded lines, UTF-8, the row shape) and whatever rows it accepts to the
//! verifier (every digest, key and cross-reference recomputed). A panic, abort, timeout or
//! out-of-memory is a finding; so is an error that does not name the input and its line, a
//! line number that goes backwards, or an accepted row of an unknown table.
#![no_main]

use std::path::PathBuf;

use ki_model::export::{ExportError, export_reader, required_columns};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let name = PathBuf::from("fuzz.jsonl");
    let reader = export_reader(name, std::io::Cursor::new(data.to_vec()), data.len() as u64).expect("memory opens");
    let mut lines = Vec::new();
    let mut last_line = 0;
    for item in reader {
        match item {
            Ok(line) => {
                assert!(line.line > last_line, "line numbers go forward");
                last_line = line.line;
                let required = required_columns(&line.table).expect("an accepted row is of a known table");
                assert!(required.iter().all(|column| line.row.contains_key(*column)));
                lines.push(line);
            }
            Err(error) => {
                let message = error.to_string();
                assert!(message.starts_with("fuzz.jsonl:"), "{message}");
                match error {
                    ExportError::Empty { .. } => assert!(lines.is_empty()),
                    ExportError::Open { .. } => {}
                    other => {
                        assert!(other.line() > last_line, "{message}");
                        last_line = other.line();
                    }
                }
            }
        }
    }
    let report = ki_model::verify::verify_export(&lines);
    assert_eq!(report.rows(), lines.len() as u64);
});
