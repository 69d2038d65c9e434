//! FlashInfer-Bench (flashinfer-trace) operation definitions: the parts the runner needs, and the
//! built-in GQA paged-decode family.
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::tensor::{DType, HostTensor, TensorSet};

#[derive(Clone, Debug, Deserialize)]
pub struct Definition {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub op_type: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub axes: BTreeMap<String, Axis>,
    #[serde(default)]
    pub constraints: Vec<String>,
    pub inputs: serde_json::Map<String, serde_json::Value>,
    pub outputs: serde_json::Map<String, serde_json::Value>,
    pub reference: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Axis {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub value: Option<i64>,
    #[serde(default)]
    pub description: Option<String>,
}

/// One declared input or output: its name, shape in axis names (None for a 0-d scalar), dtype.
#[derive(Clone, Debug)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Option<Vec<String>>,
    pub dtype: DType,
}

#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("unknown definition `{0}`: not a built-in name ({1}) and no such file")]
    Unknown(String, String),
}

macro_rules! builtin {
    ($($name:literal),* $(,)?) => {
        /// The family's definitions, embedded (crates/runner/definitions/README.md says where from).
        pub const BUILTIN_DEFINITIONS: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../definitions/gqa_paged/", $name, ".json")))),*
        ];
    };
}

builtin!(
    "gqa_paged_decode_h16_kv2_d128_ps1",
    "gqa_paged_decode_h16_kv2_d128_ps64",
    "gqa_paged_decode_h20_kv4_d128_ps1",
    "gqa_paged_decode_h20_kv4_d128_ps64",
    "gqa_paged_decode_h24_kv4_d128_ps64",
    "gqa_paged_decode_h24_kv8_d128_ps1",
    "gqa_paged_decode_h24_kv8_d128_ps64",
    "gqa_paged_decode_h32_kv16_d128_ps1",
    "gqa_paged_decode_h32_kv16_d128_ps64",
    "gqa_paged_decode_h32_kv4_d128_ps1",
    "gqa_paged_decode_h32_kv4_d128_ps64",
    "gqa_paged_decode_h32_kv8_d128_ps1",
    "gqa_paged_decode_h32_kv8_d128_ps64",
    "gqa_paged_decode_h48_kv8_d128_ps1",
    "gqa_paged_decode_h5_kv1_d128_ps1",
    "gqa_paged_decode_h6_kv1_d128_ps1",
    "gqa_paged_decode_h6_kv1_d128_ps64",
);

impl Definition {
    pub fn parse(json: &str, origin: &str) -> Result<Definition, DefinitionError> {
        let definition: Definition = serde_json::from_str(json).map_err(|e| DefinitionError::Invalid {
            origin: origin.to_string(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        // Resolve the tensor specs once so a bad dtype or shape is reported at load time.
        definition.input_specs().map_err(|message| DefinitionError::Invalid { origin: origin.into(), message })?;
        definition.output_specs().map_err(|message| DefinitionError::Invalid { origin: origin.into(), message })?;
        Ok(definition)
    }

    /// A built-in definition by name, or else a definition JSON file at that path.
    pub fn load(name_or_path: &str) -> Result<Definition, DefinitionError> {
        if let Some((_, json)) = BUILTIN_DEFINITIONS.iter().find(|(name, _)| *name == name_or_path) {
            return Definition::parse(json, name_or_path);
        }
        let path = Path::new(name_or_path);
        if path.is_file() {
            let json = std::fs::read_to_string(path)
                .map_err(|e| DefinitionError::Invalid { origin: name_or_path.to_string(), message: e.to_string() })?;
            return Definition::parse(&json, name_or_path);
        }
        let names: Vec<&str> = BUILTIN_DEFINITIONS.iter().map(|(n, _)| *n).collect();
        Err(DefinitionError::Unknown(name_or_path.to_string(), names.join(", ")))
    }

    pub fn builtin(name: &str) -> Option<Definition> {
        BUILTIN_DEFINITIONS.iter().find(|(n, _)| *n == name).map(|(n, json)| Definition::parse(json, n).unwrap())
    }

    pub fn const_axis(&self, name: &str) -> Option<i64> {
        self.axes.get(name).filter(|a| a.kind == "const").and_then(|a| a.value)
    }

    fn specs(map: &serde_json::Map<String, serde_json::Value>, group: &str) -> Result<Vec<TensorSpec>, String> {
        let mut specs = Vec::new();
        for (name, spec) in map {
            let pointer = format!("/{group}/{name}");
            let dtype_name = spec.get("dtype").and_then(|d| d.as_str()).ok_or(format!("{pointer}/dtype: missing"))?;
            let dtype = DType::from_definition_name(dtype_name)
                .ok_or(format!("{pointer}/dtype: unsupported dtype `{dtype_name}`"))?;
            let shape = match spec.get("shape") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::Array(dims)) => Some(
                    dims.iter()
                        .enumerate()
                        .map(|(i, d)| {
                            d.as_str().map(str::to_string).ok_or(format!("{pointer}/shape/{i}: not an axis name"))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(_) => {
                    return Err(format!("{pointer}/shape: must be a list of axis names or null"));
                }
            };
            specs.push(TensorSpec { name: name.clone(), shape, dtype });
        }
        Ok(specs)
    }

    pub fn input_specs(&self) -> Result<Vec<TensorSpec>, String> {
        Definition::specs(&self.inputs, "inputs")
    }

    pub fn output_specs(&self) -> Result<Vec<TensorSpec>, String> {
        Definition::specs(&self.outputs, "outputs")
    }

    /// Checks that `tensors` holds every declared input with its dtype and a shape consistent with
    /// the axes (const axes must match; var axes must agree wherever they appear). Returns the
    /// resolved axis values.
    pub fn check_inputs(&self, tensors: &TensorSet, origin: &str) -> Result<BTreeMap<String, usize>, String> {
        let mut axes: BTreeMap<String, usize> = BTreeMap::new();
        for (name, axis) in &self.axes {
            if let (true, Some(v)) = (axis.kind == "const", axis.value) {
                axes.insert(name.clone(), v as usize);
            }
        }
        for spec in self.input_specs()? {
            let tensor = tensors.get(&spec.name).ok_or_else(|| {
                format!("{origin}: input tensor `{}` is missing (definition {})", spec.name, self.name)
            })?;
            check_tensor(&spec, tensor, &mut axes, origin)?;
        }
        Ok(axes)
    }
}

pub(crate) fn check_tensor(
    spec: &TensorSpec,
    tensor: &HostTensor,
    axes: &mut BTreeMap<String, usize>,
    origin: &str,
) -> Result<(), String> {
    if tensor.dtype != spec.dtype {
        return Err(format!("{origin}: tensor `{}` has dtype {}, expected {}", spec.name, tensor.dtype, spec.dtype));
    }
    let expected_dims: &[String] = spec.shape.as_deref().unwrap_or(&[]);
    if tensor.shape.len() != expected_dims.len() {
        return Err(format!(
            "{origin}: tensor `{}` has shape {:?}, expected {} dimensions [{}]",
            spec.name,
            tensor.shape,
            expected_dims.len(),
            expected_dims.join(", ")
        ));
    }
    for (i, (axis, &size)) in expected_dims.iter().zip(&tensor.shape).enumerate() {
        match axes.get(axis) {
            Some(&known) if known != size => {
                return Err(format!(
                    "{origin}: tensor `{}` dimension {i} ({axis}) is {size}, expected {known}",
                    spec.name
                ));
            }
            Some(_) => {}
            None => {
                axes.insert(axis.clone(), size);
            }
        }
    }
    Ok(())
}
