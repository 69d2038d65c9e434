//! The web's state in the catalog (migration 0004), on both backends: keys stored hashed,
//! scope and quota enforced in the writing transaction, a revocation seen by a second
//! handle at once, and an older JSON-lines state file migrated once.

use crate::support::TestDb;
use ki_catalog::{AttestationKind, CatalogError, KeyRefusal, NewAttestation, Scope, SubmittedDocument};

const RUN: &str = "01a00b1d-572d-7e7b-a36c-fbdbf71869ae";

fn attestation(kind: AttestationKind) -> NewAttestation {
    NewAttestation { run_id: RUN.into(), kind, observed_ns: Some(19_400), evidence_url: None, note: None }
}

fn refusal<T: std::fmt::Debug>(result: Result<T, CatalogError>) -> KeyRefusal {
    match result {
        Err(CatalogError::KeyRefused(refusal)) => refusal,
        other => panic!("expected a key refusal, got {other:?}"),
    }
}

async fn keys_scopes_quota_and_revocation(db: TestDb) {
    let catalog = db.open().await;
    let (key, secret) = catalog.create_api_key("tester", &[Scope::Attest], 2).await.unwrap();
    assert!(secret.starts_with("ki_") && secret.len() > 40);
    assert_eq!(key.hash, ki_catalog::hash_key(&secret));
    let listed = catalog.api_keys().await.unwrap();
    assert_eq!(listed, vec![key.clone()]);
    assert!(!format!("{listed:?}").contains(&secret), "the secret is never stored");

    assert_eq!(refusal(catalog.authorize(None, Scope::Attest).await), KeyRefusal::NoKey);
    assert_eq!(refusal(catalog.authorize(Some("ki_wrong"), Scope::Attest).await), KeyRefusal::UnknownKey);
    assert_eq!(refusal(catalog.authorize(Some(&secret), Scope::Submit).await), KeyRefusal::MissingScope(Scope::Submit));
    let filed = catalog.add_attestation(Some(&secret), attestation(AttestationKind::Reproduced)).await.unwrap();
    assert_eq!((filed.attester.as_str(), filed.key_id.as_str()), ("tester", key.id.as_str()));
    catalog.add_attestation(Some(&secret), attestation(AttestationKind::EnvironmentNote)).await.unwrap();
    assert_eq!(
        refusal(catalog.add_attestation(Some(&secret), attestation(AttestationKind::Reproduced)).await),
        KeyRefusal::QuotaExceeded
    );
    let stored = catalog.attestations_of_run(RUN).await.unwrap();
    assert_eq!(
        stored.iter().map(|a| a.kind).collect::<Vec<_>>(),
        [AttestationKind::Reproduced, AttestationKind::EnvironmentNote]
    );
    assert_eq!(stored[0], filed);

    // A second handle on the same catalog (another replica) sees the key, and its
    // revocation takes effect for both at once.
    let other = db.open().await;
    let (_, fresh) = other.create_api_key("second", &[Scope::Attest, Scope::Submit], 10).await.unwrap();
    catalog.authorize(Some(&fresh), Scope::Submit).await.unwrap();
    other.revoke_api_key(&key.prefix).await.unwrap();
    assert_eq!(refusal(catalog.authorize(Some(&secret), Scope::Attest).await), KeyRefusal::UnknownKey);
    assert!(matches!(other.revoke_api_key("nope").await, Err(CatalogError::Refused(_))));

    let document = SubmittedDocument {
        kind: "OperationSpec".into(),
        name: "x".into(),
        title: None,
        digest: "sha256:00".into(),
        manifest: serde_json::json!({"kind": "OperationSpec"}),
        project_slug: None,
    };
    let submission = other.add_submission(Some(&fresh), "a bundle".into(), vec![document]).await.unwrap();
    assert_eq!(catalog.submission(&submission.id).await.unwrap().as_ref(), Some(&submission));
    let published = catalog.mark_submission_published(&submission.id).await.unwrap();
    assert!(published.published_at.is_some());
    let again = catalog.mark_submission_published(&submission.id).await.unwrap();
    assert_eq!(again.published_at, published.published_at, "the first publication time stays");
    assert_eq!(catalog.submission("not-an-id").await.unwrap(), None);
    catalog.close().await;
    other.close().await;
}
on_both_backends!(keys_scopes_quota_and_revocation);

