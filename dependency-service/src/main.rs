//! `dependency-service`: see [`dependency_service::main_entry`].

fn main() {
    std::process::exit(dependency_service::main_entry(
        std::env::args_os().collect(),
    ))
}
