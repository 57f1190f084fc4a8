"""Builds the dplearn executable from this repository with the Go toolchain
at install time (offline: the module cache or vendor tree must hold the
dependencies, as after `go mod download`) and ships it inside the package
(dplearn/_bin/dplearn). DPLEARN_SKIP_GO_BUILD=1 skips the build (the package
then uses $DPLEARN_BIN or `dplearn` on PATH)."""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def repo_root():
    root = os.environ.get("DPLEARN_REPO") or os.path.dirname(HERE)
    if not os.path.exists(os.path.join(root, "go.mod")):
        raise SystemExit(f"dplearn: no go.mod in {root}: build from the repository checkout (pip install ./python) "
                         "or set DPLEARN_REPO")
    return root


class BuildWithGo(build_py):
    def run(self):
        super().run()
        # the example tables (exampledata/) for dplearn.datasets
        data = os.path.abspath(os.path.join(self.build_lib, "dplearn", "data"))
        os.makedirs(os.path.join(data, "schemas"), exist_ok=True)
        ex = os.path.join(repo_root(), "exampledata")
        for f in ("CPS1988.csv", "SmokeBan.csv", "schemas/cps1988.json", "schemas/smokeban.json"):
            shutil.copyfile(os.path.join(ex, f), os.path.join(data, f))
        if os.environ.get("DPLEARN_SKIP_GO_BUILD"):
            return
        go = shutil.which("go")
        if go is None:
            raise SystemExit("dplearn: the Go toolchain (go) is needed to build the core; put it on PATH")
        out = os.path.abspath(os.path.join(self.build_lib, "dplearn", "_bin", "dplearn"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        env = dict(os.environ, GOPROXY=os.environ.get("GOPROXY", "off"))  # no download at install time
        subprocess.check_call([go, "build", "-trimpath", "-o", out, "./cmd/dplearn"], cwd=repo_root(), env=env)


setup(cmdclass={"build_py": BuildWithGo})
