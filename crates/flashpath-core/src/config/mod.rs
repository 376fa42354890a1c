//! Presets: TOML text in, typed and validated configurations out (no file I/O here; the
//! CLI reads files). Raw structs deserialize with `deny_unknown_fields`; `validate`
//! turns them into typed configs, and every violation names its field and reason.

pub mod estimates;
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

/// A preset's `name` or `description`: text shown in reports and listings, so one line
/// of printable characters (a `--set` value may carry a newline); a name is not empty.
pub fn text_field<'a>(field: &str, value: &'a str) -> Result<&'a str, ConfigError> {
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(ConfigError::new(
            field,
            format!(
                "has a control character ({}); it is printed in reports, which take one line of text",
                c.escape_default()
            ),
        ));
    }
    if field == "name" && value.trim().is_empty() {
        return Err(ConfigError::new(field, "is empty"));
    }
    Ok(value)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptions_are_one_line_of_text() {
        assert_eq!(text_field("name", "ufs21-64g"), Ok("ufs21-64g"));
        assert_eq!(text_field("description", ""), Ok(""));
        let e = text_field("name", "a\nb").unwrap_err();
        assert_eq!(e.field, "name");
        assert!(e.reason.contains("control character (\\n)"), "{}", e.reason);
        assert!(text_field("description", "tab\there").is_err());
        assert!(text_field("name", "  ").is_err());
    }
}
