//! `analyzer`: see [`analyzer::cli`] for usage.

fn main() {
    std::process::exit(analyzer::main_entry(std::env::args_os().collect()));
}
