"""Release names resolve in any clone (tools/releases.py): the tag where it exists, else release/releases.txt.

The clones here are real git repositories in a temporary directory: one with the release tag, one
without (as `git clone` of a fork, or a CI checkout without tags, gives).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tools import releases
from tools.releases import UnknownRelease, resolve_release

REPO = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def clone(tmp_path) -> tuple[Path, str, str]:
    """A repository with two commits, the first listed as release 0.1.0; no tags."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    (repo / "a").write_text("1")
    git(repo, "add", "a")
    git(repo, "commit", "--quiet", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "release").mkdir()
    (repo / "release" / "releases.txt").write_text(f"# version commit\n0.1.0 {first}\n")
    git(repo, "add", "release")
    git(repo, "commit", "--quiet", "-m", "two")
    return repo, first, git(repo, "rev-parse", "HEAD")


def test_a_release_resolves_without_its_tag(clone):
    repo, first, _ = clone
    assert git(repo, "tag") == ""
    assert resolve_release("v0.1.0", repo) == first
    assert resolve_release("0.1.0", repo) == first


def test_the_tag_wins_where_the_clone_has_it(clone):
    repo, _, second = clone
    git(repo, "tag", "v0.1.0", second)  # a tag that moved: git's answer, as `git checkout v0.1.0` gives
    assert resolve_release("v0.1.0", repo) == second


def test_any_revision_still_resolves(clone):
    repo, first, second = clone
    assert resolve_release("HEAD", repo) == second
    assert resolve_release("main", repo) == second
    assert resolve_release(first[:12], repo) == first


def test_an_unknown_name_says_which_names_work(clone):
    repo, first, _ = clone
    with pytest.raises(UnknownRelease) as err:
        resolve_release("v9.9.9", repo)
    message = str(err.value)
    assert "'v9.9.9'" in message and "release/releases.txt" in message
    suggested = re.search(r"names that work here: ([^(]+) \(", message)
    assert suggested, message
    names = [n.strip() for n in suggested[1].split(",")]
    assert names == ["HEAD", "main", "v0.1.0"]
    for name in names:  # every name the message suggests works
        resolve_release(name, repo)


def test_a_release_whose_commit_the_clone_lacks_says_how_to_get_it(clone):
    repo, _, _ = clone
    (repo / "release" / "releases.txt").write_text("0.0.9 " + "1" * 40 + "\n")
    with pytest.raises(UnknownRelease, match="git fetch"):
        resolve_release("v0.0.9", repo)


def test_a_malformed_releases_line_is_named(clone):
    repo, _, _ = clone
    (repo / "release" / "releases.txt").write_text("0.1.0 HEAD\n")
    with pytest.raises(UnknownRelease, match=r"releases.txt:1"):
        releases.releases(repo)


def test_an_option_is_never_passed_to_git(clone):
    repo, _, _ = clone
    with pytest.raises(UnknownRelease):
        resolve_release("--output=/tmp/x", repo)


def test_this_repository_lists_its_releases_oldest_first():
    listed = releases.releases(REPO)
    assert listed and listed[0].version == "0.1.0"
    versions = [tuple(int(x) for x in r.version.split(".")) for r in listed]
    assert versions == sorted(versions)


def release_names_in_docs() -> set[str]:
    """Every concrete release name the docs use in a command (BASE=v0.1.0, --at v0.1.0, PREVIOUS=v0.1.0)."""
    names = set()
    for path in [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]:
        names |= set(re.findall(r"(?:BASE=|--at |PREVIOUS=)(v\d+\.\d+\.\d+)\b", path.read_text()))
    return names


def test_every_release_name_the_docs_use_resolves():
    names = release_names_in_docs()
    assert "v0.1.0" in names
    for name in sorted(names):
        commit = resolve_release(name, REPO)
        assert commit == next(r.commit for r in releases.releases(REPO) if r.tag == name)


def test_make_diff_refuses_an_unknown_base_with_the_names_that_work():
    from tools.diff import BadInput, resolve_base

    with pytest.raises(BadInput, match=r"BASE: 'v9\.9\.9' .* names that work here: HEAD.*v0\.1\.0"):
        resolve_base("v9.9.9")
    assert resolve_base("v0.1.0") == releases.releases(REPO)[0].commit


def test_the_command_line(capsys):
    assert releases.main(["resolve", "v0.1.0"]) == 0
    assert capsys.readouterr().out.strip() == releases.releases(REPO)[0].commit
    assert releases.main(["resolve", "v9.9.9"]) == 2
    assert "names that work here" in capsys.readouterr().err
