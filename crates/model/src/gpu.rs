//! GPU models as the index names them: the GPUs people ask about (with vendor, architecture and
//! generation, what the GPU list's "nearest measured" compares), and a driver's device name read
//! as one of them ("NVIDIA H100 80GB HBM3" is an "NVIDIA H100" in form "80GB HBM3"), so that
//! runs we make sit on the same GPU page and leaderboards as the reported runs of that model.

/// One GPU people ask about: its name as runs spell it, vendor, architecture, and the
/// architecture's generation within the vendor's data-centre line.
pub struct KnownGpu {
    pub model: &'static str,
    pub vendor: &'static str,
    pub architecture: &'static str,
    pub generation: u8,
}

const fn known(model: &'static str, vendor: &'static str, architecture: &'static str, generation: u8) -> KnownGpu {
    KnownGpu { model, vendor, architecture, generation }
}

/// The data-centre and workstation GPUs kernels are commonly tuned for. Generations: NVIDIA
/// Ampere 8, Ada 8.9 (9), Hopper 10, Blackwell 11; AMD CDNA2 2, CDNA3 3, CDNA4 4.
pub static KNOWN_GPUS: [KnownGpu; 17] = [
    known("NVIDIA A100", "NVIDIA", "Ampere", 8),
    known("NVIDIA A10G", "NVIDIA", "Ampere", 8),
    known("NVIDIA L4", "NVIDIA", "Ada Lovelace", 9),
    known("NVIDIA L40S", "NVIDIA", "Ada Lovelace", 9),
    known("NVIDIA RTX 4090", "NVIDIA", "Ada Lovelace", 9),
    known("NVIDIA H100", "NVIDIA", "Hopper", 10),
    known("NVIDIA H200", "NVIDIA", "Hopper", 10),
    known("NVIDIA GH200", "NVIDIA", "Hopper", 10),
    known("NVIDIA H20", "NVIDIA", "Hopper", 10),
    known("NVIDIA B200", "NVIDIA", "Blackwell", 11),
    known("NVIDIA GB200", "NVIDIA", "Blackwell", 11),
    known("NVIDIA B300", "NVIDIA", "Blackwell", 11),
    known("NVIDIA RTX 5090", "NVIDIA", "Blackwell", 11),
    known("AMD Instinct MI250X", "AMD", "CDNA2", 2),
    known("AMD Instinct MI300X", "AMD", "CDNA3", 3),
    known("AMD Instinct MI325X", "AMD", "CDNA3", 3),
    known("AMD Instinct MI355X", "AMD", "CDNA4", 4),
];

/// The known GPU a run's hardware name is (`search_text::fold`: letters and digits compared,
/// case ignored).
pub fn known_gpu(model: &str) -> Option<&'static KnownGpu> {
    let folded = crate::search_text::fold(model);
    KNOWN_GPUS.iter().find(|k| crate::search_text::fold(k.model) == folded)
}

/// A driver's device name read as a known GPU model and the rest of the name (memory, form
/// factor), if it starts with one's name followed by a space, a dash or nothing; else `None`,
/// and the name stands as it is.
pub fn model_of_device(device: &str) -> Option<(&'static str, Option<&str>)> {
    KNOWN_GPUS.iter().find_map(|k| {
        let rest = device.strip_prefix(k.model)?;
        if !(rest.is_empty() || rest.starts_with([' ', '-'])) {
            return None;
        }
        let form = rest.trim_matches([' ', '-']);
        Some((k.model, (!form.is_empty()).then_some(form)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_name_is_read_as_the_model_it_starts_with() {
        assert_eq!(model_of_device("NVIDIA H100 80GB HBM3"), Some(("NVIDIA H100", Some("80GB HBM3"))));
        assert_eq!(model_of_device("NVIDIA H100 PCIe"), Some(("NVIDIA H100", Some("PCIe"))));
        assert_eq!(model_of_device("NVIDIA A100-SXM4-80GB"), Some(("NVIDIA A100", Some("SXM4-80GB"))));
        assert_eq!(model_of_device("NVIDIA GH200 480GB"), Some(("NVIDIA GH200", Some("480GB"))));
        assert_eq!(model_of_device("NVIDIA H20"), Some(("NVIDIA H20", None)));
        assert_eq!(model_of_device("NVIDIA H200"), Some(("NVIDIA H200", None)));
        assert_eq!(model_of_device("NVIDIA L40S"), Some(("NVIDIA L40S", None)));
        // A longer model is not read as a shorter one it starts with.
        assert_eq!(model_of_device("NVIDIA L40"), None);
        assert_eq!(model_of_device("NVIDIA GeForce RTX 4090"), None);
        assert_eq!(model_of_device("Tesla V100"), None);
    }

    #[test]
    fn a_known_gpu_is_found_by_its_letters_and_digits() {
        assert_eq!(known_gpu("nvidia-h100").map(|k| k.model), Some("NVIDIA H100"));
        assert_eq!(known_gpu("NVIDIA H100 80GB HBM3").map(|k| k.model), None);
    }
}
