//! Entry point: parse the command line, set up logging, run the command.

use brandhub::cli::Cli;
use clap::Parser;
use std::process::ExitCode;

/// The server allocates and frees many small buffers per request (statements, rows, JSON) from
/// several threads; mimalloc serves them for a fraction of the CPU glibc's allocator takes
/// (docs/decisions/0019-mimalloc.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    brandhub::logging::init(&cli.log, cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(brandhub::commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
