//! Entry point: parse arguments, run, map the outcome to an exit code. No logic here.

#![forbid(unsafe_code)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;

fn main() {
    ctxconsole::fsio::write_limit_is_an_error();
    let cli = match ctxconsole::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go out as clap writes them; a usage error quotes what was typed,
        // which may hold any bytes: it goes through the one terminal-safe sink.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            ctxconsole::cli::out::eprint_line(&ctxconsole::cli::usage_error_text(&e));
            std::process::exit(e.exit_code());
        }
    };
    let code = match ctxconsole::cli::run(cli) {
        Ok(()) => ctxconsole::exit::OK,
        Err(err) => {
            ctxconsole::cli::out::eprint_line(&format!(
                "ctxconsole: {}",
                ctxconsole::exit::Said(&err)
            ));
            ctxconsole::exit::code_for(&err)
        }
    };
    std::process::exit(code);
}
