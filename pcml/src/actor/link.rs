//! Links, monitors and exit signals (filled in by the failure layer).

use super::{ActorId, ExitReason};

/// The unwind payload with which a killed actor's receive ends its body.
pub(crate) struct KillSignal(pub(crate) ExitReason);

/// Per-actor extension: allocated on first use of links, monitors or names.
#[derive(Default)]
pub(crate) struct Ext {}

impl Ext {
    /// Whether anyone is told of this actor's death (then a panic is not printed).
    pub(crate) fn has_observers(&self) -> bool {
        false
    }

    /// Tells linked and monitoring actors that `id` ended with `reason`.
    pub(crate) fn notify(self, _id: ActorId, _reason: &ExitReason) {}
}
