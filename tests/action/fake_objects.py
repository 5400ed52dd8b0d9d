"""What the fake GitHub API keeps (pulls, comments, check runs) and the JSON GitHub shows of it.

Each builder returns an object with every field the response schema of GitHub's OpenAPI
description requires (tests/action/test_fake_github.py holds them to it), with URLs on the
fake server, so a client that follows `url`, `issue_url` or a Link header stays on the fake.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

BOT_LOGIN = "github-actions[bot]"
BOT_ID = 41898282  # the id GitHub shows for github-actions[bot]
APP_ID = 15368  # the GitHub Actions app
ACTIONS_SLUG = "github-actions"
REPOSITORY_ID = 1296269


def now() -> str:
    """The time as GitHub writes it: RFC 3339, seconds, UTC."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True, kw_only=True)
class Site:
    """Where the fake serves: the API root (with its GHES-style prefix) and the web root."""

    api: str  # http://127.0.0.1:PORT/api/v3
    html: str  # http://127.0.0.1:PORT


@dataclass(slots=True, kw_only=True)
class Pull:
    number: int
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    head_repo: str  # "owner/name": the fork, or the repository itself
    state: str = "open"
    files: list[str] = field(default_factory=list)  # what it changes, base...head
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


@dataclass(slots=True, kw_only=True)
class Comment:
    id: int
    number: int
    body: str
    login: str
    type: str  # "User" or "Bot"
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


@dataclass(slots=True, kw_only=True)
class CheckRun:
    id: int
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    started_at: str | None
    completed_at: str | None
    details_url: str | None
    external_id: str | None
    title: str | None = None
    summary: str | None = None
    text: str | None = None
    annotations: list[dict[str, Any]] = field(default_factory=list)
    updates: int = 0  # PATCHes received
    app_slug: str = ACTIONS_SLUG  # the app whose token made it (GitHub sets it, not the body)


def node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"{kind}{number}".encode()).decode()


def user_id(login: str) -> int:
    """A stable id per login (GitHub's own for the Actions bot)."""
    return BOT_ID if login == BOT_LOGIN else zlib.crc32(login.encode()) % 10**8 + 1


def user(site: Site, login: str, *, type: str = "User") -> dict[str, Any]:
    """A simple-user; a bot's (``<app slug>[bot]``) page is its app's."""
    api = f"{site.api}/users/{login}"
    number = user_id(login)
    return {
        "login": login,
        "id": number,
        "node_id": node_id("U_", number),
        "avatar_url": f"{site.html}/avatars/{number}",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{site.html}/{login}"
        if type != "Bot"
        else f"{site.html}/apps/{login.removesuffix('[bot]')}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": type,
        "site_admin": False,
        "user_view_type": "public",
    }


def private_user(site: Site, login: str) -> dict[str, Any]:
    """GET /user for a personal access token: the private-user view of its owner."""
    created = "2020-01-01T00:00:00Z"
    counts = ("public_repos", "public_gists", "followers", "following", "private_gists")
    more = ("total_private_repos", "owned_private_repos", "disk_usage", "collaborators")
    return {
        **user(site, login),
        "user_view_type": "private",
        **dict.fromkeys(("name", "company", "blog", "location", "email", "hireable", "bio")),
        **dict.fromkeys(counts + more, 0),
        "created_at": created,
        "updated_at": created,
        "two_factor_authentication": True,
    }


