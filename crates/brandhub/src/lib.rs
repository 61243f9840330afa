//! The `brandhub` command: each subcommand of [`cli::Cli`] is one function of [`commands`].
//! The integration tests drive the same functions and the real server.

pub mod backup;
pub mod cli;
pub mod commands;
pub mod demo_load;
pub mod logging;
