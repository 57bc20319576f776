//! The one error every scenario check returns.

use std::fmt;

/// A scenario that could not be read: one line, naming the file, the key and what was expected.
/// Control characters (a newline in a flow id or a file name) are shown escaped (`\n`), so the
/// line stays one line whatever the scenario holds.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct ScenarioError {
    /// The scenario's source (file path or a label such as `<dict>`).
    pub file: String,
    /// The key path (`flows[0].rate`), empty for whole-file problems.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: file.to_string(), key: key.into(), message: message.into() }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = if self.key.is_empty() {
            format!("{}: {}", self.file, self.message)
        } else {
            format!("{}: {}: {}", self.file, self.key, self.message)
        };
        for c in line.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// A number as an error shows it: plain, or in exponent form when tiny or huge (`5e-324`, not
/// 324 digits).
pub(crate) fn number(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-4 || x.abs() >= 1e15) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}