# (field, path after the repository's API URL): the URL fields every repository shows.
_REPOSITORY_URLS = (
    ("archive_url", "/{archive_format}{/ref}"),
    ("assignees_url", "/assignees{/user}"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("branches_url", "/branches{/branch}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("comments_url", "/comments{/number}"),
    ("commits_url", "/commits{/sha}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("contents_url", "/contents/{+path}"),
    ("contributors_url", "/contributors"),
    ("deployments_url", "/deployments"),
    ("downloads_url", "/downloads"),
    ("events_url", "/events"),
    ("forks_url", "/forks"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("hooks_url", "/hooks"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("issue_events_url", "/issues/events{/number}"),
    ("issues_url", "/issues{/number}"),
    ("keys_url", "/keys{/key_id}"),
    ("labels_url", "/labels{/name}"),
    ("languages_url", "/languages"),
    ("merges_url", "/merges"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("pulls_url", "/pulls{/number}"),
    ("releases_url", "/releases{/id}"),
    ("stargazers_url", "/stargazers"),
    ("statuses_url", "/statuses/{sha}"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("tags_url", "/tags"),
    ("teams_url", "/teams"),
    ("trees_url", "/git/trees{/sha}"),
)


def repository(site: Site, full_name: str, *, fork: bool = False) -> dict[str, Any]:
    """A repository, with the fields both `repository` and `full-repository` require."""
    owner, name = full_name.split("/")
    number = (
        REPOSITORY_ID + zlib.crc32(full_name.lower().encode()) % 1000 if fork else REPOSITORY_ID
    )
    api = f"{site.api}/repos/{full_name}"
    html = f"{site.html}/{full_name}"
    created = "2020-01-01T00:00:00Z"
    return {
        "id": number,
        "node_id": node_id("R_", number),
        "name": name,
        "full_name": full_name,
        "owner": user(site, owner, type="Organization"),
        "private": False,
        "html_url": html,
        "description": None,
        "fork": fork,
        "url": api,
        **{key: api + path for key, path in _REPOSITORY_URLS},
        "git_url": f"{html}.git".replace("http://", "git://", 1),
        "ssh_url": f"git@127.0.0.1:{full_name}.git",
        "clone_url": f"{html}.git",
        "svn_url": html,
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        **dict.fromkeys(("forks", "forks_count", "stargazers_count", "watchers"), 0),
        **dict.fromkeys(("watchers_count", "size", "open_issues", "open_issues_count"), 0),
        **dict.fromkeys(("subscribers_count", "network_count"), 0),
        "default_branch": "main",
        **dict.fromkeys(("has_issues", "has_projects", "has_wiki", "has_downloads"), True),
        **dict.fromkeys(("has_pages", "has_discussions", "archived", "disabled"), False),
        "license": None,
        "visibility": "public",
        "pushed_at": created,
        "created_at": created,
        "updated_at": created,
    }


def pull_request(site: Site, repository_name: str, pull: Pull) -> dict[str, Any]:
    """A pull-request: the PR's refs and shas, on this repository (head maybe on a fork)."""
    base = repository(site, repository_name)
    head = repository(site, pull.head_repo, fork=pull.head_repo != repository_name)
    api = f"{site.api}/repos/{repository_name}"
    html = f"{site.html}/{repository_name}/pull/{pull.number}"
    links = {
        "self": f"{api}/pulls/{pull.number}",
        "html": html,
        "issue": f"{api}/issues/{pull.number}",
        "comments": f"{api}/issues/{pull.number}/comments",
        "review_comments": f"{api}/pulls/{pull.number}/comments",
        "review_comment": f"{api}/pulls/comments{{/number}}",
        "commits": f"{api}/pulls/{pull.number}/commits",
        "statuses": f"{api}/statuses/{pull.head_sha}",
    }
    return {
        "url": links["self"],
        "id": 1_000_000 + pull.number,
        "node_id": node_id("PR_", pull.number),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": links["issue"],
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "number": pull.number,
        "state": pull.state,
        "locked": False,
        "title": f"Pull request {pull.number}",
        "user": user(site, head["owner"]["login"]),
        "body": None,
        "labels": [],
        "milestone": None,
        "created_at": pull.created_at,
        "updated_at": pull.updated_at,
        "closed_at": None if pull.state == "open" else pull.updated_at,
        "merged_at": None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "head": _side(head, pull.head_ref, pull.head_sha),
        "base": _side(base, pull.base_ref, pull.base_sha),
        "_links": {key: {"href": href} for key, href in links.items()},
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": False,
        "merged": False,
        "mergeable": None,
        "mergeable_state": "unknown",
        "merged_by": None,
        **dict.fromkeys(("comments", "review_comments", "commits", "additions"), 0),
        "deletions": 0,
        "changed_files": len(pull.files),
        "maintainer_can_modify": False,
    }


def diff_entry(site: Site, repository_name: str, pull: Pull, path: str) -> dict[str, Any]:
    """A file of the pull request, as its list of files gives it (line counts left at 0)."""
    quoted = quote(path)
    return {
        "sha": None,
        "filename": path,
        "status": "modified",
        "additions": 0,
        "deletions": 0,
        "changes": 0,
        "blob_url": f"{site.html}/{repository_name}/blob/{pull.head_sha}/{quoted}",
        "raw_url": f"{site.html}/{repository_name}/raw/{pull.head_sha}/{quoted}",
        "contents_url": f"{site.api}/repos/{repository_name}/contents/{quoted}?ref={pull.head_sha}",
    }


def _side(repo: dict[str, Any], ref: str, sha: str) -> dict[str, Any]:
    owner = repo["owner"]
    return {"label": f"{owner['login']}:{ref}", "ref": ref, "sha": sha, "repo": repo, "user": owner}


def issue_comment(site: Site, repository_name: str, comment: Comment) -> dict[str, Any]:
    """An issue-comment on the PR's conversation."""
    api = f"{site.api}/repos/{repository_name}"
    return {
        "id": comment.id,
        "node_id": node_id("IC_", comment.id),
        "url": f"{api}/issues/comments/{comment.id}",
        "html_url": f"{site.html}/{repository_name}/pull/{comment.number}"
        f"#issuecomment-{comment.id}",
        "body": comment.body,
        "user": user(site, comment.login, type=comment.type),
        "created_at": comment.created_at,
        "updated_at": comment.updated_at,
        "issue_url": f"{api}/issues/{comment.number}",
        "author_association": "NONE" if comment.type == "Bot" else "CONTRIBUTOR",
        # The app whose installation token wrote it: its bot account is `<slug>[bot]`.
        "performed_via_github_app": (
            app(site, comment.login.removesuffix("[bot]")) if comment.type == "Bot" else None
        ),
    }


def check_run(site: Site, repository_name: str, run: CheckRun, pulls: list[Pull]) -> dict[str, Any]:
    """A check-run, with the PRs whose head it is on."""
    api = f"{site.api}/repos/{repository_name}"
    minimal = {"id": REPOSITORY_ID, "url": api, "name": repository_name.split("/")[1]}
    return {
        "id": run.id,
        "node_id": node_id("CR_", run.id),
        "head_sha": run.head_sha,
        "external_id": run.external_id or "",
        "url": f"{api}/check-runs/{run.id}",
        "html_url": f"{site.html}/{repository_name}/runs/{run.id}",
        "details_url": run.details_url or f"{site.html}/{repository_name}/runs/{run.id}",
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": run.text,
            "annotations_count": len(run.annotations),
            "annotations_url": f"{api}/check-runs/{run.id}/annotations",
        },
        "name": run.name,
        "check_suite": {"id": 5_000_000 + run.id},
        "app": app(site, run.app_slug),
        "pull_requests": [
            {
                "id": 1_000_000 + pull.number,
                "number": pull.number,
                "url": f"{api}/pulls/{pull.number}",
                "head": {"ref": pull.head_ref, "sha": pull.head_sha, "repo": minimal},
                "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": minimal},
            }
            for pull in pulls
            if pull.head_sha == run.head_sha and pull.head_repo == repository_name
        ],
    }


def commit(site: Site, repository_name: str, sha: str) -> dict[str, Any]:
    """A commit the fake knows only by its sha (no author, message or parents of its own)."""
    api = f"{site.api}/repos/{repository_name}"
    return {
        "url": f"{api}/commits/{sha}",
        "sha": sha,
        "node_id": node_id("C_", int(sha[:8], 16)),
        "html_url": f"{site.html}/{repository_name}/commit/{sha}",
        "comments_url": f"{api}/commits/{sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{sha}",
            "author": None,
            "committer": None,
            "message": f"commit {sha[:7]}",
            "comment_count": 0,
            "tree": {"sha": sha, "url": f"{api}/git/trees/{sha}"},
        },
        "author": None,
        "committer": None,
        "parents": [],
        "files": [],
    }


def actions_app(site: Site) -> dict[str, Any]:
    """The GitHub Actions app: what writes with a workflow's GITHUB_TOKEN."""
    return app(site, ACTIONS_SLUG)


def app(site: Site, slug: str) -> dict[str, Any]:
    """The GitHub App ``slug`` (GitHub Actions for ``github-actions``): whose installation
    token made a check run, or wrote a comment as its bot account ``<slug>[bot]``."""
    created = "2018-07-30T09:30:17Z"
    number = APP_ID if slug == ACTIONS_SLUG else zlib.crc32(slug.encode()) % 10**6 + 1
    actions = slug == ACTIONS_SLUG
    return {
        "id": number,
        "slug": slug,
        "node_id": node_id("A_", number),
        "owner": user(site, "github" if actions else "octo-org", type="Organization"),
        "name": "GitHub Actions" if actions else slug,
        "description": "Automate your workflow from idea to production" if actions else None,
        "external_url": "https://help.github.com/en/actions" if actions else site.html,
        "html_url": f"{site.html}/apps/{slug}",
        "created_at": created,
        "updated_at": created,
        "permissions": {"checks": "write", "issues": "write", "metadata": "read"},
        "events": ["check_run", "issue_comment", "pull_request"],
    }
