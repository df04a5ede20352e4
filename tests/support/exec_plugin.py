"""A real ``client.authentication.k8s.io`` exec credential plugin, scripted by a test.

The plugin is a Python script the client runs as a kubeconfig user's ``exec``. It answers
the ``ExecCredential`` statuses of its ``answers`` file in turn (the last one repeats), so
a test can change what the next run gives by writing ``answer``/``answers`` between
requests, and it counts its runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

API_VERSION = "client.authentication.k8s.io/v1"


class ExecPlugin:
    def __init__(self, directory: Path, answers: list[dict[str, Any]] | None = None):
        self.script = directory / "exec-plugin.py"
        self.answers_file = directory / "exec-answers.json"
        self.runs_file = directory / "exec-runs"
        self.script.write_text(
            f"#!{sys.executable}\n"
            "import json\n"
            f"answers = json.load(open({str(self.answers_file)!r}))\n"
            f"open({str(self.runs_file)!r}, 'a').write('x')\n"
            f"json.dump(answers[1:] or answers, open({str(self.answers_file)!r}, 'w'))\n"
            f"print(json.dumps({{'apiVersion': {API_VERSION!r}, 'kind': 'ExecCredential',"
            " 'status': answers[0]}))\n"
        )
        self.script.chmod(0o755)
        self.runs_file.write_text("")
        self.answers(answers or [{"token": "t"}])

    def answers(self, statuses: list[dict[str, Any]]) -> None:
        """What the next runs answer, in turn (the last repeats)."""
        self.answers_file.write_text(json.dumps(statuses))

    def answer(self, status: dict[str, Any]) -> None:
        self.answers([status])

    @property
    def runs(self) -> int:
        return len(self.runs_file.read_text())

    @property
    def user(self) -> dict[str, Any]:
        """The kubeconfig user entry that runs it."""
        return {"exec": {"apiVersion": API_VERSION, "command": str(self.script)}}
