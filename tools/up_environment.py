"""The up workflow's first check: the `lab` environment holds the lab's secrets back until a reviewer
who did not start the run approves it, and only for main. Asked of the GitHub REST API with the job's
token (scripts/up-steps.sh environment); stdlib only, it runs before the virtualenv exists.

    python -m tools.up_environment --api URL --repository OWNER/REPO [--environment lab]

Exit 0 when the environment is protected, 1 naming every setting that is not, 2 when the API does
not answer as documented. The fields read (GitHub REST API, version 2022-11-28):
  GET /repos/{owner}/{repo}/environments/{name}
      https://docs.github.com/en/rest/deployments/environments#get-an-environment
      protection_rules[]: {type: "required_reviewers", prevent_self_review, reviewers[]}
      deployment_branch_policy: null (any branch) or {protected_branches, custom_branch_policies}
  GET /repos/{owner}/{repo}/environments/{name}/deployment-branch-policies
      https://docs.github.com/en/rest/deployments/branch-policies#list-deployment-branch-policies
      {total_count, branch_policies[]: {name, type: "branch" | "tag"}}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

SETTINGS = "Settings > Environments > {env}"
BRANCH = "main"


class ApiError(Exception):
    """The API did not answer with the documented JSON."""


def problems(environment: dict[str, Any], branch_policies: dict[str, Any] | None) -> list[str]:
    """What is wrong with the environment; empty when it deploys main only and needs another's review.
    `branch_policies` is the list endpoint's answer, read only with custom branch policies."""
    name = environment.get("name") or "lab"
    where = SETTINGS.format(env=name)
    found = []
    rules = [r for r in environment.get("protection_rules") or [] if r.get("type") == "required_reviewers"]
    if not any(r.get("reviewers") for r in rules):
        found.append(f"it requires no reviewer ({where} > Required reviewers)")
    elif not all(r.get("prevent_self_review") is True for r in rules):
        found.append(f"whoever starts the run may approve it ({where} > Required reviewers > Prevent self-review)")
    policy = environment.get("deployment_branch_policy")
    fix = f"{where} > Deployment branches and tags > Selected branches and tags, the one rule `{BRANCH}`"
    if not policy:
        found.append(f"it deploys any branch ({fix})")
    elif policy.get("protected_branches") or not policy.get("custom_branch_policies"):
        found.append(f"it deploys every protected branch, not {BRANCH} alone ({fix})")
    else:
        listed = (branch_policies or {}).get("branch_policies") or []
        rules_text = ", ".join(f"{p.get('type', '?')} {p.get('name')!r}" for p in listed) or "none"
        if (branch_policies or {}).get("total_count") != 1 or len(listed) != 1 \
                or listed[0].get("name") != BRANCH or listed[0].get("type") != "branch":
            found.append(f"its deployment branch rules are {rules_text}, not the branch {BRANCH!r} alone ({fix})")
    return found


def _get(url: str, token: str) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the job's own API URL
            data = json.load(response)
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as err:
        raise ApiError(f"GET {url}: {err}") from None
    if not isinstance(data, dict):
        raise ApiError(f"GET {url}: not a JSON object")
    return data


def fetch(api: str, repository: str, environment: str, token: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    base = f"{api.rstrip('/')}/repos/{repository}/environments/{urllib.parse.quote(environment, safe='')}"
    env = _get(base, token)
    policy = env.get("deployment_branch_policy") or {}
    policies = _get(f"{base}/deployment-branch-policies?per_page=100", token) \
        if policy.get("custom_branch_policies") else None
    return env, policies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.up_environment", description=__doc__.splitlines()[0])
    parser.add_argument("--api", required=True, help="the job's github.api_url")
    parser.add_argument("--repository", required=True, help="owner/repo")
    parser.add_argument("--environment", default="lab")
    args = parser.parse_args(argv)
    token = os.environ.get("GH_TOKEN", "")
    if not token:
        print("error: GH_TOKEN is not set (the job's github.token)", file=sys.stderr)
        return 2
    try:
        env, policies = fetch(args.api, args.repository, args.environment, token)
    except ApiError as err:
        print(f"error: the {args.environment} environment could not be read: {err}", file=sys.stderr)
        return 2
    found = problems(env, policies)
    if found:
        print(f"the {args.environment} environment does not protect the lab: " + "; ".join(found), file=sys.stderr)
        return 1
    reviewers = sum(len(r.get("reviewers") or []) for r in env.get("protection_rules") or []
                    if r.get("type") == "required_reviewers")
    print(f"{args.environment} environment: {reviewers} required reviewer(s), no self-review, deploys {BRANCH} only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
