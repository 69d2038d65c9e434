//! Host tensors and named tensor sets, read and written as safetensors.
//!
//! A `HostTensor` keeps its elements as little-endian bytes exactly as safetensors stores them, so
//! reading a file and writing it back never changes a bit; typed views copy out (the byte buffer has
//! no alignment guarantee, and copies are cheap next to the work done on the values).
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use half::bf16;
use safetensors::{Dtype as StDtype, SafeTensors, tensor::TensorView};

/// Element types the runner handles (the ones the definitions it knows use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    BF16,
    F16,
    F32,
    F64,
    I32,
    I64,
    U8,
    Bool,
    /// FP8 E4M3 (`float8_e4m3fn`): the MoE definitions' weights and activations.
    F8E4M3,
}

impl DType {
    /// Parses a FlashInfer-Bench / PyTorch dtype name ("bfloat16", "float32", "int32", ...).
    pub fn from_definition_name(name: &str) -> Option<DType> {
        Some(match name {
            "bfloat16" => DType::BF16,
            "float16" => DType::F16,
            "float32" => DType::F32,
            "float64" => DType::F64,
            "int32" => DType::I32,
            "int64" => DType::I64,
            "uint8" => DType::U8,
            "bool" => DType::Bool,
            "float8_e4m3fn" => DType::F8E4M3,
            _ => return None,
        })
    }

    pub fn definition_name(self) -> &'static str {
        match self {
            DType::BF16 => "bfloat16",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::Bool => "bool",
            DType::F8E4M3 => "float8_e4m3fn",
        }
    }

    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::BF16 | DType::F16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::U8 | DType::Bool | DType::F8E4M3 => 1,
        }
    }

    fn to_safetensors(self) -> StDtype {
        match self {
            DType::BF16 => StDtype::BF16,
            DType::F16 => StDtype::F16,
            DType::F32 => StDtype::F32,
            DType::F64 => StDtype::F64,
            DType::I32 => StDtype::I32,
            DType::I64 => StDtype::I64,
            DType::U8 => StDtype::U8,
            DType::Bool => StDtype::BOOL,
            DType::F8E4M3 => StDtype::F8_E4M3,
        }
    }

    fn from_safetensors(dtype: StDtype) -> Option<DType> {
        Some(match dtype {
            StDtype::BF16 => DType::BF16,
            StDtype::F16 => DType::F16,
            StDtype::F32 => DType::F32,
            StDtype::F64 => DType::F64,
            StDtype::I32 => DType::I32,
            StDtype::I64 => DType::I64,
            StDtype::U8 => DType::U8,
            StDtype::BOOL => DType::Bool,
            StDtype::F8_E4M3 => DType::F8E4M3,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.definition_name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("tensor `{name}`: {message}")]
    Tensor { name: String, message: String },
}

/// One tensor on the host: dtype, shape (empty for a 0-dimensional scalar) and little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl HostTensor {
    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn from_bf16(shape: Vec<usize>, values: &[bf16]) -> HostTensor {
        assert_eq!(shape.iter().product::<usize>(), values.len(), "shape does not match the values");
        let bytes = values.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
        HostTensor { dtype: DType::BF16, shape, bytes }
    }

    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> HostTensor {
        assert_eq!(shape.iter().product::<usize>(), values.len(), "shape does not match the values");
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        HostTensor { dtype: DType::F32, shape, bytes }
    }

    pub fn from_i32(shape: Vec<usize>, values: &[i32]) -> HostTensor {
        assert_eq!(shape.iter().product::<usize>(), values.len(), "shape does not match the values");
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        HostTensor { dtype: DType::I32, shape, bytes }
    }

    pub fn to_bf16(&self) -> Option<Vec<bf16>> {
        (self.dtype == DType::BF16)
            .then(|| self.bytes.chunks_exact(2).map(|c| bf16::from_bits(u16::from_le_bytes([c[0], c[1]]))).collect())
    }

    pub fn to_i32(&self) -> Option<Vec<i32>> {
        (self.dtype == DType::I32)
            .then(|| self.bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    pub fn to_f32_exact(&self) -> Option<Vec<f32>> {
        (self.dtype == DType::F32)
            .then(|| self.bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    /// Every element widened to f32 (exact for bf16, f16 and f32; the comparators work on these).
    pub fn to_f32_lossy(&self) -> Vec<f32> {
        match self.dtype {
            DType::BF16 => self.to_bf16().unwrap().into_iter().map(f32::from).collect(),
            DType::F16 => self
                .bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
                .collect(),
            DType::F32 => self.to_f32_exact().unwrap(),
            DType::F64 => {
                self.bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap()) as f32).collect()
            }
            DType::I32 => self.to_i32().unwrap().into_iter().map(|v| v as f32).collect(),
            DType::I64 => {
                self.bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f32).collect()
            }
            DType::U8 | DType::Bool => self.bytes.iter().map(|&b| b as f32).collect(),
            DType::F8E4M3 => self.bytes.iter().map(|&b| f8e4m3_to_f32(b)).collect(),
        }
    }
}

/// Named tensors, ordered by name (safetensors orders its header the same way).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorSet {
    pub tensors: BTreeMap<String, HostTensor>,
}

