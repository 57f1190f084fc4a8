"""dplearn.cape.join: two Python sites with DataFrames take part in a
capeFM fit served by `dplearn cape serve` on loopback (--insecure: no TLS,
loopback only, a test of the binding, not of the protocol's security, which
the Go tests cover)."""

import socket
import subprocess
import threading

import pytest

import dplearn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_sites_join(tmp_path, cps, cps_schema):
    port = free_port()
    sp = tmp_path / "schema.json"
    cps_schema.save(str(sp))
    out = tmp_path / "model.json"
    server = subprocess.Popen([dplearn.binary(), "cape", "serve", "--insecure", "--listen", f"127.0.0.1:{port}",
                               "--sites", "a,b", "--schema", str(sp), "--model", "linear", "--epsilon", "1",
                               "--delta", "1e-6", "--out", str(out), "--round-timeout", "60s"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    halves = {"a": cps.iloc[::2].reset_index(drop=True), "b": cps.iloc[1::2].reset_index(drop=True)}
    results, errors = {}, {}

    def site(name):
        try:
            results[name] = dplearn.cape.join(halves[name], server=f"127.0.0.1:{port}", schema=cps_schema,
                                              model="linear", epsilon=1.0, delta=1e-6, insecure=True, name=name)
        except Exception as e:  # reported below
            errors[name] = e

    threads = [threading.Thread(target=site, args=(n,)) for n in halves]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        so, se = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    assert not errors, errors
    assert server.returncode == 0, se.decode()
    assert out.exists()
    import json
    model = json.loads(out.read_text())
    assert len(model["coefficients"]) == len(model["features"]) == 9 and model["privacy"]["private"]
    assert set(results) == {"a", "b"}
    assert all(isinstance(r, dict) and r for r in results.values()), results
    # a site's table with a bad level is refused locally, naming the column
    bad = halves["a"].head(100).copy()
    bad.loc[0, "smsa"] = "maybe"
    with pytest.raises(dplearn.DataError, match="smsa"):
        dplearn.cape.join(bad, server=f"127.0.0.1:{port}", schema=cps_schema, model="linear", epsilon=1.0,
                          delta=1e-6, insecure=True, name="a")
