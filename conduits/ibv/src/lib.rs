//! Placeholder: this crate is filled by its own issue. It builds so the workspace layout is complete.
