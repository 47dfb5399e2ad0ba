//! A multiplexed Redis client for seed 001's own experiment: one TCP
//! connection shared by every caller, each command under a timeout that its
//! reply cancels, against a real `redis-server`.
//!
//! RESP is encoded and parsed by the `redis-protocol` crate; the
//! multiplexing and the timeouts, which the experiment measures, are here.
//!
//! # Ground rules
//! - Redis answers the commands of one connection in order, so the
//!   [`Connection`] matches replies by position: a FIFO of commands in
//!   flight, pushed in write order, popped by the reader thread.
//! - A command completes exactly once, with the first of its reply, its
//!   timeout or its connection's failure; the others find it complete and
//!   change nothing. The caller then takes the outcome, once.
//! - A timed-out command stays in the FIFO until its reply comes, which is
//!   then dropped and counted ([`Connection::late_replies`]).
//! - Each command's timeout is armed as it is written: a callback on the
//!   [`Client`]'s [`Expiry`] (cancelled by the caller when the reply wins),
//!   or a timeout future around the reply in the [`AsyncClient`].

mod async_client;
mod client;
mod connection;
mod error;
mod in_flight;
mod server;

pub use async_client::{AsyncCall, AsyncClient, AsyncExpiry};
pub use client::{Call, Client, Expiry};
pub use connection::Connection;
pub use error::CommandError;
pub use server::{stall, RedisServer, ServerError};

/// The reply frame type, `redis-protocol`'s.
pub use redis_protocol::resp2::types::BytesFrame;
