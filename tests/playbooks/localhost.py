"""One play run for real by ansible-playbook on localhost (local connection), its JSON callback output parsed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_on_localhost(tmp_path, play, *args):
    """Write ``play`` (a list of plays) to tmp_path and run it; returns the JSON callback's document."""
    path = tmp_path / ("%s.json" % play[0]["name"].replace(" ", "_"))
    path.write_text(json.dumps(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
               "-e", "ansible_python_interpreter=" + sys.executable, str(path), *args]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=300)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))
