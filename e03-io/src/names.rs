//! The names a user types that e03-io's messages quote: the run directory's `latest` link and
//! the policy file's env var. Here, apart, so [`crate::error`] and the modules that use it can
//! both read them.

/// The symlink under OUT that points at the newest run directory.
pub const LATEST: &str = "latest";

/// The env var that names a user's policy file.
pub const POLICIES_ENV: &str = "E03_POLICIES";
