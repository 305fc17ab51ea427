//! `client-swarm`: see [`client_swarm::main_entry`].

fn main() {
    std::process::exit(client_swarm::main_entry(std::env::args_os().collect()));
}
