"""What the Kubernetes schemas do not check in deploy/k8s (scripts/check-k8s.sh): every pod
runs as non-root with the runtime's seccomp profile, every container has a read-only root
filesystem, no privilege escalation, no capability and CPU and memory requests; the run is an
Indexed Job; the swarm's --targets name the dependency Services and their ports; the analyzer
collects the logs (--listen) behind a Service that every pod's E03_SEND_LOGS names, and no pod
but the analyzer mounts a persistent volume; every E03_* key of the ConfigMap is a parameter of
the lab (docs/parameters.md, generated from the code)."""

import re
import sys

import yaml


def fail(msg):
    print(f"check-k8s: {msg}", file=sys.stderr)
    sys.exit(1)


def main(rendered, parameters_md):
    objects = [o for o in yaml.safe_load_all(open(rendered)) if o]
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    pods = []
    for o in by_kind.get("Deployment", []) + by_kind.get("Job", []):
        pods.append((f"{o['kind']}/{o['metadata']['name']}", o["spec"]["template"]["spec"]))
    if len(by_kind.get("Deployment", [])) != 4 or len(by_kind.get("Job", [])) != 2:
        fail(f"expected 4 Deployments and 2 Jobs, got {sorted((k, len(v)) for k, v in by_kind.items())}")
    for name, pod in pods:
        sc = pod.get("securityContext", {})
        if sc.get("runAsNonRoot") is not True or sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            fail(f"{name}: the pod must run as non-root with seccompProfile RuntimeDefault")
        if pod.get("automountServiceAccountToken") is not False:
            fail(f"{name}: the lab needs no service account token")
        for c in pod.get("initContainers", []) + pod["containers"]:
            csc = c.get("securityContext", {})
            where = f"{name} container {c['name']}"
            if csc.get("readOnlyRootFilesystem") is not True:
                fail(f"{where}: readOnlyRootFilesystem must be true")
            if csc.get("allowPrivilegeEscalation") is not False:
                fail(f"{where}: allowPrivilegeEscalation must be false")
            if csc.get("capabilities", {}).get("drop") != ["ALL"]:
                fail(f"{where}: every capability must be dropped")
            req = c.get("resources", {}).get("requests", {})
            if "cpu" not in req or "memory" not in req:
                fail(f"{where}: CPU and memory requests are required")
            if not c["image"].startswith("e03-lab"):
                fail(f"{where}: image {c['image']} is not the lab's")
    jobs = {j["metadata"]["name"]: j for j in by_kind["Job"]}
    job = jobs.get("e03-run") or fail("no Job e03-run (the swarm's shards)")
    spec = job["spec"]
    if spec.get("completionMode") != "Indexed":
        fail("the run must be an Indexed Job")
    shards = spec.get("completions")
    if not shards or spec.get("parallelism") != shards:
        fail(f"e03-run: parallelism {spec.get('parallelism')} must equal completions {shards}: every shard runs at once")
    swarm = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in swarm.get("env", [])}
    index = env.get("SHARD_INDEX", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
    if "job-completion-index" not in index or env.get("E03_SHARD", {}).get("value") != f"$(SHARD_INDEX)/{shards}":
        fail(f"e03-run: E03_SHARD must be the completion index over {shards}")
    cm_data = {k: v for cm in by_kind["ConfigMap"] for k, v in cm["data"].items()}
    if cm_data.get("E03_BUDGET_SCOPE") == "shard" and int(cm_data.get("E03_SHARDS", "1")) % shards:
        fail(f"E03_SHARDS={cm_data.get('E03_SHARDS')} must be a multiple of the {shards} shards")
    report = jobs.get("e03-report") or fail("no Job e03-report (the analyzer)")
    rargs = report["spec"]["template"]["spec"]["containers"][0]["args"]
    if "--wait-s" not in rargs or "--listen" not in rargs:
        fail("e03-report must collect the logs (--listen) and wait for the runs (--wait-s)")
    listen_port = int(rargs[rargs.index("--listen") + 1].rsplit(":", 1)[1])
    services_of = {s["metadata"]["name"]: s for s in by_kind["Service"]}
    collector = services_of.get("e03-report") or fail("no Service e03-report (where the logs go)")
    labels = report["spec"]["template"]["metadata"]["labels"]
    if not all(labels.get(k) == v for k, v in collector["spec"]["selector"].items()):
        fail("Service e03-report does not select the analyzer's pod")
    ports = {p["port"]: p["targetPort"] for p in collector["spec"]["ports"]}
    named = {p.get("name"): p["containerPort"] for p in report["spec"]["template"]["spec"]["containers"][0].get("ports", [])}
    cm_send = {k: v for cm in by_kind["ConfigMap"] for k, v in cm["data"].items()}.get("E03_SEND_LOGS", "")
    m = re.fullmatch(r"http://e03-report:(\d+)", cm_send)
    if not m or int(m.group(1)) not in ports or named.get(ports[int(m.group(1))]) != listen_port:
        fail(f"E03_SEND_LOGS={cm_send!r} must reach the analyzer's --listen port {listen_port} through Service e03-report")
    for name, pod in pods:
        if name == "Job/e03-report":
            continue
        if any("persistentVolumeClaim" in v for v in pod.get("volumes", [])):
            fail(f"{name}: only the analyzer mounts a persistent volume; the others send their logs")
        c = pod["containers"][0]
        sends = any(e.get("name") == "E03_SEND_LOGS" for e in c.get("env", [])) or any(
            r.get("configMapRef") for r in c.get("envFrom", []))
        if not sends:
            fail(f"{name}: E03_SEND_LOGS is not set: its logs would not reach the analyzer")
    args = swarm["args"]
    targets = args[args.index("--targets") + 1]
    services = {s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]} for s in by_kind["Service"]}
    deployments = {d["metadata"]["name"] for d in by_kind["Deployment"]}
    for entry in targets.split(","):
        strategy, urls = entry.split("=", 1)
        for url in urls.split("@"):
            m = re.fullmatch(r"http://([a-z0-9-]+):(\d+)", url)
            if not m:
                fail(f"--targets {entry}: {url} is not http://SERVICE:PORT")
            host, port = m.group(1), int(m.group(2))
            if host not in services or port not in services[host] or host not in deployments:
                fail(f"--targets {entry}: no Service and Deployment {host} with port {port}")
    known = set(re.findall(r"^\| `(E03_[A-Z0-9_]+)`", open(parameters_md).read(), re.M))
    if not known:
        fail(f"no parameter found in {parameters_md}")
    for cm in by_kind["ConfigMap"]:
        for key in cm["data"]:
            if key.startswith("E03_") and key not in known:
                fail(f"ConfigMap {cm['metadata']['name']}: {key} is not a parameter of the lab ({parameters_md})")
    print(f"check-k8s: {len(objects)} objects valid; {len(pods)} pods hardened; targets and parameters checked")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
