"""Release names as commits, in any clone: `v0.1.0` is the tag where the clone has it, else the commit
release/releases.txt lists for 0.1.0 (a clone made without tags, or from a fork, has none).

    python -m tools.releases resolve NAME   print the commit NAME names (exit 2 with the names that work)
    python -m tools.releases list           every release: version, commit, and where the name resolves from

A NAME is a release (`v0.1.0` or `0.1.0`) or any git revision (`HEAD`, `main`, a commit). make diff's
BASE, `python -m tools.upgrade record --at` and scripts/engine-upgrade.sh's PREVIOUS resolve through here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RELEASES = Path("release") / "releases.txt"
_LINE = re.compile(r"(?P<version>\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)\s+(?P<commit>[0-9a-f]{40})")


class UnknownRelease(ValueError):
    """A name that is neither a git revision of this clone nor a release of release/releases.txt."""


@dataclass(frozen=True)
class Release:
    version: str
    commit: str

    @property
    def tag(self) -> str:
        return f"v{self.version}"


def releases(repo: Path = REPO) -> list[Release]:
    """release/releases.txt, oldest first: one `<version> <commit>` per line, `#` comments."""
    found = []
    for number, line in enumerate((repo / RELEASES).read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        match = _LINE.fullmatch(text)
        if match is None:
            raise UnknownRelease(f"{RELEASES}:{number}: {line!r} is not '<version> <40-hex commit>'")
        found.append(Release(match["version"], match["commit"]))
    return found


def _git_commit(repo: Path, rev: str) -> str | None:
    if not rev or rev.startswith("-"):
        return None  # never an option to git
    done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _release_named(name: str, repo: Path) -> Release | None:
    version = name[1:] if name.startswith("v") else name
    return next((r for r in releases(repo) if r.version == version), None)


def working_names(repo: Path = REPO) -> list[str]:
    """Names that resolve in this clone, to suggest: HEAD, main where it exists, every release."""
    names = ["HEAD"] + [b for b in ("main", "origin/main") if _git_commit(repo, b)]
    return names + [r.tag for r in releases(repo) if _git_commit(repo, r.commit)]


def resolve_release(name: str, repo: Path = REPO) -> str:
    """The commit `name` names: a git revision of this clone (a release's tag among them), else a release
    of release/releases.txt by its version, with or without the `v`. UnknownRelease says which names work."""
    commit = _git_commit(repo, name)
    if commit:
        return commit
    release = _release_named(name, repo)
    if release is not None:
        commit = _git_commit(repo, release.commit)
        if commit:
            return commit
        raise UnknownRelease(
            f"{name!r} is release {release.version}, commit {release.commit} ({RELEASES}), which this clone "
            f"does not have (a shallow clone?): run `git fetch --unshallow` or `git fetch origin {release.commit}`")
    raise UnknownRelease(f"{name!r} is not a commit of this repository nor a release in {RELEASES}; names that "
                         f"work here: {', '.join(working_names(repo))} (or any branch, tag or commit)")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) == 2 and args[0] == "resolve":
            print(resolve_release(args[1]))
            return 0
        if args == ["list"]:
            for r in releases():
                where = "tag" if _git_commit(REPO, f"refs/tags/{r.tag}") else (
                    "release/releases.txt" if _git_commit(REPO, r.commit) else "missing from this clone")
                print(f"{r.tag}\t{r.commit}\t{where}")
            return 0
    except UnknownRelease as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(__doc__.strip().splitlines()[2].strip() + "\n" + __doc__.strip().splitlines()[3].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
