//! How a command can fail: its timeout, the connection, or the server.

use core::fmt;
use std::io;

/// Why a command got no usable reply.
///
/// # Examples
/// ```
/// use wheel_bench::redis::CommandError;
///
/// let e = CommandError::Timeout;
/// assert_eq!(e.to_string(), "the command timed out");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// Its timeout fired before the reply came; a reply that comes later is
    /// dropped.
    Timeout,
    /// The connection failed (read or write error, or the server closed it)
    /// before the reply came, or had failed before the command was sent.
    Disconnected(io::ErrorKind),
    /// The server answered with an error reply.
    Server(String),
    /// The command could not be encoded.
    Encode,
    /// The timer service refused the command's timeout.
    Timer(wheel_sync::ScheduleError),
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Timeout => write!(f, "the command timed out"),
            CommandError::Disconnected(kind) => write!(f, "the connection failed: {kind}"),
            CommandError::Server(message) => write!(f, "the server answered {message}"),
            CommandError::Encode => write!(f, "the command could not be encoded"),
            CommandError::Timer(e) => write!(f, "the timeout could not be armed: {e}"),
        }
    }
}

impl std::error::Error for CommandError {}
