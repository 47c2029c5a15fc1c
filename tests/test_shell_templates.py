"""Script templates: the values block sh reads back exactly, the declared parameters are the
contract, and a template runs as is with its values in the environment."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from shell_plans import rendered_scripts

from components import shell_templates
from components.shell_templates import VALUES_BEGIN, VALUES_END, parameters, render, template_text

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = [(f"components.{path.parent.parent.name}", path.name)
             for path in sorted(ROOT.glob("components/*/scripts/*.sh"))]
AWKWARD = "it's a \"$HOME\" `id` \\ & * ; value"


def values_as_sh_reads_them(script: str, names: list[str]) -> list[str]:
    """Run the script's values block under sh and print each variable, NUL-terminated."""
    block = script[:script.index(VALUES_END)]
    printer = "printf '%s\\0' " + " ".join(f'"${name}"' for name in names)
    done = subprocess.run(["sh", "-c", block + "\n" + printer], capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\0")[:-1]


@pytest.mark.parametrize("package,name", TEMPLATES, ids=[n for _, n in TEMPLATES])
def test_every_value_reaches_the_script_byte_for_byte(package, name):
    names = parameters(template_text(package, name))
    assert names, f"{name} declares no parameter"
    values: dict[str, shell_templates.Value] = {}
    for i, key in enumerate(names):
        values[key] = [f"first {AWKWARD}", f"second {AWKWARD}"] if i % 2 else f"{key} {AWKWARD}"
    got = values_as_sh_reads_them(render(package, name, values), names)
    expected = [v if isinstance(v, str) else "\n".join(v) for v in values.values()]
    assert got == expected


def test_values_sit_between_the_header_and_the_body():
    script = render("components.openshift", "wait-for.sh",
                    {"INSTALL_DIR": "/d", "INSTALLER": "oi", "WAIT_STAGE": "install-complete"})
    lines = script.splitlines()
    begin, end = lines.index(VALUES_BEGIN), lines.index(VALUES_END)
    assert lines[0] == "#!/bin/sh" and all(line.startswith("#") for line in lines[:begin])
    assert lines[begin + 1:end] == ["INSTALL_DIR=/d", "INSTALLER=oi", "WAIT_STAGE=install-complete"]
    assert "set -eu" in lines[end + 1:]
    # the same values in another order render the same bytes
    assert script == render("components.openshift", "wait-for.sh",
                            {"WAIT_STAGE": "install-complete", "INSTALLER": "oi", "INSTALL_DIR": "/d"})


def test_the_declared_parameters_are_the_contract():
    given = {"INSTALL_DIR": "/d", "INSTALLER": "oi"}
    with pytest.raises(ValueError, match=r"takes \['INSTALL_DIR', 'INSTALLER', 'WAIT_STAGE'\]"):
        render("components.openshift", "wait-for.sh", given)
    with pytest.raises(ValueError, match="was given"):
        render("components.openshift", "wait-for.sh", {**given, "WAIT_STAGE": "x", "EXTRA": "y"})
    with pytest.raises(ValueError, match="newline"):
        render("components.openshift", "helper-pxe.sh", {
            "ACTION": "install", "USE_SUDO": "no", "STAGING_DIR": "/s", "TFTP_ROOT": "/t",
            "REQUIRED_FILES": [], "MENU_FILES": ["a\nb"]})
    with pytest.raises(TypeError, match="yes/no"):
        render("components.openshift", "helper-ignition.sh", {
            "ACTION": "install", "USE_SUDO": False, "STAGING_DIR": "/s", "HTTP_ROOT": "/h", "FILE_NAME": "a.ign",
            "WEB_GROUP": "apache"})


def test_a_template_runs_as_is_with_its_values_in_the_environment(tmp_path):
    path = ROOT / "components/openshift/scripts/wait-for.sh"
    installer = tmp_path / "openshift-install"
    installer.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    installer.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "INSTALLER": str(installer), "INSTALL_DIR": "/d", "WAIT_STAGE": "bootstrap-complete"}
    done = subprocess.run(["sh", str(path)], capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["--dir", "/d", "wait-for", "bootstrap-complete"]
    # a missing parameter is named before anything runs
    del env["WAIT_STAGE"]
    done = subprocess.run(["sh", str(path)], capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode != 0 and "WAIT_STAGE" in done.stderr and done.stdout == ""


def test_awkward_values_render_into_scripts_sh_can_parse():
    for name, script in rendered_scripts(awkward=True).items():
        shell = "bash" if name.endswith(".bash") else "sh"
        done = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, f"{name}: {done.stderr}"


HELPER_VALUES = {"ACTION": "remove", "USE_SUDO": "no", "STAGING_DIR": "/s", "HTTP_ROOT": "/h",
                 "FILE_NAME": "worker.ign", "WEB_GROUP": "apache"}


def test_a_sourced_include_is_written_into_the_rendered_script():
    # A rendered script runs from stdin on the helper, where no include file is.
    script = render("components.openshift", "helper-ignition.sh", HELPER_VALUES)
    assert ". ./include/" not in script and "source-path" not in script
    assert script.count("as_root() {") == 1
    body = template_text("components.openshift", "include/as-root.sh").split("\n\n", 1)[1]
    assert body in script


def test_a_template_with_its_include_runs_as_is_from_its_directory(tmp_path):
    published = tmp_path / "worker.ign"
    published.write_text("{}")
    env = {"PATH": os.environ["PATH"], **HELPER_VALUES, "STAGING_DIR": str(tmp_path / "s"),
           "HTTP_ROOT": str(tmp_path)}
    done = subprocess.run(["sh", "helper-ignition.sh"], cwd=ROOT / "components/openshift/scripts",
                          capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    assert not published.exists()


def test_a_source_line_rendering_cannot_inline_is_refused(monkeypatch):
    text = template_text("components.openshift", "helper-ignition.sh")
    bare = text.replace("# shellcheck source-path=SCRIPTDIR\n. ./include/as-root.sh", ". ./include/as-root.sh")
    assert bare != text
    monkeypatch.setattr(shell_templates, "template_text", lambda package, name: bare)
    with pytest.raises(ValueError, match="sources a file"):
        render("components.openshift", "helper-ignition.sh", HELPER_VALUES)