impl TensorSet {
    pub fn new() -> TensorSet {
        TensorSet::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, tensor: HostTensor) {
        self.tensors.insert(name.into(), tensor);
    }

    pub fn get(&self, name: &str) -> Option<&HostTensor> {
        self.tensors.get(name)
    }

    /// Parses safetensors bytes; `origin` names the source in errors.
    pub fn from_safetensors_bytes(bytes: &[u8], origin: &str) -> Result<TensorSet, TensorError> {
        let parsed = SafeTensors::deserialize(bytes).map_err(|e| TensorError::File {
            path: origin.to_string(),
            message: format!("not a valid safetensors file: {e}"),
        })?;
        let mut set = TensorSet::new();
        for (name, view) in parsed.tensors() {
            let dtype = DType::from_safetensors(view.dtype()).ok_or_else(|| TensorError::File {
                path: origin.to_string(),
                message: format!("tensor `{name}` has dtype {:?}, which the runner does not handle", view.dtype()),
            })?;
            set.insert(name, HostTensor { dtype, shape: view.shape().to_vec(), bytes: view.data().to_vec() });
        }
        Ok(set)
    }

    pub fn read(path: &Path) -> Result<TensorSet, TensorError> {
        let bytes = std::fs::read(path)
            .map_err(|e| TensorError::File { path: path.display().to_string(), message: e.to_string() })?;
        TensorSet::from_safetensors_bytes(&bytes, &path.display().to_string())
    }

    pub fn to_safetensors_bytes(&self) -> Result<Vec<u8>, TensorError> {
        let mut views = Vec::with_capacity(self.tensors.len());
        for (name, t) in &self.tensors {
            let view = TensorView::new(t.dtype.to_safetensors(), t.shape.clone(), &t.bytes)
                .map_err(|e| TensorError::Tensor { name: name.clone(), message: e.to_string() })?;
            views.push((name.clone(), view));
        }
        safetensors::serialize(views, None)
            .map_err(|e| TensorError::File { path: "<memory>".into(), message: e.to_string() })
    }

    /// Writes atomically (temporary file, then rename) so a failed run leaves no half-written file.
    pub fn write(&self, path: &Path) -> Result<(), TensorError> {
        let bytes = self.to_safetensors_bytes()?;
        let io = |e: std::io::Error| TensorError::File { path: path.display().to_string(), message: e.to_string() };
        let temporary = path.with_extension("safetensors.partial");
        std::fs::write(&temporary, &bytes).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)
    }
}

/// FP8 E4M3 (fn: no infinities, 0x7f/0xff are NaN) to f32, exactly.
fn f8e4m3_to_f32(bits: u8) -> f32 {
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let exponent = ((bits >> 3) & 0x0f) as i32;
    let mantissa = (bits & 0x07) as f32;
    if exponent == 0x0f && bits & 0x07 == 0x07 {
        return f32::NAN;
    }
    if exponent == 0 {
        sign * mantissa / 8.0 * 2f32.powi(-6)
    } else {
        sign * (1.0 + mantissa / 8.0) * 2f32.powi(exponent - 7)
    }
}
