//! The typed rows of `ki_model::rows` against the catalog's table specs: one type per table,
//! whose columns are the spec's columns in the spec's order, and every row of the bundled
//! snapshot (the public export, in data/) passes through its type unchanged.

use ki_catalog::schema::{self, API_VERSION, Kind};
use ki_model::rows::{Row, TABLE_NAMES};
use serde_json::{Map, Value, json};

fn sample(kind: Kind) -> Value {
    match kind {
        Kind::Uuid => json!("01a0032e-d5df-7898-9560-e4836c2af4ef"),
        Kind::Text => json!("text"),
        Kind::Digest => json!(format!("sha256:{}", "0".repeat(64))),
        Kind::Timestamp => json!("2026-08-15T02:02:57.440Z"),
        Kind::Count | Kind::PositiveCount => json!(3),
        Kind::Measure => json!(1.5),
        Kind::Bool => json!(true),
        Kind::Json => json!({"a": 1}),
        Kind::JsonArray => json!(["x"]),
        Kind::Enum(allowed) => json!(allowed[0]),
        Kind::SchemaVersion => json!(API_VERSION),
    }
}

#[test]
fn every_table_has_one_type_with_the_spec_s_columns_in_order() {
    assert_eq!(TABLE_NAMES, schema::table_names().collect::<Vec<_>>().as_slice());
    for table in schema::TABLES {
        let full: Map<String, Value> =
            table.columns.iter().map(|column| (column.json.to_string(), sample(column.kind))).collect();
        let typed = Row::from_map(table.name, full.clone()).unwrap_or_else(|error| panic!("{}: {error}", table.name));
        assert_eq!(typed.table(), table.name);
        let written: Vec<String> = typed.clone().into_map().keys().cloned().collect();
        let spec: Vec<String> = table.columns.iter().map(|column| column.json.to_string()).collect();
        assert_eq!(written, spec, "{}: the typed row's columns are not the spec's", table.name);
        assert_eq!(typed.into_map(), full, "{}: a full row changes when typed", table.name);
        // A column the spec marks nullable may be null in the type too; one it requires may not
        // (a JSON column is a `Value`, which holds null too: the catalog refuses it).
        for column in table.columns.iter().filter(|column| column.kind != Kind::Json) {
            let mut row = full.clone();
            row.insert(column.json.to_string(), Value::Null);
            let parsed = Row::from_map(table.name, row);
            assert_eq!(parsed.is_ok(), column.nullable, "{}.{}: nullability differs", table.name, column.json);
        }
    }
}

#[test]
fn every_row_of_the_bundled_snapshot_passes_through_its_type_unchanged() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(ki_catalog::BUNDLED_SNAPSHOT_NAME);
    let lines = ki_model::export::read_export(&path).unwrap();
    assert_eq!(lines.len(), 40_795);
    for line in lines {
        let typed = Row::from_map(&line.table, line.row.clone())
            .unwrap_or_else(|error| panic!("line {}: {error}", line.line))
            .into_map();
        assert_eq!(typed, line.row, "line {} ({}) changes when typed", line.line, line.table);
    }
}
