//! Entry point: parse arguments, run, map the outcome to an exit code. No logic here.

#![forbid(unsafe_code)]

use clap::Parser;

fn main() {
    let cli = ctxconsole::cli::Cli::parse();
    let code = match ctxconsole::cli::run(cli) {
        Ok(()) => ctxconsole::exit::OK,
        Err(err) => {
            eprintln!("ctxconsole: {err:#}");
            ctxconsole::exit::code_for(&err)
        }
    };
    std::process::exit(code);
}
