//! Bytes on the wire (placeholder: being written).