/// The evidence link a run's page shows is checked where it is stored: kept in normal form,
/// or refused with nothing written, whoever the caller.
async fn evidence_urls_are_checked_where_they_are_stored(db: TestDb) {
    let catalog = db.open().await;
    let (_, secret) = catalog.create_api_key("tester", &[Scope::Attest], 10).await.unwrap();
    let with_url =
        |url: &str| NewAttestation { evidence_url: Some(url.into()), ..attestation(AttestationKind::Reproduced) };
    let filed = catalog.add_attestation(Some(&secret), with_url("https://Example.org/run/1")).await.unwrap();
    assert_eq!(filed.evidence_url.as_deref(), Some("https://example.org/run/1"));
    for hostile in [
        "javascript:alert(1)",
        "https://good.example@evil.example/",
        "https://evil.example\\@good/",
        "https://Exämple.org/run/1",
    ] {
        match catalog.add_attestation(Some(&secret), with_url(hostile)).await {
            Err(CatalogError::Refused(ki_catalog::Refusal::EvidenceUrl { url, .. })) => assert_eq!(url, hostile),
            other => panic!("{}: {hostile} must be refused, got {other:?}", db.name),
        }
    }
    assert_eq!(catalog.attestations_of_run(RUN).await.unwrap(), vec![filed], "{}: only the good one", db.name);
    catalog.close().await;
}
on_both_backends!(evidence_urls_are_checked_where_they_are_stored);

async fn an_older_state_file_is_migrated_once(db: TestDb) {
    let catalog = db.open().await;
    let directory = tempfile::tempdir().unwrap();
    let log = directory.path().join("web-log.jsonl");
    let hash = ki_catalog::hash_key("ki_old_secret_0123456789");
    let key_id = "01a00000-0000-7000-8000-00000000000a";
    std::fs::write(
        &log,
        format!(
            "{{\"entry\":\"key\",\"id\":\"{key_id}\",\"prefix\":\"ki_old_secr\",\"hash\":\"{hash}\",\"label\":\"old\",\"scopes\":[\"attest\"],\"dailyQuota\":5,\"createdAt\":\"2026-11-30T10:00:00.000Z\"}}\n\
             {{\"entry\":\"attestation\",\"id\":\"01a00000-0000-7000-8000-00000000000b\",\"runId\":\"{RUN}\",\"kind\":\"reproduced\",\"observedNs\":19500,\"attester\":\"old\",\"keyId\":\"{key_id}\",\"createdAt\":\"2026-11-30T10:01:00.000Z\"}}\n\
             {{\"entry\":\"revoke\",\"key_id\":\"{key_id}\"}}\n"
        ),
    )
    .unwrap();
    let first = catalog.import_web_log(&log).await.unwrap();
    assert_eq!((first.keys, first.attestations, first.revocations), (1, 1, 1));
    let second = catalog.import_web_log(&log).await.unwrap();
    assert_eq!((second.keys, second.attestations, second.revocations), (0, 0, 0), "a second run adds nothing");
    assert_eq!(catalog.attestations_of_run(RUN).await.unwrap().len(), 1);
    assert!(catalog.api_keys().await.unwrap()[0].revoked);
    assert_eq!(
        refusal(catalog.authorize(Some("ki_old_secret_0123456789"), Scope::Attest).await),
        KeyRefusal::UnknownKey
    );

    std::fs::write(&log, "{\"entry\":\"key\"\n").unwrap();
    let error = catalog.import_web_log(&log).await.unwrap_err().to_string();
    assert!(error.contains("web-log.jsonl:1"), "{error}");
    catalog.close().await;
}
on_both_backends!(an_older_state_file_is_migrated_once);
