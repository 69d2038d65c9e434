//! Feeds arbitrary bytes to the manifest front door (YAML/JSON parse, schema check,
//! normalization, typed records, digest). Any panic, abort, overflow or timeout is a bug; every
//! refusal must say what is wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match ki_model::manifest::parse_manifests(data) {
        Ok(manifests) => {
            for m in manifests {
                // A valid manifest is its own normal form: validating it again changes nothing.
                let again = ki_model::manifest::validate_value(m.value.clone()).expect("a valid manifest re-validates");
                assert_eq!(again.digest, m.digest);
                assert_eq!(m.record.to_value().get("kind"), m.value.get("kind"));
            }
        }
        Err(problems) => {
            assert!(!problems.is_empty());
            assert!(problems.iter().all(|p| !p.message.is_empty()));
        }
    }
});
