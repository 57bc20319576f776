use crate::capacity::*;
use std::path::Path;
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct TraceError { pub file: String, pub line: Option<usize>, pub message: String }
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct TraceWarning { pub file: String, pub line: usize, pub message: String }
#[derive(Default)]
pub struct RateTraceOptions { pub outlier_factor: f64 }
pub fn load_mahimahi(path: &Path) -> Result<DeliveryTrace, TraceError> { Err(TraceError{file: path.display().to_string(), line: None, message: "x".into()}) }
pub fn load_rate_trace(path: &Path, _o: &RateTraceOptions) -> Result<(RateSchedule, Vec<TraceWarning>), TraceError> { Err(TraceError{file: path.display().to_string(), line: None, message: "x".into()}) }
pub fn load_trace_auto(path: &Path, _o: &RateTraceOptions) -> Result<(Capacity, Vec<TraceWarning>), TraceError> { Err(TraceError{file: path.display().to_string(), line: None, message: "x".into()}) }
