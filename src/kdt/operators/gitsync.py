"""git-sync (kubernetes/git-sync) as a pod's init container: its image, its flags and env names, and
what a container's settings resolve to.

Two releases, two sets of names. v4 (read at tag v4.3.0, main.go, the pflag definitions and the
back-compat switch after them; v3-to-v4.md "Converting from git-sync v3.x to v4.x"): flags `--repo`,
`--ref`, `--root`, `--link`, `--depth`, `--one-time`, ..., env `GITSYNC_<FLAG>`; most v3 names are still
read, as fallbacks after the v4 ones, and the deprecated `--branch`/`--rev` (`GIT_SYNC_BRANCH`,
`GIT_SYNC_REV`) and `--dest` (`GIT_SYNC_DEST`) *override* `--ref` and `--link` when set. v3 (tag
v3.6.9, cmd/git-sync/main.go): flags `--repo`, `--branch` (default master), `--rev` (default HEAD),
`--root`, `--dest`, `--wait`, ..., env `GIT_SYNC_<FLAG>` only; it knows no `GITSYNC_*` name and no
`--ref`/`--link` flag (Go's flag package exits on an unknown flag).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# registry.k8s.io/git-sync/git-sync is the release image (README.md, "Releases"); k8s.gcr.io is the
# registry it was served from before registry.k8s.io.
IMAGES = ("registry.k8s.io/git-sync/git-sync", "k8s.gcr.io/git-sync/git-sync", "gcr.io/k8s-staging-git-sync/git-sync")
# The image this project's components and chart pin: v4.3.0 by digest. The digest is the one a kubelet
# reported as the Image ID of registry.k8s.io/git-sync/git-sync:v4.3.0 in a public pod description (not
# compared with the registry here: no network).
PINNED_IMAGE = ("registry.k8s.io/git-sync/git-sync:v4.3.0"
                "@sha256:5813a7da0ccd58f6dfb9d5e48480e2877355e6bb3d7d81c8908eb1adc3a23b6e")
# v4's image: USER 65533:65533, ENV HOME=/tmp, ENV GITSYNC_ROOT=/git (Dockerfile.in at v4.3.0).
V4_UID = 65533
V4_DEFAULT_ROOT = "/git"
# v4 main.go: --ref defaults to HEAD (the remote's default branch), --depth to 1.
V4_DEFAULT_REF = "HEAD"
V4_DEFAULT_DEPTH = 1
# v4 --ssh-key-file / --ssh-known-hosts-file defaults (v3 has the same).
SSH_KEY_FILE = "/etc/git-secret/ssh"
SSH_KNOWN_HOSTS_FILE = "/etc/git-secret/known_hosts"
# v3-to-v4.md "Abbreviated hashes": a hash given as --ref must be the full hash.
FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
HEXISH = re.compile(r"^[0-9a-f]{4,63}$")

# v4 settings: flag -> env names in the order v4 reads them (the first set wins; a flag beats them all).
V4_SETTINGS = {
    "repo": ("GITSYNC_REPO", "GIT_SYNC_REPO"),
    "ref": ("GITSYNC_REF",),
    "depth": ("GITSYNC_DEPTH", "GIT_SYNC_DEPTH"),
    "root": ("GITSYNC_ROOT", "GIT_SYNC_ROOT"),
    "link": ("GITSYNC_LINK", "GIT_SYNC_LINK"),
    "one-time": ("GITSYNC_ONE_TIME", "GIT_SYNC_ONE_TIME"),
    "username": ("GITSYNC_USERNAME", "GIT_SYNC_USERNAME"),
    "password-file": ("GITSYNC_PASSWORD_FILE", "GIT_SYNC_PASSWORD_FILE"),
    "credential": ("GITSYNC_CREDENTIAL",),
    "ssh-key-file": ("GITSYNC_SSH_KEY_FILE", "GIT_SYNC_SSH_KEY_FILE", "GIT_SSH_KEY_FILE"),
    "ssh-known-hosts": ("GITSYNC_SSH_KNOWN_HOSTS", "GIT_SYNC_KNOWN_HOSTS", "GIT_KNOWN_HOSTS"),
    "ssh-known-hosts-file": ("GITSYNC_SSH_KNOWN_HOSTS_FILE", "GIT_SYNC_SSH_KNOWN_HOSTS_FILE", "GIT_SSH_KNOWN_HOSTS_FILE"),
    "askpass-url": ("GITSYNC_ASKPASS_URL", "GIT_SYNC_ASKPASS_URL", "GIT_ASKPASS_URL"),
    "github-app-private-key-file": ("GITSYNC_GITHUB_APP_PRIVATE_KEY_FILE",),
    "cookie-file": ("GITSYNC_COOKIE_FILE", "GIT_SYNC_COOKIE_FILE", "GIT_COOKIE_FILE"),
}
V4_PASSWORD_ENV = "GITSYNC_PASSWORD"        # env only (the --password flag is deprecated)
V4_PASSWORD_ENV_V3 = "GIT_SYNC_PASSWORD"
# v4's deprecated v3 names that change what v4 does (main.go after flag parsing): flag -> (env, what).
V4_OVERRIDING = {
    "branch": ("GIT_SYNC_BRANCH", "ref"),   # "setting --ref from deprecated --branch"
    "rev": ("GIT_SYNC_REV", "ref"),         # "setting --ref from deprecated --rev"
    "dest": ("GIT_SYNC_DEST", "link"),      # "setting --link from deprecated --dest"
}
# v4 flags that v3 does not define (v3's flag package: "flag provided but not defined", exit 2).
V4_ONLY_FLAGS = ("ref", "link", "period", "sync-timeout", "max-failures", "verbose", "credential",
                 "stale-worktree-timeout", "sync-on-signal", "github-app-private-key-file", "man")
# v3 flags v4 keeps only as deprecated aliases (v4 main.go `mustMarkDeprecated`), and the one it dropped.
V3_DEPRECATED_FLAGS = ("branch", "rev", "dest", "wait", "timeout", "max-sync-failures", "ssh", "password",
                       "sync-hook-command", "v")
V4_REMOVED_FLAGS = ("change-permissions",)   # v4 main.go: fatal "--change-permissions is no longer supported"
# v3 env names v4 still reads (v4.3.0 main.go): as fallbacks after the GITSYNC_ name, or as deprecated
# settings; the ones that override a v4 setting are in V4_OVERRIDING, the one v4 refuses is GIT_SYNC_PERMISSIONS.
V4_READS_V3 = {n for names in V4_SETTINGS.values() for n in names if not n.startswith("GITSYNC_")} | {
    "GIT_SYNC_SUBMODULES", "GIT_SYNC_SPARSE_CHECKOUT_FILE", "GIT_SYNC_ERROR_FILE", "GIT_SYNC_PERIOD",
    "GIT_SYNC_SYNC_TIMEOUT", "GIT_SYNC_SYNC_ON_SIGNAL", "GIT_SYNC_MAX_FAILURES", "GIT_SYNC_TOUCH_FILE",
    "GIT_SYNC_ADD_USER", "GIT_SYNC_GROUP_WRITE", "GIT_SYNC_EXECHOOK_COMMAND", "GIT_SYNC_EXECHOOK_TIMEOUT",
    "GIT_SYNC_EXECHOOK_BACKOFF", "GIT_SYNC_WEBHOOK_URL", "GIT_SYNC_WEBHOOK_METHOD", "GIT_SYNC_WEBHOOK_SUCCESS_STATUS",
    "GIT_SYNC_WEBHOOK_TIMEOUT", "GIT_SYNC_WEBHOOK_BACKOFF", "GIT_SYNC_GIT", "GIT_SYNC_GIT_CONFIG", "GIT_SYNC_GIT_GC",
    "GIT_SYNC_HTTP_BIND", "GIT_SYNC_HTTP_METRICS", "GIT_SYNC_HTTP_PPROF", "GIT_SYNC_PASSWORD",
    "GIT_SYNC_WAIT", "GIT_SYNC_TIMEOUT", "GIT_SYNC_MAX_SYNC_FAILURES", "GIT_SYNC_HOOK_COMMAND"}
V4_REFUSED_ENV = {"GIT_SYNC_PERMISSIONS": "--change-permissions is no longer supported"}
# v3's env prefixes (v3.6.9 cmd/git-sync/main.go): GIT_SYNC_*, and GIT_SSH_*/GIT_KNOWN_HOSTS/GIT_COOKIE_FILE/GIT_ASKPASS_URL.
V3_ENV_PREFIXES = ("GIT_SYNC_", "GIT_SSH_", "GIT_KNOWN_HOSTS", "GIT_COOKIE_FILE", "GIT_ASKPASS_URL")
V4_ENV_PREFIX = "GITSYNC_"


def _repository(image: str) -> str:
    name = image.split("@", 1)[0]
    head, _, last = name.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]


def is_git_sync(image: object) -> bool:
    """Whether an image reference is git-sync's (any tag or digest)."""
    return isinstance(image, str) and _repository(image) in IMAGES


