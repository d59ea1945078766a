//! The options a [`Vis`] is made with.

use crate::am::{self, AmPayload};
use crate::{Mechanism, Vis, VisConfig};
use rgex_core::Result;
use rgex_endpoint::Endpoint;
use std::sync::Arc;

/// Options of a [`Vis`].
#[derive(Clone, Debug, Default)]
pub struct VisBuilder {
    mechanism: Option<Mechanism>,
    am_payload: AmPayload,
    /// `Some(false)`: never share direct copies.
    shared_copy: Option<bool>,
}

impl VisBuilder {
    /// Force a mechanism (else the endpoint's [`VisConfig`]: `RGEX_VIS`
    /// as `rgex::init` read it, else `Auto`).
    pub fn mechanism(mut self, m: Mechanism) -> Self {
        self.mechanism = Some(m);
        self
    }

    /// How the AM pipeline's requests carry their payload (default
    /// [`AmPayload::Negotiated`]; [`AmPayload::Fixed`] is for comparison).
    pub fn am_payload(mut self, p: AmPayload) -> Self {
        self.am_payload = p;
        self
    }

    /// Whether large node-local strided copies (from [`SHARE_MIN`](crate::SHARE_MIN) bytes)
    /// are split into blocks that this rank's threads blocked in a wait or
    /// a poll on the endpoint help copy ([`Endpoint::share`]; default on).
    /// Off, every copy runs on the calling thread alone.
    ///
    /// ```no_run
    /// # fn demo(ep: &std::sync::Arc<rgex_endpoint::Endpoint>) -> rgex_core::Result<()> {
    /// let alone = rgex_vis::Vis::builder().shared_copy(false).build(ep)?;
    /// assert!(!alone.shared_copy());
    /// # Ok(()) }
    /// ```
    pub fn shared_copy(mut self, on: bool) -> Self {
        self.shared_copy = Some(on);
        self
    }

    /// Make the VIS context (registers the handlers on first use).
    pub fn build(self, ep: &Arc<Endpoint>) -> Result<Vis> {
        let mechanism = match self.mechanism {
            Some(m) => m,
            None => {
                ep.extension::<VisConfig, rgex_core::Error>(|_| Ok(Arc::new(VisConfig::default())))?
                    .mechanism
            }
        };
        Ok(Vis {
            ep: ep.clone(),
            proto: am::Proto::for_endpoint(ep)?,
            mechanism,
            am_payload: self.am_payload,
            shared_copy: self.shared_copy.unwrap_or(true),
        })
    }
}
