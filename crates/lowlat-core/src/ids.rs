//! Small copyable identifiers. Indices into the driver's arenas.

/// Identifies one flow (a source and its sink) in a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FlowId(pub u32);

/// Identifies one link (queue + server + propagation) in a topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LinkId(pub u32);

impl FlowId {
    /// The index of this flow in its driver's arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl LinkId {
    /// The index of this link in its driver's arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
