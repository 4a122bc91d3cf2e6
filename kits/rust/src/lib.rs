//! A client library for the Mamma Mia! arena (`mammamia.v1` over gRPC), and the
//! starter bot built on it (`src/bin/starter.rs`).
//!
//! - [`Connector`]: plaintext, or TLS trusting a CA file; a channel per server.
//! - [`play_seat`]: one seat to the end of its match on a Play stream, with
//!   resume from the last sequence seen and reconnection with backoff.
//! - [`register`] and [`play_ladder`]: a ladder bot, every assignment played on
//!   one PlayMatches call per host (`sit`), Join and Play as the fallback.
//! - [`Decision`], [`View`], [`Choice`]: the typed view and options, with the
//!   decision's deadline, time bank and default instant.
//! - [`Strategy`]: what a bot author writes; [`Starter`] is the starter bot's.
//!
//! The wire types are generated from `protos/` at build time into [`pb`].

/// The generated `mammamia.v1` messages and client stubs (arena.proto).
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("mammamia.v1");
}

pub mod connect;
pub mod control;
pub mod ladder;
pub mod recipes;
pub mod seat;
pub mod strategy;
pub mod view;

pub use connect::{ConnectError, Connector};
pub use control::{stop_pair, Backoff, Log, Stop, Stopper};
pub use ladder::{play_ladder, register, Entry, LadderError, Left};
pub use recipes::{Counts, Ingredient, Recipe};
pub use seat::{play_seat, EndStatus, MatchEnd, Progress, SeatError};
pub use strategy::{Answer, Starter, Strategy};
pub use view::{Choice, Decision, DecisionKind, Draw, Phase, Resolve, SeatInfo, Turn, View};
