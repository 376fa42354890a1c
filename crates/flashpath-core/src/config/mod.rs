//! Presets: TOML text in, typed and validated configurations out (no file I/O here; the
//! CLI reads files). Raw structs deserialize with `deny_unknown_fields`; `validate`
//! turns them into typed configs, and every violation names its field and reason.

pub mod preset;
pub mod units;

use std::fmt;

/// A preset value that is missing, malformed or impossible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `nand.t_prog`.
    pub field: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
    /// The same error with `prefix.` in front of the field (for nested sections).
    pub fn within(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}
impl std::error::Error for ConfigError {}

/// Parses a size field, naming the field on error.
pub fn bytes_field(field: &str, s: &str) -> Result<u64, ConfigError> {
    units::parse_bytes(s).map_err(|e| ConfigError::new(field, e.0))
}
/// Parses a duration field (ns), naming the field on error.
pub fn ns_field(field: &str, s: &str) -> Result<u64, ConfigError> {
    units::parse_ns(s).map_err(|e| ConfigError::new(field, e.0))
}
/// Parses a rate field (bytes/s), naming the field on error.
pub fn rate_field(field: &str, s: &str) -> Result<u64, ConfigError> {
    units::parse_rate(s).map_err(|e| ConfigError::new(field, e.0))
}
/// Parses a frequency field (Hz), naming the field on error.
pub fn hz_field(field: &str, s: &str) -> Result<u64, ConfigError> {
    units::parse_hz(s).map_err(|e| ConfigError::new(field, e.0))
}
