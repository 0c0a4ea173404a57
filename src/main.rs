//! Entry point: parse arguments, run, map the outcome to an exit code. No logic here.

#![forbid(unsafe_code)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;

fn main() {
    let cli = ctxconsole::cli::Cli::parse();
    let code = match ctxconsole::cli::run(cli) {
        Ok(()) => ctxconsole::exit::OK,
        Err(err) => {
            ctxconsole::cli::out::eprint_line(&format!("ctxconsole: {err:#}"));
            ctxconsole::exit::code_for(&err)
        }
    };
    std::process::exit(code);
}
