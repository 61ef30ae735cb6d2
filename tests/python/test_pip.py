"""`pip install ./src/python` offline (ctest: python.pip): into a fresh venv that sees
Debian's setuptools, from a copy of the source (the source tree stays clean). Skipped
when this python3 has no venv, pip or setuptools (Debian: python3-venv, python3-pip,
python3-setuptools)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "python")


class PipInstall(unittest.TestCase):
    def test_offline_install(self) -> None:
        for mod in ("venv", "ensurepip", "pip", "setuptools"):
            if importlib.util.find_spec(mod) is None:
                self.skipTest(f"{sys.executable} has no {mod}")
        with tempfile.TemporaryDirectory(prefix="deferd-py-pip-") as tmp:
            src = shutil.copytree(SRC, os.path.join(tmp, "src"),
                                  ignore=shutil.ignore_patterns("__pycache__", "build",
                                                                "*.egg-info"))
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True)
            py = os.path.join(venv, "bin", "python")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            p = subprocess.run([py, "-m", "pip", "install", "--no-index",
                                "--no-build-isolation", src], env=env, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = subprocess.run([py, "-c", "import deferd, sys; print(deferd.__file__); "
                                "print(deferd.Client.__doc__ is not None)"],
                               env=env, cwd=tmp, capture_output=True, text=True, check=True)
            self.assertTrue(p.stdout.startswith(venv), p.stdout)
            self.assertIn("True", p.stdout)
            typed = os.path.join(os.path.dirname(p.stdout.splitlines()[0]), "py.typed")
            self.assertTrue(os.path.exists(typed), "py.typed installed")


if __name__ == "__main__":
    unittest.main()
