//! The hop's control protocol, the part its callers and the hop share: `POST
//! /control/configure` with a [`HopSetup`] (a hop started without a configuration, compose's
//! `hop-N`, is made a proxy or the bottom of a chain, [`Role`]), and `GET /inflight`, how many
//! calls are still working. The hop (`dependency_service::hop`) answers them; the swarm's chain
//! run (`client_swarm`) calls them.

use serde::{Deserialize, Serialize};

use e03_model::chain::{Bottom, HopSpec};

/// How many calls of a hop are still working or not yet in its log (plain text, a number).
pub const INFLIGHT_PATH: &str = "/inflight";

/// The control call that configures a hop started without a configuration.
pub const CONFIGURE_PATH: &str = "/control/configure";

/// What `POST /control/configure` takes (JSON): a hop's configuration (`dependency_service::hop::HopConfig`) without the address, its log
/// named relative to the hop's `--log-dir`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopSetup {
    /// Its layer in the chain (1: called by the top caller).
    pub layer: u32,
    pub role: Role,
    /// The log file under the hop's log directory: a relative path of plain names (letters,
    /// digits, `.`, `-`, `_`; no `..`) ending in `.jsonl`. Missing folders are created; the file
    /// is appended to.
    pub log: String,
}

/// A proxy towards `upstream` (`http://IP:PORT`), or the bottom of the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Role {
    Proxy {
        spec: HopSpec,
        upstream: String,
        #[serde(default)]
        propagate: bool,
    },
    Bottom {
        bottom: Bottom,
    },
}
