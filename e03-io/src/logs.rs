//! The one way the lab writes a finished file, and a chain's logs written whole. Every log's
//! name is the plan's (`e03_plan::log_names`).

use std::io::Write;
use std::path::Path;

use e03_model::chain::ChainVariant;
use e03_plan::log_names::{layer_log_name, proxy_log_name, TOP_LOG};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename: a
/// reader sees the old file or the whole new one, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes records as JSON Lines, at once ([`write_atomic`]): the simulator's chain runs, in the
/// hops' format.
pub fn write_jsonl<T: serde::Serialize>(path: &Path, records: &[T]) -> std::io::Result<()> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// Writes a simulated chain variant's logs into `dir` under the names the live processes use:
/// `top.jsonl`, a log per layer that a call reached, and the `proxied` records of each fault
/// proxy (with the layer it stands in front of) as its log's lines.
pub fn write_chain_logs(
    dir: &Path,
    variant: &ChainVariant,
    tops: &[e03_model::chain::TopRecord],
    calls: &[e03_model::chain::CallRecord],
    proxied: &[(u32, e03_model::events::ProxiedRecord)],
) -> std::io::Result<()> {
    write_jsonl(&dir.join(TOP_LOG), tops)?;
    for layer in 1..=variant.bottom_layer() {
        let mine: Vec<_> = calls.iter().filter(|c| c.layer == layer).collect();
        if !mine.is_empty() {
            write_jsonl(&dir.join(layer_log_name(variant, layer)), &mine)?;
        }
        if variant.proxy_before(layer).is_some() {
            let lines: Vec<_> = proxied
                .iter()
                .filter(|(l, _)| *l == layer)
                .map(|(_, p)| e03_model::events::Event::Proxied(p.clone()))
                .collect();
            write_jsonl(&dir.join(proxy_log_name(variant, layer)), &lines)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_written_one_line_each_and_no_temporary_file_is_left() {
        let dir = std::env::temp_dir().join(format!("e03-io-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(TOP_LOG);
        write_jsonl(&path, &[1, 2, 3]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n2\n3\n");
        assert!(!path.with_extension("json.tmp").exists());
        // A folder that does not exist: an error, and nothing left behind.
        assert!(write_jsonl(&dir.join("nope/x.jsonl"), &[1]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
