"""`make test-user`: the suite without root, and the README's list of the tests it leaves out.

Which tests skip is decided in the tests themselves: each asks `required_tools.require_tool` (or a
helper that does) for a tool by name. The Debian tools are the ones the installers' `PACKAGES`
tables install with apt-get, which `make test-user` does not run. Both are read here from the code
and compared with the README's table.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from required_tools import require_tool

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
INSTALLERS = ("install-test-tools.sh", "install-openshift-test-tools.sh", "install-switch-test-tools.sh")
# the functions that ask for a tool by name: required_tools.require_tool and the area helpers over it
ASKERS = {"require_tool", "tool"}
TABLE_HEADER = "| tests | Debian tools |"


def debian_tools() -> dict[str, str]:
    """tool -> Debian package, from the installers' PACKAGES tables."""
    tools: dict[str, str] = {}
    for script in INSTALLERS:
        text = (REPO / "scripts" / script).read_text()
        table = re.search(r"declare -A PACKAGES=\((.*?)\)\n", text, re.S)
        assert table, f"scripts/{script}: no PACKAGES table"
        tools.update(re.findall(r"\[([\w-]+)\]=([\w.+-]+)", table.group(1)))
    return tools


def _asker(call: ast.AST) -> ast.expr | None:
    """The first argument of a call to an asker, else None."""
    if not isinstance(call, ast.Call) or not call.args:
        return None
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return call.args[0] if name in ASKERS else None


def tools_asked(tree: ast.AST) -> set[str]:
    """Tool names a module asks for: literal arguments, and the literal names a loop passes to an asker."""
    asked = {arg.value for node in ast.walk(tree)
             if isinstance(arg := _asker(node), ast.Constant) and isinstance(arg.value, str)}
    variables = {arg.id for node in ast.walk(tree) if isinstance(arg := _asker(node), ast.Name)}
    for node in ast.walk(tree):
        if (isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name)
                and node.target.id in variables and isinstance(node.iter, (ast.Tuple, ast.List))):
            asked |= {e.value for e in node.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return asked


def imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def skipped_without_debian_tools() -> dict[str, set[str]]:
    """Test file -> the Debian tools its tests ask for, itself or through a helper module of tests/."""
    trees = {path: ast.parse(path.read_text()) for path in TESTS.rglob("*.py") if "upstream" not in path.parts}
    helpers = {path.stem: tools_asked(tree) for path, tree in trees.items() if not path.name.startswith("test_")}
    debian = set(debian_tools())
    found: dict[str, set[str]] = {}
    for path, tree in trees.items():
        if not path.name.startswith("test_"):
            continue
        tools = tools_asked(tree).union(*(helpers[name] for name in imported(tree) if name in helpers)) & debian
        if tools:
            found[str(path.relative_to(REPO))] = tools
    return found


RUNNERS = {"run", "Popen", "check_call", "check_output", "call"}


def tools_run(tree: ast.AST) -> set[str]:
    """Tool names a module runs without asking: subprocess.run(["tool", ...]) and the like."""
    run = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            first = node.args[0].elts[0] if node.args[0].elts else None
            if name in RUNNERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                run.add(first.value)
    return run


def run_without_asking() -> set[str]:
    """Debian tools a test file runs, itself or through a helper of tests/, without asking for them first:
    without the tool such a test fails instead of skipping."""
    trees = {path: ast.parse(path.read_text()) for path in TESTS.rglob("*.py") if "upstream" not in path.parts}
    helpers = {path.stem: tree for path, tree in trees.items() if not path.name.startswith("test_")}
    debian = set(debian_tools())
    found: set[str] = set()
    for path, tree in trees.items():
        if not path.name.startswith("test_"):
            continue
        used = [tree, *(helpers[name] for name in imported(tree) if name in helpers)]
        asked = set().union(*(tools_asked(t) for t in used))
        found |= set().union(*(tools_run(t) for t in used)) & debian - asked
    return found


def readme_must_have() -> set[str]:
    text = " ".join((REPO / "README.md").read_text().split())
    sentence = re.search(r"These must be there all the same: (.*?)\.", text)
    assert sentence, "the README names the tools make test-user needs all the same"
    return set(re.findall(r"`([\w-]+)`", sentence.group(1)))


def readme_table() -> dict[str, set[str]]:
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index(TABLE_HEADER) + 2
    table: dict[str, set[str]] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        tests, tools = line.strip("|").split("|")
        table[tests.strip().strip("`")] = set(re.findall(r"`([\w-]+)`", tools))
    return table


def markdown_rows(found: dict[str, set[str]]) -> str:
    return "\n".join(f"| `{path}` | {', '.join(f'`{t}`' for t in sorted(tools))} |" for path, tools in sorted(found.items()))


def test_the_readme_lists_the_tests_make_test_user_leaves_out():
    found = skipped_without_debian_tools()
    assert {"tests/test_shellcheck.py", "tests/openshift/test_openshift_tools.py"} <= found.keys()
    assert readme_table() == found, "the README's table should read:\n" + markdown_rows(found)


def test_the_readme_names_the_tools_tests_run_without_asking():
    found = run_without_asking()
    assert "openssl" in found  # tests/kube_cluster.py
    assert readme_must_have() == found, f"the README should name: {', '.join(f'`{t}`' for t in sorted(found))}"


def test_the_derivation_sees_helpers_and_loops():
    tree = ast.parse("import sshd_server\nfor name in ('dnsmasq', 'haproxy'):\n    tool(name)\nrequire_tool('apache2', HINT)\n")
    assert tools_asked(tree) == {"dnsmasq", "haproxy", "apache2"} and "sshd_server" in imported(tree)
    sshd_server = ast.parse((TESTS / "sshd_server.py").read_text())
    assert tools_asked(sshd_server) >= {"sshd", "ssh", "ssh-keygen", "ssh-keyscan"}


def test_make_test_user_runs_the_suite_without_apt_and_without_ci():
    recipe = subprocess.run(["make", "-n", "-C", str(REPO), "test-user"], capture_output=True, text=True,
                            check=True).stdout.splitlines()
    assert "bash scripts/install-test-tools.sh --no-apt" in recipe
    assert any(line.endswith("-m pytest -q") for line in recipe)
    assert not any("CI=" in line for line in recipe)


def test_no_apt_never_calls_apt_get(tmp_path):
    # a PATH with apt-get and sudo that only record being called, no Debian test tool and no Go:
    # --no-apt goes straight to the Go builds, which stop on the missing `go`
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "id"):
        (bin_dir / tool).symlink_to(require_tool(tool))
    called = tmp_path / "called"
    for fake in ("apt-get", "sudo"):
        (bin_dir / fake).write_text(f"#!{require_tool('bash')}\necho {fake} >> {called}\n")
        (bin_dir / fake).chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    script = str(REPO / "scripts" / "install-test-tools.sh")
    proc = subprocess.run(["bash", script, "--no-apt"], cwd=REPO, capture_output=True, text=True, timeout=60, env=env)
    assert not called.exists(), called.read_text()
    assert "--no-apt: no Debian package is installed" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == 1 and "'go' is not on PATH" in proc.stderr, proc.stdout + proc.stderr
    wrong = subprocess.run(["bash", script, "--apt"], cwd=REPO, capture_output=True, text=True, timeout=60, env=env)
    assert wrong.returncode == 2 and "usage" in wrong.stderr and not called.exists()
