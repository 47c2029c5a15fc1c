"""Read Pulumi.<stack>.yaml the way `make plan` and `make render` need it: strictly.

The engine reads a stack file before the program runs, so nothing in the program sees a YAML
error, an unknown top-level key or a misspelt namespace; here each is a ConfigError naming the
file, the key (or line and column) and what is allowed. `load_stack_config` also refuses
credentials in plain text and validates the `gpu-lab:` sections, so every problem of the file
is listed at once, before the program is run under mocks.
"""

from __future__ import annotations

import base64
import io
import tarfile
from pathlib import Path
from typing import Any

import yaml

from components.config import gpu_lab_sections, load_lab
from components.model import ConfigError, Problem, echo, unknown_key_message
from components.secrets import plaintext_secret_problems

REPO = Path(__file__).resolve().parent.parent

# Top-level keys of a stack settings file (Pulumi docs, "Project and stack settings file
# reference": https://www.pulumi.com/docs/iac/concepts/projects/stack-settings-file/).
TOP_LEVEL_KEYS = ("config", "secretsprovider", "encryptionsalt", "encryptedkey")
# Namespaces this program reads: its own, its providers', and the engine's.
NAMESPACES = ("gpu-lab", "vsphere", "pulumi", "kubernetes", "command")


class _StrictLoader(yaml.SafeLoader):
    """safe_load, but a key given twice in one mapping is an error (the engine's parser refuses it too)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in the same mapping; keep one", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def stack_path(stack: str) -> Path:
    return REPO / f"Pulumi.{stack}.yaml"


def read_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` block of a stack file ({"ns:key": value}); ConfigError for anything else."""
    name = path.name
    if not path.exists():
        stacks = ", ".join(p.name[len("Pulumi."):-len(".yaml")] for p in sorted(path.parent.glob("Pulumi.*.yaml")))
        raise ConfigError([Problem(name, f"no such stack file; stacks here: {stacks}")], source=name)
    try:
        data = yaml.load(path.read_text(), Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        raise ConfigError([_yaml_problem(name, err)], source=name) from None
    if data is None:
        raise ConfigError([Problem(name, "the file is empty; a stack file holds a `config:` block with the "
                                         "gpu-lab:<section> keys (see Pulumi.lab.yaml)")], source=name)
    if not isinstance(data, dict):
        raise ConfigError([Problem(name, f"{echo(data)}: the top level must be a mapping of "
                                         f"{', '.join(TOP_LEVEL_KEYS)}")], source=name)
    problems = [Problem(str(key), unknown_key_message(str(key), TOP_LEVEL_KEYS, "top-level key"))
                for key in data if key not in TOP_LEVEL_KEYS]
    config = data.get("config")
    if config is None:
        problems.append(Problem("config", "missing or empty: the stack's settings go in a `config:` block of "
                                          "gpu-lab:<section> keys (see Pulumi.lab.yaml)"))
    elif not isinstance(config, dict):
        problems.append(Problem("config", f"{echo(config)}: must be a mapping of namespace:key to value"))
    else:
        for key in config:
            namespace, colon, _ = str(key).partition(":")
            if not colon:
                problems.append(Problem(f"config.{key}", "a config key is namespace:key (e.g. gpu-lab:vsphere); "
                                                         f"allowed namespaces: {', '.join(NAMESPACES)}"))
            elif namespace not in NAMESPACES:
                problems.append(Problem(f"config.{key}", unknown_key_message(namespace, NAMESPACES, "namespace")))
    if problems or not isinstance(config, dict):
        raise ConfigError(problems, source=name)
    return dict(config)


def load_stack_config(stack: str, path: Path | None = None) -> dict[str, Any]:
    """A stack's config, checked: file, namespaces, plain-text credentials and every section.

    ``path`` reads another file than Pulumi.<stack>.yaml (a copy under review, a test's).
    """
    path = path or stack_path(stack)
    config = read_stack_file(path)
    problems = plaintext_secret_problems(config)
    notes: list[str] = []
    try:
        load_lab(gpu_lab_sections(config))
    except ConfigError as err:
        problems += err.problems
        notes = err.notes
    if problems:
        raise ConfigError(problems, source=path.name, notes=notes)
    return config


def _yaml_problem(name: str, err: yaml.YAMLError) -> Problem:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    what = " ".join(x for x in (getattr(err, "context", None), getattr(err, "problem", None)) if x) or str(err)
    if "'\\t'" in what:
        what += " (YAML indents with spaces, never tabs)"
    where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
    return Problem(where, f"not valid YAML: {what}")


def offline_secrets(config: dict[str, Any]) -> dict[str, Any]:
    """A placeholder for every secret, in the form the program parses, so any stack runs offline.

    The Bitfusion client token is a base64 tar archive of the files the program unpacks; its
    placeholder is such an archive (bitfusion_token_archive).
    """
    from components.addons.bitfusion import TOKEN_FILES
    from tools.mockrun import PLACEHOLDER, placeholder_secrets

    secrets = placeholder_secrets(config)
    secrets["gpu-lab:bitfusionClientToken"] = bitfusion_token_archive(dict.fromkeys(TOKEN_FILES, f"{PLACEHOLDER}\n"))
    return secrets


def bitfusion_token_archive(files: dict[str, str]) -> str:
    """`base64 -w0` of a tar archive of these files (fixed timestamps, so plans stay byte-identical)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, text in files.items():
            content = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(content), 0, 0o600
            tar.addfile(info, io.BytesIO(content))
    return base64.b64encode(buffer.getvalue()).decode()
