//! `ki verify`'s front door: arbitrary bytes as a FlashInfer-Bench Solution document. A panic, abort,
//! stack overflow, leak or timeout is a finding; so is a refusal with an empty reason or pointer
//! text that is not a JSON pointer, and an accepted Solution whose digest changes on a second parse.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match ki_runner::solution::Solution::parse(data, "fuzz.json") {
        Ok(solution) => {
            let again = ki_runner::solution::Solution::parse(data, "fuzz.json").expect("parses twice");
            assert_eq!(solution.source_digest, again.source_digest);
            assert!(solution.sources.iter().any(|s| s.path == solution.entry_file));
            // A kept path stays inside the solution's folder ("kerne..l.cu" is a file name, not a step up).
            assert!(solution.sources.iter().all(|s| !s.path.starts_with('/')
                && s.path.split('/').all(|part| !part.is_empty() && part != "." && part != "..")));
            let _ = solution.artifact();
        }
        Err(error) => {
            assert!(!error.reason.is_empty());
            assert!(error.pointer.is_empty() || error.pointer.starts_with('/'));
        }
    }
});
