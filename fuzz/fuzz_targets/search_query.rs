//! Feeds arbitrary text to the search box's readers (`GET /?q=`, `/api/v1/search`): the word
//! splitter, and the plain-words reader (`understand`) with a lexicon of the bundled public
//! catalog's names (data/). A panic or timeout is a finding; so are more words than the cap, an
//! empty word or one with whitespace in it, a chip whose query-without-it is longer than the
//! query, or an understanding that does not serialize.
#![no_main]

use std::sync::LazyLock;

use ki_ranking::query::{MAX_SEARCH_WORDS, search_words};
use ki_ranking::understand::{Lexicon, LexiconParts, OperationNames, understand};
use libfuzzer_sys::fuzz_target;

#[path = "bundled_index.rs"]
mod bundled_index;
use bundled_index::INDEX;

/// The catalog's names as the server gathers them (GPUs as its runs name them).
static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    let index = &*INDEX;
    let operations = index
        .operations
        .iter()
        .map(|op| OperationNames {
            name: &op.name,
            slug: &op.slug,
            family: op.family.as_deref().unwrap_or(""),
            aliases: Vec::new(),
            models: vec!["llama-3-1-8b", "qwen3-30b-a3b"],
            axes: op
                .manifest
                .pointer("/spec/axes")
                .and_then(|axes| axes.as_object())
                .map(|axes| axes.keys().map(String::as_str).collect())
                .unwrap_or_default(),
        })
        .collect();
    Lexicon::new(&LexiconParts {
        operations,
        gpus: vec!["NVIDIA H200", "NVIDIA B200", "NVIDIA H100 80GB HBM3"],
        projects: index.projects.iter().map(|p| (p.name.as_str(), p.slug.as_str())).collect(),
        implementations: index.implementations.iter().map(|i| i.slug.as_str()).collect(),
        languages: vec!["cuda", "triton", "python"],
    })
});

fuzz_target!(|data: &[u8]| {
    let query = String::from_utf8_lossy(data);
    let words = search_words(&query);
    assert!(words.len() <= MAX_SEARCH_WORDS);
    for word in &words {
        assert!(!word.is_empty());
        assert!(!word.chars().any(char::is_whitespace), "{word:?}");
    }
    let understood = understand(&query, &LEXICON);
    for chip in &understood.chips {
        assert!(chip.without.chars().count() <= query.chars().count(), "{chip:?}");
    }
    serde_json::to_vec(&understood).expect("an understanding serializes");
});
