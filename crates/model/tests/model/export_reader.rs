//! Reading exports: the shared snapshot, and each kind of bad input named by file and line.

use std::io::Write;
use std::path::{Path, PathBuf};

use ki_model::export::{ExportError, MAX_LINE_BYTES, open_export, read_export};

fn shared_export() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
    path
}

fn zstd_bytes(text: &str) -> Vec<u8> {
    zstd::encode_all(text.as_bytes(), 3).unwrap()
}

const GOOD_LINES: &str = concat!(
    r#"{"table":"sources","row":{"id":"s1","slug":"a","kind":"leaderboard"}}"#,
    "\n",
    r#"{"table":"operation_aliases","row":{"operationId":"o1","alias":"x"}}"#,
    "\n",
);

#[test]
fn the_shared_export_streams_every_line_with_its_table() {
    let mut reader = open_export(shared_export()).unwrap();
    let mut count = 0usize;
    let mut tables: Vec<String> = Vec::new();
    for line in &mut reader {
        let line = line.unwrap();
        count += 1;
        assert_eq!(line.line, count, "line numbers count from 1 without gaps");
        if tables.last() != Some(&line.table) {
            tables.push(line.table.clone());
        }
    }
    // The README of the shared registry documents 40,795 lines in this table order.
    assert_eq!(count, 40_795);
    let documented = [
        "sources",
        "projects",
        "operations",
        "operation_aliases",
        "workloads",
        "implementations",
        "benchmark_runs",
        "measurements",
        "record_events",
        "artifacts",
        "model_revisions",
        "serving_stack_revisions",
        "serving_configurations",
        "serving_workloads",
        "serving_runs",
        "serving_measurements",
    ];
    assert_eq!(tables, documented);
    let (consumed, total) = reader.progress();
    assert_eq!(total, std::fs::metadata(shared_export()).unwrap().len());
    assert_eq!(consumed, total, "the whole compressed file was read");
}

#[test]
fn plain_and_compressed_files_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write_file(dir.path(), "a.jsonl", GOOD_LINES.as_bytes());
    // The name says nothing: compression is recognized by its magic number.
    let packed = write_file(dir.path(), "b.jsonl", &zstd_bytes(GOOD_LINES));
    let from_plain = read_export(&plain).unwrap();
    let from_packed = read_export(&packed).unwrap();
    assert_eq!(from_plain, from_packed);
    assert_eq!(from_plain.len(), 2);
    assert_eq!(from_plain[1].table, "operation_aliases");
    assert_eq!(from_plain[1].row["alias"], "x");
}

