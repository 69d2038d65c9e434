//! Feeds arbitrary text to the search box's parser (`GET /?q=`, `/api/v1/search`): a panic
//! or timeout is a finding; so are more words than the cap, an empty word, or a word with
//! whitespace in it.
#![no_main]

use ki_ranking::query::{MAX_SEARCH_WORDS, search_words};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let query = String::from_utf8_lossy(data);
    let words = search_words(&query);
    assert!(words.len() <= MAX_SEARCH_WORDS);
    for word in &words {
        assert!(!word.is_empty());
        assert!(!word.chars().any(char::is_whitespace), "{word:?}");
    }
});
