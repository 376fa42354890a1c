//! flashpath-fio: fio 3.33's job-file grammar, command line, typed options and output
//! formats (normal, json, json+, terse, time-series logs), as a reusable crate with no
//! dependency on the simulator.
//!
//! - [`parse`]: job files and command lines in, validated [`parse::Invocation`] out.
//! - [`report`]: a typed result model in, fio-shaped text out.

pub mod parse;
pub mod report;
