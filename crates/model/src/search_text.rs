//! The text the search box looks in: one function per kind of thing it finds. The catalog's
//! search index finds entries by this text and the server's read model scores them by it, so
//! both read the same words (lower-cased here, in Rust, not by SQL functions that differ
//! between backends).

/// Letters and digits only, lower-cased: how names in different spellings are compared
/// (`Llama-3.1-8B` and `llama 3.1 8b` are `llama318b`).
pub fn fold(text: &str) -> String {
    text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// What the search box finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SearchKind {
    Operation,
    Implementation,
    Project,
    Hardware,
}

impl SearchKind {
    pub const ALL: [SearchKind; 4] =
        [SearchKind::Operation, SearchKind::Implementation, SearchKind::Project, SearchKind::Hardware];

    pub fn as_str(self) -> &'static str {
        match self {
            SearchKind::Operation => "operation",
            SearchKind::Implementation => "implementation",
            SearchKind::Project => "project",
            SearchKind::Hardware => "hardware",
        }
    }

    pub fn parse(text: &str) -> Option<SearchKind> {
        SearchKind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

/// An entry's searchable text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchText {
    /// Where a query's words are looked for (as substrings), lower-cased.
    pub haystack: String,
    /// The names that count as an exact match, as [`spaced`] writes them.
    pub names: Vec<String>,
}

/// A name as an exact match compares it: lower-cased, `_` and `-` as spaces.
pub fn spaced(name: &str) -> String {
    name.to_lowercase().replace(['_', '-'], " ")
}

/// An operation: its name, slug, family and aliases.
pub fn operation(name: &str, slug: &str, family: &str, aliases: &[&str]) -> SearchText {
    let mut haystack = format!("{name} {slug} {family}");
    for alias in aliases {
        haystack.push(' ');
        haystack.push_str(alias);
    }
    let mut names = vec![spaced(name), spaced(slug)];
    names.extend(aliases.iter().map(|alias| spaced(alias)));
    SearchText { haystack: haystack.to_lowercase(), names }
}

/// An implementation: its slug and title.
pub fn implementation(slug: &str, title: &str) -> SearchText {
    SearchText { haystack: format!("{slug} {title}").to_lowercase(), names: vec![spaced(slug)] }
}

/// A project: its name and slug.
pub fn project(name: &str, slug: &str) -> SearchText {
    SearchText { haystack: format!("{name} {slug}").to_lowercase(), names: vec![spaced(name), spaced(slug)] }
}

/// A GPU model, as runs name it.
pub fn hardware(model: &str) -> SearchText {
    SearchText { haystack: model.to_lowercase(), names: vec![spaced(model)] }
}

/// The words of a haystack that "did you mean" may offer: letters and digits, 3 or more characters.
pub fn terms(haystack: &str) -> impl Iterator<Item = &str> {
    haystack.split(|c: char| !c.is_alphanumeric()).filter(|t| t.chars().count() >= 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_lower_cased_and_names_are_spaced() {
        let op = operation("RMSNorm_h4096", "rmsnorm-h4096", "norm", &["Fused-Add"]);
        assert_eq!(op.haystack, "rmsnorm_h4096 rmsnorm-h4096 norm fused-add");
        assert_eq!(op.names, ["rmsnorm h4096", "rmsnorm h4096", "fused add"]);
        assert_eq!(hardware("NVIDIA H200").haystack, "nvidia h200");
        assert_eq!(implementation("a_b", "T").names, ["a b"]);
        assert_eq!(project("P Q", "p-q").haystack, "p q p-q");
        assert_eq!(terms("gqa_paged h32 µs fp8-e4m3").collect::<Vec<_>>(), ["gqa", "paged", "h32", "fp8", "e4m3"]);
        for kind in SearchKind::ALL {
            assert_eq!(SearchKind::parse(kind.as_str()), Some(kind));
        }
    }
}
