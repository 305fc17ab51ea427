//! `lab analyze`: the analyzer's one command line (`analyzer::cli`) as the lab's front shows it:
//! its errors and warnings start with `lab:` like every other command's, and the series of
//! 100 ms windows stays in the files unless `--series` ([`crate::front`]). The flags, the
//! figures and the exit codes are the analyzer's: 0 fine; 1 outputs could not be written, or
//! client and server logs of a complete run disagree; 2 bad input.

use std::ffi::OsString;

use crate::front::Show;

/// `lab analyze ARGS` (`args[0]` is `lab analyze`); the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let front = analyzer::cli::Front {
        name: "lab analyze",
        error: "lab: ",
        warning: "lab: warning: ",
        clap_error: &|e: &clap::Error| e03_core::cli::clap_exit("lab", e),
        print_tables: &|summary, dir, series| {
            let _ = crate::front::set(Show {
                series,
                json: false,
            });
            crate::front::print_tables(summary, dir)
        },
    };
    analyzer::cli::main_entry_with(args, &front)
}
