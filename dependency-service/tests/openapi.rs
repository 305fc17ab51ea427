//! The API contract (docs/openapi/*.json) against the routers: every route an axum router of the
//! service or the hop declares (`.route(PATH, METHOD(..))` in src/routes.rs and src/hop.rs, the
//! path constants resolved from their source) is in the document of its listener, and every
//! documented route is in the router, method and path alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `pub const NAME: &str = "/path";` of the files the routers take their paths from.
fn path_constants() -> BTreeMap<String, String> {
    let mut consts = BTreeMap::new();
    for file in [
        "e03-plan/src/control.rs",
        "e03-plan/src/hop_control.rs",
        "e03-model/src/ledger.rs",
        "dependency-service/src/routes.rs",
        "dependency-service/src/hop.rs",
    ] {
        for line in read(file).lines() {
            let Some(rest) = line.trim().strip_prefix("pub const ") else {
                continue;
            };
            if let Some((name, value)) = rest.split_once(": &str = \"") {
                if let Some(value) = value.strip_suffix("\";") {
                    consts.insert(name.trim().to_string(), value.to_string());
                }
            }
        }
    }
    consts
}

/// The routes (`METHOD /path`) declared in the body of `fn name` in `file`.
fn router_routes(file: &str, name: &str) -> BTreeSet<String> {
    let text = read(file);
    let start = text
        .find(&format!("fn {name}("))
        .unwrap_or_else(|| panic!("no fn {name} in {file}"));
    let body = &text[start..];
    // To the function's closing brace at the start of a line (rustfmt's layout).
    let body = &body[..body.find("\n}").expect("the function ends")];
    let consts = path_constants();
    let mut routes = BTreeSet::new();
    for part in body.split(".route(").skip(1) {
        let (path, rest) = part.split_once(',').expect("route(PATH, METHOD(..))");
        let path = path.trim();
        let path = match path.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            Some(literal) => literal.to_string(),
            None => consts
                .get(path)
                .unwrap_or_else(|| panic!("{file}: no path constant {path}"))
                .clone(),
        };
        let method = rest.trim_start().split('(').next().unwrap().trim();
        assert!(
            ["get", "post", "put", "delete", "patch", "head"].contains(&method),
            "{file}: route {path} with method {method:?}"
        );
        routes.insert(format!("{} {path}", method.to_uppercase()));
    }
    assert!(!routes.is_empty(), "{file}: fn {name} declares no route");
    routes
}

/// The operations of an OpenAPI document (`METHOD /path`), each checked to declare answers.
fn documented(doc: &str) -> BTreeSet<String> {
    let d: serde_json::Value =
        serde_json::from_str(&read(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
    assert!(
        d["openapi"].as_str().unwrap_or("").starts_with("3."),
        "{doc}"
    );
    let mut ops = BTreeSet::new();
    for (path, item) in d["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            let responses = op["responses"]
                .as_object()
                .unwrap_or_else(|| panic!("{doc}: {method} {path} without responses"));
            assert!(responses.contains_key("200"), "{doc}: {method} {path}");
            ops.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    ops
}

/// The difference both ways, as a message.
fn compare(
    doc: &str,
    documented: &BTreeSet<String>,
    routed: &BTreeSet<String>,
) -> Result<(), String> {
    let undocumented: Vec<_> = routed.difference(documented).collect();
    let unrouted: Vec<_> = documented.difference(routed).collect();
    if undocumented.is_empty() && unrouted.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{doc} and the router differ: routes missing from the document: {undocumented:?}; \
             documented routes the router lacks: {unrouted:?}"
        ))
    }
}

#[test]
fn every_route_is_documented_and_every_documented_route_exists() {
    for (doc, file, router) in [
        (
            "docs/openapi/dependency-work.json",
            "dependency-service/src/routes.rs",
            "work_router",
        ),
        (
            "docs/openapi/dependency-control.json",
            "dependency-service/src/routes.rs",
            "control_router",
        ),
        (
            "docs/openapi/hop.json",
            "dependency-service/src/hop.rs",
            "bind_with",
        ),
    ] {
        let routed = router_routes(file, router);
        compare(doc, &documented(doc), &routed).unwrap();
    }
}

#[test]
fn the_comparison_names_a_route_on_either_side_only() {
    let doc: BTreeSet<String> = ["GET /work".to_string()].into();
    let both: BTreeSet<String> = ["GET /work".to_string(), "POST /new".to_string()].into();
    let e = compare("d", &doc, &both).unwrap_err();
    assert!(
        e.contains("missing from the document: [\"POST /new\"]"),
        "{e}"
    );
    let e = compare("d", &both, &doc).unwrap_err();
    assert!(e.contains("the router lacks: [\"POST /new\"]"), "{e}");
    // The source scan sees the work router's routes, constants resolved.
    let work = router_routes("dependency-service/src/routes.rs", "work_router");
    assert!(
        work.contains("POST /charge") && work.contains("GET /metrics"),
        "{work:?}"
    );
}
