//! `parallax`: a thin binary over the library (see `src/cli.rs`).

use clap::Parser;

fn main() -> std::process::ExitCode {
    parallax::cli::run(parallax::cli::Cli::parse())
}
