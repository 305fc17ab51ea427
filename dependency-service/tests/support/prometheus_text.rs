//! A strict reader of the Prometheus / OpenMetrics text exposition, shared by the live metrics
//! tests of the dependency service and of the swarm (included with `#[path]`).

use std::collections::BTreeMap;

/// One sample: name, labels, value.
pub type Sample = (String, BTreeMap<String, String>, f64);

/// Parses the text exposition strictly: comments must be `# HELP`, `# TYPE`, `# UNIT` or
/// `# EOF` (last); every other line must be `name{label="value",..} number`.
pub fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('#') {
            let word = rest.split_whitespace().next().unwrap_or("");
            assert!(
                ["HELP", "TYPE", "UNIT", "EOF"].contains(&word),
                "bad comment line {line:?}"
            );
            continue;
        }
        let (head, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value in {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|e| panic!("bad value in {line:?}: {e}"));
        let (name, labels) = match head.split_once('{') {
            None => (head, BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels in {line:?}"));
                let mut labels = BTreeMap::new();
                for pair in body.split(',').filter(|p| !p.is_empty()) {
                    let (k, v) = pair
                        .split_once('=')
                        .unwrap_or_else(|| panic!("bad label {pair:?} in {line:?}"));
                    let v = v
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or_else(|| panic!("unquoted label value in {line:?}"));
                    labels.insert(k.to_string(), v.to_string());
                }
                (name, labels)
            }
        };
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        assert!(valid_name, "bad metric name in {line:?}");
        samples.push((name.to_string(), labels, value));
    }
    assert!(text.trim_end().ends_with("# EOF"), "no # EOF at the end");
    samples
}

/// The value of `name` whose labels include every pair of `want`; 0 when there is none.
pub fn value(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(n, labels, _)| {
            n == name
                && want
                    .iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, v)| *v)
        .sum()
}
