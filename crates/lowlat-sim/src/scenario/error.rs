//! The one error every scenario check returns.

/// A scenario that could not be read: one line, naming the file, the key and what was expected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}: {}{message}", if key.is_empty() { String::new() } else { format!("{key}: ") })]
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
