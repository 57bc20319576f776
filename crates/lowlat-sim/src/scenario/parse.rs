//! Reading a scenario's text (TOML or JSON) into its spec, with every parser error folded onto one
//! line that names the key.

use super::config::Scenario;
use super::error::ScenarioError;
use super::spec::ScenarioSpec;
use std::fmt;
use std::path::Path;

/// How a scenario's text is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML (scenario files).
    Toml,
    /// JSON (scenarios built as dicts in Python).
    Json,
}

impl Scenario {
    /// Reads and validates a scenario file: TOML, or JSON when its name ends in `.json` (a
    /// scenario built as a dict in Python and saved with `json.dump`).
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let label = path.display().to_string();
        let text = lowlat_net::trace::read_text_file(path)
            .map_err(|e| ScenarioError::new(&label, "", format!("cannot read the file: {e}")))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let format = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            Format::Json
        } else {
            Format::Toml
        };
        Scenario::parse(&text, format, &label, &base)
    }

    /// Reads and validates a scenario given as text; `label` names it in errors, relative trace
    /// paths are resolved against `base_dir`.
    pub fn parse(
        text: &str,
        format: Format,
        label: &str,
        base_dir: &Path,
    ) -> Result<Scenario, ScenarioError> {
        let spec: ScenarioSpec = match format {
            Format::Toml => {
                let value: toml::Value = toml::from_str(text).map_err(|e| {
                    // toml's message spans several lines (with a caret); keep it to one.
                    let msg = one_line(e.message());
                    let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
                    let key = line.map(|l| format!("line {l}")).unwrap_or_default();
                    ScenarioError::new(label, key, format!("invalid TOML: {msg}"))
                })?;
                serde_path_to_error::deserialize(value).map_err(|e| path_error(label, e))?
            }
            Format::Json => {
                let value: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| ScenarioError::new(label, "", format!("invalid JSON: {e}")))?;
                serde_path_to_error::deserialize(value).map_err(|e| path_error(label, e))?
            }
        };
        let default_name = Path::new(label).file_stem().map(|s| s.to_string_lossy().into_owned());
        Scenario::from_spec(spec, label, base_dir, default_name)
    }
}

fn path_error<E: fmt::Display>(label: &str, e: serde_path_to_error::Error<E>) -> ScenarioError {
    let path = e.path().to_string();
    let key = if path == "." { String::new() } else { path };
    ScenarioError::new(label, key, one_line(&e.inner().to_string()))
}

/// Folds a library's multi-line message onto one line; drops toml's "in `key`" trailer (the key
/// is already named).
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("in `"))
        .collect::<Vec<_>>()
        .join("; ")
}