def major(image: str) -> int | None:
    """4 or 3 from the image's tag (`v4.3.0`), None when the tag does not say (a digest alone)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    m = re.match(r"^v?(\d+)\.", last.split(":", 1)[1])
    return int(m.group(1)) if m else None


def flags(argv: list[str]) -> dict[str, tuple[str, int]]:
    """`--name=value`, `--name value` and boolean `--name` of a command line: name -> (value, index)."""
    out: dict[str, tuple[str, int]] = {}
    i = 0
    while i < len(argv):
        a = str(argv[i])
        m = re.match(r"^--?([A-Za-z][\w-]*)(?:=(.*))?$", a)
        if m:
            name, value = m.group(1), m.group(2)
            if value is None:
                nxt = str(argv[i + 1]) if i + 1 < len(argv) else None
                if nxt is not None and not nxt.startswith("-") and name not in ("one-time", "ssh", "add-user",
                                                                                "group-write", "ssh-known-hosts"):
                    value = nxt
                    out[name] = (value, i)
                    i += 2
                    continue
                value = "true"
            out[name] = (value, i)
        i += 1
    return out


def literal_env(c: dict) -> dict[str, dict]:
    """env name -> its entry (value or valueFrom), as written."""
    env = c.get("env")
    return {str(e["name"]): e for e in env if isinstance(e, dict) and e.get("name")} if isinstance(env, list) else {}


@dataclass
class Settings:
    """What a git-sync v4 container resolves its settings to; `source` says where each came from."""
    values: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)      # setting -> "--flag", "ENV" or "default"

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


def settings(argv: list[str], env: dict[str, str]) -> Settings:
    """v4's reading: a flag, else the first env name set, else the default; then the deprecated
    --branch/--rev and --dest override --ref and --link (v4.3.0 main.go)."""
    fl = flags(argv)
    s = Settings()
    for key, names in V4_SETTINGS.items():
        if key in fl:
            s.values[key], s.source[key] = fl[key][0], f"--{key}"
            continue
        for n in names:
            if n in env and env[n] != "":
                s.values[key], s.source[key] = env[n], n
                break
    if "ref" not in s.values:
        s.values["ref"], s.source["ref"] = V4_DEFAULT_REF, "default"
    if "root" not in s.values:
        s.values["root"], s.source["root"] = V4_DEFAULT_ROOT, "default"
    if "depth" not in s.values:
        s.values["depth"], s.source["depth"] = str(V4_DEFAULT_DEPTH), "default"
    dep = {}
    for key, (envname, _) in V4_OVERRIDING.items():
        if key in fl:
            dep[key] = (fl[key][0], f"--{key}")
        elif env.get(envname):
            dep[key] = (env[envname], envname)
    branch, rev = dep.get("branch"), dep.get("rev")
    if branch and (rev is None or rev[0] == "HEAD"):
        s.values["ref"], s.source["ref"] = branch
    elif rev and branch is None:
        s.values["ref"], s.source["ref"] = rev
    if "dest" in dep:
        s.values["link"], s.source["link"] = dep["dest"]
    if not s.values.get("link") and s.values.get("repo"):
        s.values["link"], s.source["link"] = s.values["repo"].strip("/").split("/")[-1], "default"
    if V4_PASSWORD_ENV in env or V4_PASSWORD_ENV_V3 in env:
        s.values["password"] = env.get(V4_PASSWORD_ENV) or env.get(V4_PASSWORD_ENV_V3, "")
    return s


def is_ssh_url(url: str) -> bool:
    """git's scp-like `user@host:path` or an ssh:// URL."""
    return url.startswith("ssh://") or bool(re.match(r"^[\w.-]+@[\w.-]+:", url))


def url_host(url: str) -> str:
    m = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)", url) or re.match(r"^[\w.-]+@([\w.-]+):", url)
    return m.group(1).lower() if m else ""
