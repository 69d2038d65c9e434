//! The one escaper for text from outside, wherever it is shown: terminal lines (`ki`'s
//! `term`, the runner's messages) and rendered pages (the server's HTML and Atom). A string
//! from outside — a submission's title, a run's name, an error quoting a file — must never
//! move the cursor, ring the bell, overwrite a line or reorder text. Control characters (C0,
//! DEL, C1) and the bidirectional-text controls are shown as `\uXXXX`: that is also JSON's
//! own escape, so JSON output stays valid and means the same once escaped.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a control or bidirectional-text character: C0 (line feed and tab
/// included: the callers say which of those their output keeps), DEL, C1, the Arabic letter
/// mark (U+061C), LRM/RLM (U+200E/F), line and paragraph separators (U+2028/9), embeddings
/// and overrides (U+202A–U+202E), isolates (U+2066–U+2069).
pub fn is_control_or_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `text` with every control and bidi character but those `keep` accepts written `\uXXXX`
/// (all of them lie in the BMP); borrowed when there is none.
pub fn escape_controls(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_control_or_bidi(c) && !keep(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// For a terminal: everything escaped but the line feed (output is made of lines).
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    escape_controls(text, |c| c == '\n')
}

/// For one terminal line: everything escaped, the line feed too.
pub fn for_terminal_line(text: &str) -> Cow<'_, str> {
    escape_controls(text, |_| false)
}

/// For markup (HTML, XML): everything escaped but the line feed and the tab, which markup
/// and the source listings in it hold as whitespace.
pub fn for_markup(text: &str) -> Cow<'_, str> {
    escape_controls(text, |c| c == '\n' || c == '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_escaped_and_the_rest_kept() {
        assert_eq!(for_terminal("plain µs ✓\n"), "plain µs ✓\n");
        assert!(matches!(for_terminal("plain"), Cow::Borrowed(_)));
        assert_eq!(for_terminal("a\u{1b}[31mb\u{7}\r"), "a\\u001b[31mb\\u0007\\u000d");
        assert_eq!(
            for_terminal("\u{202e}evil\u{2066}\u{200f}\u{61c}\u{85}"),
            "\\u202eevil\\u2066\\u200f\\u061c\\u0085"
        );
        assert_eq!(for_terminal_line("a\nb"), "a\\u000ab");
        assert_eq!(for_markup("a\tb\nc\u{1b}\r"), "a\tb\nc\\u001b\\u000d");
        for c in ['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200e}'] {
            assert!(is_control_or_bidi(c), "{c:?}");
        }
    }
}
