//! A fault proxy in front of a chain's layer (`[[chain.variant.proxy]]`,
//! `examples/amplification-proxy.toml`): live, `lab run` puts a real `lab proxy --http` between
//! two hops; simulated, the same proxy model decides at each call's arrival. Both give the
//! calls per layer the model predicts (hand-computed below), the proxy's own counts included,
//! and their checks pass. Compose's hop services, which have no proxy between them, refuse such
//! a variant before any traffic, and a bad proxy table or a bad `--timeline-json` exits 2
//! naming it.

mod common;

use common::lab;

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/amplification-proxy.toml"
);

/// A variant's id, and its calls, its proxy's received calls and those not forwarded, per layer.
type Figures = (String, Vec<u64>, Vec<u64>, Vec<u64>);

/// `chain.json`'s figures of each variant.
fn figures(dir: &std::path::Path) -> Vec<Figures> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chain.json")).unwrap()).unwrap();
    let list = |v: &serde_json::Value, k: &str| -> Vec<u64> {
        v[k].as_array()
            .unwrap_or_else(|| panic!("{k} in {v}"))
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect()
    };
    json["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_string(),
                list(v, "calls_per_layer"),
                list(v, "proxied_per_layer"),
                list(v, "not_forwarded_per_layer"),
            )
        })
        .collect()
}

fn run(command: &str) -> Vec<Figures> {
    let out = common::temp("chain-proxy", command);
    let o = lab()
        .args([command, EXAMPLE, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{err}");
    for variant in ["first-call-lost", "answer-lost"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {variant} ")) && l.contains("model"))
            .unwrap_or_else(|| panic!("no check row of {variant} in\n{stdout}"));
        assert!(row.contains("PASS"), "{row}");
    }
    let run = std::fs::read_link(out.join("latest")).unwrap();
    let dir = if command == "run" {
        out.join(run).join("amplification-proxy")
    } else {
        out.join(run).join("simulated/amplification-proxy")
    };
    let f = figures(&dir);
    let _ = std::fs::remove_dir_all(&out);
    f
}

/// Per top request (3 of them), with 3 attempts at every hop and a bottom that always fails:
/// - first-call-lost: the proxy before inventory answers 503 to the first call of each
///   request, so order's first attempt fails there: inventory receives 9 - 1 = 8 calls, the
///   bottom 8 x 3 = 24 (27 without the proxy); the proxy received 9, forwarded 8.
/// - answer-lost: the proxy before the gateway resets the first call of each request after the
///   gateway answered (its 27 bottom calls done); the top caller's second attempt runs the
///   chain again: 2 gateway calls, 6 order, 18 inventory, 54 bottom calls per request.
fn assert_model(f: &[Figures]) {
    let want = [
        (
            "first-call-lost",
            vec![3, 3, 9, 24, 72],
            vec![0, 0, 0, 27, 0],
            vec![0, 0, 0, 3, 0],
        ),
        (
            "answer-lost",
            vec![3, 6, 18, 54, 162],
            vec![0, 6, 0, 0, 0],
            vec![0, 0, 0, 0, 0],
        ),
    ];
    assert_eq!(f.len(), want.len(), "{f:?}");
    for ((id, calls, proxied, stopped), (wid, wcalls, wproxied, wstopped)) in f.iter().zip(want) {
        assert_eq!(id, wid);
        assert_eq!(calls, &wcalls, "{id}: calls per layer");
        assert_eq!(proxied, &wproxied, "{id}: calls its proxy received");
        assert_eq!(stopped, &wstopped, "{id}: calls its proxy did not forward");
    }
}

#[test]
fn a_proxy_before_a_layer_gives_the_models_calls_per_layer_live_and_simulated() {
    let live = run("run");
    let simulated = run("simulate");
    assert_model(&live);
    assert_model(&simulated);
}

#[test]
fn compose_hop_services_refuse_a_variant_with_a_proxy_before_any_traffic() {
    let dir = common::temp("chain-proxy", "compose");
    let o = lab()
        .args([
            "swarm",
            "--targets",
            "A=http://127.0.0.1:9@http://127.0.0.1:9",
            "--scenarios",
            EXAMPLE,
            "--chain-hops",
            "http://127.0.0.1:9,http://127.0.0.1:9,http://127.0.0.1:9,http://127.0.0.1:9",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("first-call-lost has a fault proxy in front of a layer"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(&dir).map_or(true, |mut d| d.next().is_none()),
        "nothing is written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_proxy_table_names_its_key_and_line_and_exits_2() {
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    let dir = common::temp("chain-proxy", "bad");
    std::fs::create_dir_all(&dir).unwrap();
    for (from, to, said) in [
        (
            "before = \"inventory\"",
            "before = \"warehouse\"",
            "before = \"warehouse\": expected the name of a hop of this variant or \"bottom\"",
        ),
        (
            "{ phase = \"abort\", start_s = 0.0",
            "{ phase = \"freeze\", start_s = 0.0",
            "the freeze phase: a chain's proxy applies the HTTP fault phases only",
        ),
        (
            "status = 503, first = 1",
            "status = 99, first = 1",
            "status",
        ),
    ] {
        let file = dir.join("bad.toml");
        std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
        let o = lab().arg("list").arg(&file).output().unwrap();
        let (_, err) = common::text(&o);
        assert_eq!(o.status.code(), Some(2), "{from} -> {to}: {err}");
        assert!(err.contains(said), "{from} -> {to}: {err}");
        assert!(err.contains("bad.toml:"), "the file and its line: {err}");
    }
    let o = lab()
        .args([
            "proxy",
            "--http",
            "--upstream",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
            "--timeline-json",
            "{\"down\": 3}",
        ])
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid --timeline-json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
