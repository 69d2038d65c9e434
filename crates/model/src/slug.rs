//! Slugs: the one rule for page addresses and anchors, used by importers, submissions and
//! the web alike. Lowercase; every run of characters other than `[a-z0-9]` becomes one `-`;
//! no `-` at either end: `gqa_paged_decode_h32` → `gqa-paged-decode-h32`,
//! `2.11.0+cu130` → `2-11-0-cu130`, `NVIDIA B200` → `nvidia-b200`.

pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn one_rule() {
        assert_eq!(slug("gqa_paged_decode_h32"), "gqa-paged-decode-h32");
        assert_eq!(slug("2.11.0+cu130"), "2-11-0-cu130");
        assert_eq!(slug("__a__b__"), "a-b");
        assert_eq!(slug("NVIDIA B200"), "nvidia-b200");
        assert_eq!(slug("Élan"), "lan");
    }
}
