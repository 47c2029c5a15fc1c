"""What the openshift files share: the script templates' renderer and the stdin bundle of files."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from components import shell_templates


def render_script(name: str, values: dict[str, shell_templates.Value]) -> str:
    """components/openshift/scripts/<name> with its values written in front of its body."""
    return shell_templates.render("components.openshift", name, values)


def file_bundle(files: Mapping[str, str]) -> str:
    """Files as the helper and lifecycle scripts read them on stdin: one "<path> <base64>" line each."""
    for path in files:
        if not path or path.startswith("/") or ".." in path or any(c.isspace() for c in path):
            raise ValueError(f"{path!r} is not a relative path without blanks")
    return "".join(f"{path} {base64.b64encode(text.encode()).decode()}\n" for path, text in files.items())
