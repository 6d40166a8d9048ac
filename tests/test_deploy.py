"""deploy/nginx.conf.template as deploy/replicas.sh fills it in: a valid nginx config that keeps only the WebSocket open
for an hour, names no nginx version, has descriptors for all its connections and tells the replicas who asked."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STREAM = "/_stcore/stream"  # Streamlit's WebSocket


def rendered(folder: Path) -> str:
    """The template with replicas.sh's substitutions (two replicas behind port 8080)."""
    upstreams = "".join(f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=10s;\n" for port in (8501, 8502))
    text = (ROOT / "deploy" / "nginx.conf.template").read_text()
    text = text.replace("@PORT@", "8080").replace("@DIR@", str(folder)).replace("@UPSTREAMS@\n", upstreams)
    return text


def blocks(text: str) -> dict[str, str]:
    """Each location's body by its (normalized) pattern, and the rest of the file under "": enough to say where a
    directive applies in this template (locations hold no nested blocks)."""
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    found = {" ".join(m.group(1).split()): m.group(2) for m in re.finditer(r"location\s+([^{]+)\{([^}]*)\}", code)}
    found[""] = re.sub(r"location\s+[^{]+\{[^}]*\}", "", code)
    return found


def test_the_template_is_a_valid_nginx_config(tmp_path):
    if not shutil.which("nginx"):
        pytest.fail("nginx is missing: install it with `apt-get install nginx` (.ci/run does)")
    (tmp_path / "nginx.conf").write_text(rendered(tmp_path))
    proc = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-e", "stderr"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


def test_only_the_websocket_waits_an_hour_for_its_replica(tmp_path):
    parts = blocks(rendered(tmp_path))
    assert re.search(r"proxy_read_timeout\s+1h;", parts[f"= {STREAM}"])
    others = [body for pattern, body in parts.items() if pattern != f"= {STREAM}"]
    assert not any("proxy_read_timeout" in body for body in others)  # nginx's default 60 s everywhere else
    assert "proxy_pass http://app;" in parts["/"]


def test_no_version_is_sent_and_every_connection_has_its_descriptors(tmp_path):
    text = blocks(rendered(tmp_path))[""]
    assert re.search(r"^\s*server_tokens\s+off;", text, re.MULTILINE)
    connections = int(re.search(r"worker_connections\s+(\d+);", text).group(1))
    descriptors = int(re.search(r"worker_rlimit_nofile\s+(\d+);", text).group(1))
    assert descriptors >= 2 * connections  # a proxied connection holds one to the browser and one to the replica


def test_the_replicas_are_told_the_clients_address_and_scheme(tmp_path):
    text = rendered(tmp_path)
    assert re.search(r"proxy_set_header\s+X-Forwarded-For\s+\$proxy_add_x_forwarded_for;", text)
    assert re.search(r"proxy_set_header\s+X-Forwarded-Proto\s+\$scheme;", text)
    assert not any("proxy_set_header" in body for pattern, body in blocks(text).items() if pattern)  # one set for all
