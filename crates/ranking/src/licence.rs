//! Permissive-licence check on parsed SPDX expressions: `MIT OR GPL-3.0-only` can be
//! used under MIT, `MIT AND GPL-3.0-only` cannot, which string matching gets wrong.

use serde::Serialize;

/// The licences under which a kernel can be dropped into any codebase.
pub const PERMISSIVE_LICENCES: [&str; 7] =
    ["Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "BSL-1.0"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum LicenceVerdict {
    Permissive,
    NotPermissive { expression: String },
    Unparseable { expression: String, error: String },
    Missing,
}

pub fn judge_licence(expression: Option<&str>) -> LicenceVerdict {
    let Some(expression) = expression.map(str::trim).filter(|e| !e.is_empty()) else {
        return LicenceVerdict::Missing;
    };
    let parsed = match spdx::Expression::parse(expression) {
        Ok(parsed) => parsed,
        Err(err) => {
            return LicenceVerdict::Unparseable { expression: expression.to_string(), error: err.to_string() };
        }
    };
    // A WITH exception only adds permissions to its base licence, so the base decides.
    let permissive = parsed.evaluate(|requirement| match &requirement.license {
        spdx::LicenseItem::Spdx { id, .. } => PERMISSIVE_LICENCES.contains(&id.name),
        spdx::LicenseItem::Other(_) => false,
    });
    if permissive {
        LicenceVerdict::Permissive
    } else {
        LicenceVerdict::NotPermissive { expression: expression.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_are_judged_by_their_structure() {
        assert_eq!(judge_licence(Some("Apache-2.0")), LicenceVerdict::Permissive);
        assert_eq!(judge_licence(Some("MIT OR GPL-3.0-only")), LicenceVerdict::Permissive);
        assert_eq!(judge_licence(Some("Apache-2.0 WITH LLVM-exception")), LicenceVerdict::Permissive);
        assert_eq!(judge_licence(Some("(BSD-3-Clause AND Zlib) OR MIT")), LicenceVerdict::Permissive);
        assert!(matches!(judge_licence(Some("MIT AND GPL-3.0-only")), LicenceVerdict::NotPermissive { .. }));
        assert!(matches!(
            judge_licence(Some("LicenseRef-GPUMode-Reciprocity-1.0")),
            LicenceVerdict::NotPermissive { .. }
        ));
        assert!(matches!(judge_licence(Some("MIT AND (")), LicenceVerdict::Unparseable { .. }));
        assert_eq!(judge_licence(None), LicenceVerdict::Missing);
        assert_eq!(judge_licence(Some("  ")), LicenceVerdict::Missing);
    }
}
