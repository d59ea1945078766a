//! Shared measurement code for the rgex microbenchmarks.
//!
//! Every bench (see `BENCHMARKS.md`) measures its physical floor in the
//! same run, repeats each data point, reports median, min and max, and
//! writes a table, JSON records and an SVG plot. The pieces live here so
//! each bench binary only describes what it measures:
//!
//! - [`affinity`]: pin threads to CPUs, count the node's CPUs;
//! - [`cli`]: the options every bench takes, writing its outputs;
//! - [`floor`]: cache-line round trip between two cores, memcpy bandwidth;
//! - [`timing`]: calibrate iteration counts to a target duration;
//! - [`stats`]: median/min/max over repetitions;
//! - [`payload`]: generate and check test payloads;
//! - [`report`]: text tables, JSON records, SVG plots;
//! - [`ucx`]: run the `ucx_perftest` peer tool and parse its output;
//! - [`mpi`]: run the Open MPI peer (`benches/peers/mpi_peer.c`) and
//!   parse its output;
//! - [`rounds`]: rgex and its peers interleaved in rounds, the floor
//!   measured before and after each point;
//! - [`fabric`]: the libfabric provider floor (`fi_pingpong`) for benches
//!   run with `RGEX_CONDUIT=ofi`;
//! - [`proc`]: the peer tools' child processes (deadlines, no orphans);
//! - [`label`]: what a run's records name as their provider (the
//!   software verbs device's figures labelled as the emulation's).

pub mod affinity;
pub mod cli;
pub mod fabric;
pub mod floor;
pub mod label;
pub mod mpi;
pub mod payload;
pub mod proc;
pub mod report;
pub mod rounds;
pub mod stats;
pub mod timing;
pub mod ucx;
