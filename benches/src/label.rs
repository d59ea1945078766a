//! How a run's records name what carried them: the `provider` field of
//! every record ([`report::Job`](crate::report::Job)), and a note for
//! figures that are an emulation's rather than a network's.

use crate::fabric::ofi_provider;

/// What the software verbs device's figures are (`RGEX_CONDUIT=ibv` with
/// `RGEX_IBV_DEVICE=soft`).
pub const SOFT_VERBS: &str =
    "soft verbs device (an HCA emulated over shared memory: the emulation's figures, not a network's)";

/// The provider a run's records name: the libfabric provider over ofi,
/// the verbs device over ibv (the software device labelled as an
/// emulation), none otherwise.
///
/// ```
/// std::env::set_var("RGEX_CONDUIT", "ibv");
/// std::env::set_var("RGEX_IBV_DEVICE", "soft");
/// assert_eq!(rgex_benches::label::provider().as_deref(), Some(rgex_benches::label::SOFT_VERBS));
/// std::env::set_var("RGEX_IBV_DEVICE", "mlx5_0");
/// assert_eq!(rgex_benches::label::provider().as_deref(), Some("verbs mlx5_0"));
/// std::env::set_var("RGEX_CONDUIT", "smp");
/// assert_eq!(rgex_benches::label::provider(), None);
/// ```
pub fn provider() -> Option<String> {
    let var = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
    match var("RGEX_CONDUIT").as_deref() {
        Some("ibv") => Some(match var("RGEX_IBV_DEVICE").as_deref() {
            Some("soft") => SOFT_VERBS.to_owned(),
            Some(dev) => format!("verbs {dev}"),
            None => "verbs (first active device)".to_owned(),
        }),
        _ => ofi_provider(),
    }
}

/// A line to print before a run's tables when its figures are an
/// emulation's (the software verbs device), else `None`.
pub fn note() -> Option<String> {
    provider()
        .filter(|p| p == SOFT_VERBS)
        .map(|p| format!("note: these figures are over the {p}"))
}
