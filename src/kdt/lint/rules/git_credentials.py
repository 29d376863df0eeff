"""A private Git URL has credentials from a Secret.

git-sync clones over SSH (`git@host:org/repo`, `ssh://`) with the key file `--ssh-key-file`
(GITSYNC_SSH_KEY_FILE, default /etc/git-secret/ssh) and checks the host against
`--ssh-known-hosts-file` (default /etc/git-secret/known_hosts); over HTTPS with `--username` and
$GITSYNC_PASSWORD or `--password-file`, or `--credential`, `--askpass-url`, a GitHub App key or a
cookie file (git-sync v4.3.0 main.go). Without them the clone of a private repository fails in every
pod (`could not read Username`, `Permission denied (publickey)`) and the job never starts.

What counts as private: every SSH URL (SSH needs a key, whatever the host); an HTTPS URL whose host is
not one of the public forges in the option `public_hosts` (github.com, gitlab.com, bitbucket.org,
codeberg.org, huggingface.co, ...), where anonymous clones of public repositories work. A company's
own Git server (git.example.internal, a GitLab of its own) serves private code in the common case, so a
clone from it with no credentials is reported; a repository on a public forge may be private too, which
this rule cannot know. Also reported: SSH host keys not checked (GITSYNC_SSH_KNOWN_HOSTS=false), which
lets anyone on the path serve other code.

Fix: components/git-code/token or components/git-code/ssh (the Secret `git-credentials`), or the chart's
`code.git.secret` and `code.git.auth`.
"""
from ...findings import WARNING
from ...operators import gitsync as G
from ._gitsync import git_syncs, mounts_of
from ._util import d, lst

ID = "git-credentials"
LEVEL = WARNING
BASIS = "risk"
WHY = "Whether the repository is private is not in the manifests: only its URL is."
OPTIONS = {"public_hosts": ["github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "huggingface.co",
                            "gitee.com", "sourcehut.org", "git.sr.ht", "salsa.debian.org", "gitlab.freedesktop.org",
                            "opendev.org", "go.googlesource.com", "chromium.googlesource.com"]}


def _secret_volumes(spec: dict) -> set:
    out = set()
    for v in lst(spec.get("volumes")):
        v = d(v)
        if "secret" in v or any("secret" in d(s) for s in lst(d(v.get("projected")).get("sources"))) or "csi" in v:
            out.add(str(v.get("name")))
    return out


def _file_from_secret(gs, path: str) -> bool:
    secrets = _secret_volumes(gs.pt.spec)
    return any((path == mp or path.startswith(mp.rstrip("/") + "/")) and vol in secrets for mp, vol, _ in mounts_of(gs.c))


def _env_set(gs, *names) -> bool:
    return any(d(e).get("name") in names and ("valueFrom" in d(e) or d(e).get("value")) for e in lst(gs.c.get("env")))


def check(docs, ctx):
    public = {h.lower() for h in (ctx.opt("public_hosts") or OPTIONS["public_hosts"])}
    for doc in docs:
        for gs in git_syncs(doc):
            url = gs.settings.get("repo") or ""
            if not url or url.startswith(("file://", "/")):
                continue
            s = gs.settings
            if G.is_ssh_url(url):
                key = s.get("ssh-key-file") or G.SSH_KEY_FILE
                if not _file_from_secret(gs, key):
                    yield doc.finding(ID, f"git-sync clones {url} over SSH, but its key {key} comes from no Secret volume: "
                                          "every pod's clone fails (Permission denied (publickey)); mount a Secret with keys "
                                          "ssh and known_hosts at /etc/git-secret (components/git-code/ssh)", gs.where("repo"))
                elif str(s.get("ssh-known-hosts", "true")).lower() in ("false", "0"):
                    yield doc.finding(ID, f"git-sync clones {url} over SSH without checking the host's key "
                                          "(GITSYNC_SSH_KNOWN_HOSTS=false): anyone on the path can serve other code; give "
                                          "known_hosts in the Secret", gs.where("ssh-known-hosts"))
                continue
            user = s.get("username") or _env_set(gs, *G.V4_SETTINGS["username"])
            password = _env_set(gs, G.V4_PASSWORD_ENV, G.V4_PASSWORD_ENV_V3, *G.V4_SETTINGS["password-file"]) \
                or s.get("password-file")
            creds = (user and password) \
                or s.get("credential") or s.get("askpass-url") or s.get("github-app-private-key-file") \
                or str(s.get("cookie-file", "")).lower() == "true" or "@" in url.split("://", 1)[-1].split("/", 1)[0]
            host = G.url_host(url)
            if creds or not host or host in public or any(host.endswith("." + p) for p in public):
                continue
            yield doc.finding(ID, f"git-sync clones {url} with no credentials, and {host} is not a public forge (option "
                                  "public_hosts): a private repository's clone fails in every pod; give GITSYNC_USERNAME and "
                                  "GITSYNC_PASSWORD from a Secret (components/git-code/token)", gs.where("repo"))
