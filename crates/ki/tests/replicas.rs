//! Two `ki serve` replicas on one PostgreSQL catalog: an attestation posted to one is on
//! the other's run page within a second, and a revoked key is refused by both on their very
//! next request (keys, attestations and submissions are catalog rows, read per request).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{http, http_with_key, ki, start_server};

const SEED_WORKLOAD_RUN: &str = "01a00b1d-572d-7e7b-a36c-fbdbf71869ae";

fn postgres_base_url() -> String {
    std::env::var("KI_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

fn psql(sql: &str) {
    let output = Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs");
    assert!(output.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A schema of its own, dropped when the test ends (passed or not).
struct Schema(String);

impl Drop for Schema {
    fn drop(&mut self) {
        psql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0));
    }
}

fn create_key(database: &str, label: &str) -> String {
    let output = ki()
        .args(["admin", "key", "create", "--label", label, "--scope", "attest", "--database", database])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

fn attest(addr: &str, secret: &str, note: &str) -> u16 {
    let body = format!(r#"{{"kind":"environment_note","note":"{note}"}}"#);
    let path = format!("/api/v1/runs/{SEED_WORKLOAD_RUN}/attestations");
    http_with_key(addr, "POST", &path, "application/json", Some(secret), &body).expect("the replica answers").0
}

#[test]
fn two_replicas_share_attestations_and_revocations() {
    if Command::new("psql").arg("--version").output().is_err() {
        eprintln!("SKIPPED: psql is not installed to create a test schema");
        return;
    }
    let schema = Schema(format!("ki_replicas_{}", std::process::id()));
    psql(&format!("CREATE SCHEMA {}", schema.0));
    let database = format!("{}?options=-c%20search_path%3D{}", postgres_base_url(), schema.0);
    let dir = tempfile::tempdir().unwrap();
    let first = create_key(&database, "replica-test");
    let second = create_key(&database, "replica-test-2");

    // The first start imports the bundled snapshot; the second finds it there.
    let a = start_server(&dir.path().join("a"), &database);
    let b = start_server(&dir.path().join("b"), &database);

    // Posted to A, on B's page within a second.
    assert_eq!(attest(&a.addr, &first, "posted to replica A"), 201);
    let posted = Instant::now();
    loop {
        let (status, _, body) = http(&b.addr, "GET", &format!("/runs/{SEED_WORKLOAD_RUN}"), "text/html", "").unwrap();
        assert_eq!(status, 200);
        if body.contains("posted to replica A") {
            break;
        }
        assert!(posted.elapsed() < Duration::from_secs(1), "replica B does not show the attestation after 1 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let shown_after = posted.elapsed();
    eprintln!("replica B showed replica A's attestation {} ms after the POST returned", shown_after.as_millis());

    // Both keys work on both replicas; a revoked one is refused by both on the next request.
    assert_eq!(attest(&b.addr, &second, "second key on B"), 201);
    let revoked = ki().args(["admin", "key", "revoke", &first[..11], "--database", &database]).output().unwrap();
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    assert_eq!(attest(&a.addr, &first, "after revocation"), 401, "replica A still takes the revoked key");
    assert_eq!(attest(&b.addr, &first, "after revocation"), 401, "replica B still takes the revoked key");
    assert_eq!(attest(&a.addr, &second, "the other key on A"), 201, "an unrevoked key keeps working");
    let revoked = ki().args(["admin", "key", "revoke", &second[..11], "--database", &database]).output().unwrap();
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    assert_eq!(attest(&b.addr, &second, "after revocation"), 401);
    assert_eq!(attest(&a.addr, &second, "after revocation"), 401);
    drop((a, b));
}
