"""MkDocs hooks: the API page is rendered from the OpenAPI schema that drf-spectacular makes of this
checkout at every build, so the page cannot describe an API the code no longer has."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# docs/api.md reads it as ../.tmp/openapi.json; .tmp/ is git-ignored.
SCHEMA = Path(".tmp") / "openapi.json"


def on_pre_build(config: Any, **kwargs: Any) -> None:
    root = Path(config["config_file_path"]).resolve().parent
    target = root / SCHEMA
    target.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # The schema needs the settings, which refuse to start without a key unless DEBUG is on; no key of a
    # real deployment is needed to describe the API.
    if not env.get("SECRET_KEY"):
        env["DEBUG"] = "1"
    # A temporary file renamed into place: a build running beside another never reads half a schema.
    handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".json")
    os.close(handle)
    try:
        subprocess.run(
            [
                sys.executable,
                str(root / "manage.py"),
                "spectacular",
                "--format",
                "openapi-json",
                "--validate",
                "--fail-on-warn",
                "--file",
                scratch,
            ],
            cwd=root,
            env=env,
            check=True,
        )
        os.replace(scratch, target)
    finally:
        Path(scratch).unlink(missing_ok=True)
