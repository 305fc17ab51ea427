//! How the lab words an error: the error and its causes, each once ([`chain`]). On its own so
//! that the output folder's code ([`crate::outdir`]), the live runner ([`crate::live`]) and the
//! chain runner ([`crate::chain`]) print errors the same way without importing one another.

/// An error and its causes, each cause once.
pub fn chain(e: &anyhow::Error) -> String {
    e03_plan::cli::error_chain(AsRef::<dyn std::error::Error + 'static>::as_ref(e))
}
