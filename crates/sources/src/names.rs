//! Name normalizations shared by importers, each matching what the public index exports.

pub use ki_model::slug::slug;

/// An identifier the manifests accept (`^[a-z][a-z0-9_]*$`): lowercase, other characters
/// become `_`. FlashInfer names such as `A` or `M` become `a`, `m` (as the public index has them).
pub fn identifier(text: &str) -> String {
    let mut out: String =
        text.chars().flat_map(char::to_lowercase).map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert(0, 'x');
    }
    out
}

/// Whether `text` matches `^[a-z][a-z0-9_]*$`.
pub fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The record model's dtype for a FlashInfer-Bench (PyTorch) dtype name, or `None` for a
/// name outside the data set's documented list.
pub fn dtype(flashinfer: &str) -> Option<&'static str> {
    Some(match flashinfer {
        "float32" => "fp32",
        "float16" => "fp16",
        "bfloat16" => "bf16",
        "float8_e4m3fn" => "fp8_e4m3",
        "float8_e5m2" => "fp8_e5m2",
        "float4_e2m1" => "fp4_e2m1",
        "int64" => "int64",
        "int32" => "int32",
        "int16" => "int16",
        "int8" => "int8",
        "bool" => "bool",
        _ => return None,
    })
}

/// The documented FlashInfer-Bench dtypes, for error messages.
pub const FLASHINFER_DTYPES: &str =
    "float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, float4_e2m1, int64, int32, int16, int8, bool";

/// A definition tag as the public index lists it: `model:<slug>` keeps its namespace,
/// every other tag is slugged whole (`stage:decode` → `stage-decode`,
/// `fi_api:flashinfer.decode.X` → `fi-api-flashinfer-decode-x`).
pub fn tag(flashinfer: &str) -> String {
    match flashinfer.strip_prefix("model:") {
        Some(model) => format!("model:{}", slug(model)),
        None => slug(flashinfer),
    }
}

/// A hardware name as traces and solutions write it (`NVIDIA_B200`) as a product name
/// (`NVIDIA B200`).
pub fn product(flashinfer: &str) -> String {
    flashinfer.trim().replace('_', " ")
}

/// The vendor of a product name, lowercase, or `unknown`.
pub fn vendor(product: &str) -> &'static str {
    let first = product.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
    match first.as_str() {
        "nvidia" => "nvidia",
        "amd" => "amd",
        "intel" => "intel",
        "cpu" => "cpu",
        _ => "unknown",
    }
}

/// The CUDA architecture (`sm_XX`) of an NVIDIA product, when the product is one we know.
pub fn cuda_architecture(product: &str) -> Option<&'static str> {
    let model = product.trim().trim_start_matches("NVIDIA").trim().to_ascii_uppercase();
    let model = model.trim_start_matches("GEFORCE ").trim_start_matches("RTX ");
    Some(match model {
        "B200" | "GB200" => "sm_100",
        "B300" | "GB300" => "sm_103",
        "H100" | "H200" | "H20" | "H800" | "GH200" => "sm_90",
        "A100" | "A800" | "A30" => "sm_80",
        "A10" | "A10G" | "A40" | "A6000" | "3090" => "sm_86",
        "L4" | "L40" | "L40S" | "4090" => "sm_89",
        "5090" | "RTX PRO 6000" => "sm_120",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_match_the_public_index() {
        assert_eq!(tag("stage:decode"), "stage-decode");
        assert_eq!(tag("model:llama-3.2-3b"), "model:llama-3-2-3b");
        assert_eq!(
            tag("fi_api:flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper"),
            "fi-api-flashinfer-decode-batchdecodewithpagedkvcachewrapper"
        );
        assert_eq!(tag("tp:1"), "tp-1");
    }

    #[test]
    fn slugs_and_identifiers() {
        assert_eq!(slug("2.11.0+cu130"), "2-11-0-cu130");
        assert_eq!(slug("__a__b__"), "a-b");
        assert_eq!(identifier("M"), "m");
        assert!(is_identifier("num_kv_heads"));
        assert!(!is_identifier("Num"));
        assert_eq!(dtype("bfloat16"), Some("bf16"));
        assert_eq!(dtype("complex64"), None);
        assert_eq!(cuda_architecture("NVIDIA B200"), Some("sm_100"));
        assert_eq!(cuda_architecture("NVIDIA GeForce RTX 4090"), Some("sm_89"));
    }
}