#[test]
fn a_truncated_zstd_stream_is_a_read_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(shared_export()).unwrap();
    let path = write_file(dir.path(), "cut.jsonl.zst", &bytes[..bytes.len() / 2]);
    let mut lines_before_error = 0;
    let mut error = None;
    for item in open_export(&path).unwrap() {
        match item {
            Ok(_) => lines_before_error += 1,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let error = error.expect("a truncated stream must not end quietly");
    assert!(matches!(error, ExportError::Read { compressed: true, .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with(&format!("{}:", path.display())), "{message}");
    assert!(message.contains("zstd"), "{message}");
    // Lines before the cut were readable; the error is on the line after them (or on
    // the partial line itself when the cut falls inside one, which then fails as JSON).
    assert!(error.line() > lines_before_error, "{message}");
    assert!(lines_before_error > 1000, "half the file holds many whole lines");
}

#[test]
fn a_truncated_plain_file_fails_on_its_last_partial_line() {
    let dir = tempfile::tempdir().unwrap();
    let cut = &GOOD_LINES[..GOOD_LINES.len() - 10];
    let path = write_file(dir.path(), "cut.jsonl", cut.as_bytes());
    let error = read_export(&path).unwrap_err();
    assert!(matches!(error, ExportError::Json { line: 2, .. }), "{error}");
}

#[test]
fn an_invalid_json_line_is_named_by_number() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{GOOD_LINES}{{\"table\":\"sources\",\"row\":{{\"id\":\"s2\",}}\n");
    let path = write_file(dir.path(), "bad.jsonl.zst", &zstd_bytes(&text));
    let error = read_export(&path).unwrap_err();
    assert_eq!(error.line(), 3);
    let message = error.to_string();
    assert!(message.starts_with(&format!("{}:3: invalid JSON:", path.display())), "{message}");
    // The reader carries on after a bad line: a caller may collect every problem.
    let outcomes: Vec<bool> = open_export(&path).unwrap().map(|item| item.is_ok()).collect();
    assert_eq!(outcomes, [true, true, false]);
}

#[test]
fn an_unknown_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{GOOD_LINES}{{\"table\":\"user_sessions\",\"row\":{{\"id\":\"u\"}}}}\n");
    let path = write_file(dir.path(), "unknown.jsonl", text.as_bytes());
    let error = read_export(&path).unwrap_err();
    assert!(matches!(&error, ExportError::UnknownTable { line: 3, table, .. } if table == "user_sessions"), "{error}");
    assert!(error.to_string().contains("unknown table \"user_sessions\""), "{error}");
}

#[test]
fn missing_columns_and_wrong_shapes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"table":"benchmark_runs","row":{"id":"r"}}"#,
            "benchmark_runs row lacks the required column \"runDigest\"",
        ),
        (r#"{"table":"sources","row":[1,2]}"#, "the row of a sources line must be a JSON object"),
        (r#"{"table":"sources"}"#, "missing field `row`"),
        (r#"{"table":"sources","row":{"id":"s","slug":"a"},"extra":1}"#, "unknown field `extra`"),
        (r#"[1]"#, "invalid JSON"),
        (r#"{"table":"sources","row":{"id":"s","slug":"a","n":123456789012345678901234}}"#, "above 2^53"),
    ];
    for (index, (line, expected)) in cases.iter().enumerate() {
        let path = write_file(dir.path(), &format!("case{index}.jsonl"), format!("{GOOD_LINES}{line}\n").as_bytes());
        let error = read_export(&path).unwrap_err();
        assert_eq!(error.line(), 3, "{line}");
        let message = error.to_string();
        assert!(message.contains(expected), "{line}: {message}");
    }
}

#[test]
fn a_missing_file_is_an_open_error() {
    let error = read_export("/nonexistent/export.jsonl.zst").unwrap_err();
    assert!(matches!(error, ExportError::Open { .. }));
    assert!(error.to_string().starts_with("/nonexistent/export.jsonl.zst: cannot open:"), "{error}");
}

/// Issue 17: `ki catalog import /dev/zero` allocated until it aborted. The first byte is NUL,
/// which no JSON text holds: refused at once, naming the file and line, and the reader stops.
#[test]
fn dev_zero_is_refused_at_its_first_byte() {
    let mut reader = open_export("/dev/zero").unwrap();
    let error = reader.next().unwrap().unwrap_err();
    assert!(matches!(error, ExportError::NulByte { line: 1, column: 1, .. }), "{error:?}");
    assert_eq!(error.to_string(), "/dev/zero:1: byte 1 is a NUL byte: not a catalog export (JSON lines)");
    assert!(reader.next().is_none(), "nothing is read after it");
    assert!(reader.progress().0 <= 1 << 17, "read one buffer, not the stream: {:?}", reader.progress());
}

#[test]
fn a_nul_byte_is_named_by_line_and_byte_in_a_compressed_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{GOOD_LINES}{{\"table\":\u{0}}}\n");
    let path = write_file(dir.path(), "nul.jsonl.zst", &zstd_bytes(&text));
    let error = read_export(&path).unwrap_err();
    assert!(matches!(error, ExportError::NulByte { line: 3, column: 10, .. }), "{error:?}");
    assert!(error.to_string().starts_with(&format!("{}:3: byte 10 is a NUL byte", path.display())), "{error}");
}

/// A line may be 4 MiB long (newline included), not a byte more; a longer one ends the reading.
#[test]
fn a_line_over_4_mib_is_refused_without_reading_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let line_of = |length: usize| {
        let head = r#"{"table":"sources","row":{"id":"s1","slug":""#;
        let tail = "\"}}\n";
        format!("{head}{}{tail}", "a".repeat(length - head.len() - tail.len()))
    };
    let longest = write_file(dir.path(), "longest.jsonl", line_of(MAX_LINE_BYTES).as_bytes());
    let read = read_export(&longest).unwrap();
    assert_eq!(read[0].row["slug"].as_str().unwrap().len(), MAX_LINE_BYTES - 48);

    let text = format!("{}{GOOD_LINES}", line_of(MAX_LINE_BYTES + 1));
    let too_long = write_file(dir.path(), "too-long.jsonl", text.as_bytes());
    let outcomes: Vec<_> = open_export(&too_long).unwrap().collect();
    assert_eq!(outcomes.len(), 1, "the reader stops at the long line");
    let error = outcomes.into_iter().next().unwrap().unwrap_err();
    assert!(matches!(error, ExportError::LineTooLong { line: 1, .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("{}:1: the line is longer than 4194304 bytes (4 MiB): not a catalog export", too_long.display())
    );
}

/// Issue 17: an empty file imported as a valid snapshot ("nothing new").
#[test]
fn an_empty_file_is_not_an_export() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in
        [("empty.jsonl", Vec::new()), ("blank.jsonl", b"\n \n\r\n".to_vec()), ("empty.jsonl.zst", zstd_bytes(""))]
    {
        let path = write_file(dir.path(), name, &bytes);
        let error = read_export(&path).unwrap_err();
        assert!(matches!(error, ExportError::Empty { .. }), "{name}: {error:?}");
        assert_eq!(error.to_string(), format!("{}: empty: not a catalog export", path.display()));
    }
}

#[test]
fn text_that_is_not_utf8_is_named_by_line_and_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = GOOD_LINES.as_bytes().to_vec();
    bytes.extend_from_slice(b"{\"table\":\"sources\",\"row\":{\"id\":\"\xff\"}}\n");
    bytes.extend_from_slice(GOOD_LINES.as_bytes());
    let path = write_file(dir.path(), "latin1.jsonl", &bytes);
    let outcomes: Vec<_> = open_export(&path).unwrap().collect();
    let error = outcomes[2].as_ref().unwrap_err();
    assert!(matches!(error, ExportError::NotUtf8 { line: 3, column: 33, .. }), "{error:?}");
    assert!(error.to_string().ends_with(":3: byte 33 is not UTF-8 text"), "{error}");
    assert_eq!(outcomes.len(), 5, "a line-level problem: the reader goes on to the lines after it");
}
