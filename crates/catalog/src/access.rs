//! Who may write: the scopes an API key is given, and why a key is refused before anything is
//! written. Kept apart from the state that stores keys so that the error type can name a
//! refusal without depending on the store.

use serde::{Deserialize, Serialize};

/// What a key may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Attest,
    Submit,
}

impl Scope {
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "attest" => Some(Scope::Attest),
            "submit" => Some(Scope::Submit),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Attest => "attest",
            Scope::Submit => "submit",
        }
    }
}

/// Why a key may not write, decided before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyRefusal {
    #[error("no API key was sent")]
    NoKey,
    #[error("the API key is unknown or revoked")]
    UnknownKey,
    #[error("the API key lacks the {} scope", .0.as_str())]
    MissingScope(Scope),
    #[error("the API key has used its daily quota of writes")]
    QuotaExceeded,
}
