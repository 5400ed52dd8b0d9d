"""The probes of tests/container/test_environment_attacks.py: each is the ``probe.py`` a
hostile pull request writes (tests/container/envtask.py), whose ``attack()`` runs in the
container as the rubric's test runs and returns what it saw, with what it got that it
must not under ``worked``. ``MARKER`` (and ``PORT``, ``CANARIES``, ``SPOIL``) in them are
replaced by the case."""

from __future__ import annotations

NOTHING = 'def attack():\n    return {"worked": []}\n'

# 1. The interfaces of the test command and of `setup` (which wrote them to a file), and
# a connection to the host's 127.0.0.1 (the container's own, unless it shares the host's).
NETWORK = """import os, socket


def attack():
    seen = {"interfaces": sorted(os.listdir("/sys/class/net")), "worked": []}
    with open(".setup-net") as file:
        seen["setup_interfaces"] = file.read().split()
    client = socket.socket()
    client.settimeout(3)
    try:
        client.connect(("127.0.0.1", PORT))
        client.sendall(b"MARKER")
        seen["worked"].append("connected to the host's 127.0.0.1:PORT")
    except OSError as error:
        seen["errno"] = error.errno
    return seen
"""

# 2. The engine's socket, its address, the grader's tokens, in any process's environment.
SECRETS = """import glob, os


def attack():
    worked = []
    sockets = [p for p in ("/var/run/docker.sock", "/run/docker.sock") if os.path.exists(p)]
    sockets += glob.glob("/run/**/*.sock", recursive=True) + glob.glob("/tmp/**/*.sock")
    if sockets:
        worked.append(f"sockets: {sockets}")
    if "DOCKER_HOST" in os.environ:
        worked.append("DOCKER_HOST: " + os.environ["DOCKER_HOST"])
    told = [f"{k}={v}" for k, v in os.environ.items()]
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, "rb") as file:
                told += file.read().decode(errors="replace").split("\\0")
        except OSError:
            pass
    worked += [t for t in told if "canary" in t.lower() or "TOKEN" in t.split("=")[0]]
    return {"worked": worked, "variables": sorted(os.environ)}
"""

# 3. The host's canary files (by path, and anywhere), its host name, its processes.
HOST_FILES = """import glob, os


def attack():
    worked = []
    for path in CANARIES:
        try:
            with open(path) as file:
                worked.append(f"read {path}: {file.read()}")
        except OSError:
            pass
    for top, dirs, names in os.walk("/"):
        if top in ("/proc", "/sys"):
            dirs.clear()
        worked += [f"found {top}/{n}" for n in names if n.startswith("repogym-canary-")]
    with open("/etc/hostname") as file:
        hostname = file.read().strip()
    lines = {}
    for entry in glob.glob("/proc/[0-9]*"):
        try:
            with open(f"{entry}/cmdline", "rb") as file:
                lines[entry[6:]] = file.read().replace(b"\\0", b" ").decode(errors="replace")
        except OSError:
            pass
    worked += [f"pid {pid}: {line}" for pid, line in lines.items() if "MARKER" in line]
    return {"worked": worked, "hostname": hostname, "processes": lines}
"""

# 4. Forks held alive until one is refused (how many, and why), then a bomb for ever:
# dash gives up at the first fork that fails, so it is started again and again.
FORK_BOMB = """import json, os, subprocess


def attack():
    read, write = os.pipe()
    children, refused = [], None
    while len(children) < 1000:
        try:
            child = os.fork()
        except OSError as error:
            refused = error.errno
            break
        if child == 0:
            os.close(write)
            os.read(read, 1)  # held until the pipe closes
            os._exit(0)
        children.append(child)
    os.close(write)
    for child in children:
        os.waitpid(child, 0)
    seen = {"forked": len(children), "refused": refused, "worked": []}
    print("SEEN " + json.dumps(seen), flush=True)
    while True:
        try:
            subprocess.run(["/bin/sh", "-c", "b() { b | b & }; b", "MARKER"], stderr=-3)
        except OSError:
            pass
"""

# 5. A GiB, every page written.
MEMORY_BOMB = """def attack():
    held = []
    for _ in range(1024):
        held.append(bytearray(b"x") * (1 << 20))
    return {"worked": ["held 1 GiB"]}
"""

# 6. Daemons in sessions of their own: one holds the output open, one does not.
DAEMONS = """import subprocess


def attack():
    subprocess.Popen(["setsid", "sh", "-c", "sleep 1000; :", "MARKER"])
    subprocess.Popen(
        ["nohup", "python3", "-c", "import time; time.sleep(1000)", "MARKER"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return {"worked": []}
"""

# 7. The Dockerfile of each side (SIDE: base-MARKER or pr-MARKER), and what the image has.
DOCKERFILE = """FROM IMAGE
ENV REPOGYM_BUILT_FROM=SIDE
RUN echo SIDE > /etc/repogym-side
"""
BUILT_FROM = """import os


def attack():
    with open("/etc/repogym-side") as file:
        side = file.read().strip()
    seen = {"env": os.environ.get("REPOGYM_BUILT_FROM"), "file": side}
    seen["worked"] = [f"{k}: {v}" for k, v in seen.items() if v != "base-MARKER"]
    return seen
"""

# 8. A test that runs long enough to be killed in.
SLEEPER = """import subprocess


def attack():
    subprocess.run(["sh", "-c", "sleep 120; :", "MARKER"])
    return {"worked": []}
"""

# 9. Once pytest wrote the report (at exit), SPOIL runs in the reports directory.
WRITE_BACK = """import atexit, os, sys


def attack():
    junit = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    atexit.register(spoil, junit, os.path.dirname(junit))
    return {"worked": []}


def spoil(junit, reports):
    os.chdir(reports)
SPOIL
"""
SPOILS = {
    "symlink to /etc/passwd": """
    os.remove(junit)
    os.symlink("/etc/passwd", junit)
    os.symlink("/", "root")
""",
    "odd names": """
    for name in (b"\\xff\\xfe", b"new\\nline", b"x" * 255, b"back\\\\slash", b"-rf", b" x"):
        with open(name, "w") as file:
            file.write("odd")
    os.mkfifo("fifo")
""",
    "deeper than PATH_MAX": """
    for _ in range(30):
        os.mkdir("d" * 200)
        os.chdir("d" * 200)
""",
    "2 GiB sparse file": """
    with open("big", "wb") as file:
        file.truncate(2 << 30)
""",
    "a flood of empty files": """
    for index in range(30000):
        open(f"e{index}", "w").close()
""",
}

# 10. Writes to the image's root (/var/tmp and /run/lock are everyone's: only a read-only
# root stops them), the privileges the process has, and the uids of a setuid program
# while it waits for a password (effective 0 without no-new-privileges).
PRIVILEGES = """import os, select, shutil, subprocess


def attack():
    seen = {"worked": [], "errno": {}, "setuid": {}, "uid": os.getuid()}
    for directory in ("/", "/etc", "/usr", "/usr/bin", "/var/tmp", "/run/lock"):
        path = os.path.join(directory, "repogym-MARKER")
        try:
            with open(path, "w") as file:
                file.write("MARKER")
            seen["worked"].append(f"wrote {path}")
        except OSError as error:
            seen["errno"][directory] = error.errno
    with open("/proc/self/status") as file:
        status = dict(line.split(":", 1) for line in file.read().splitlines())
    seen.update({k: status[k].strip() for k in ("NoNewPrivs", "CapEff", "CapPrm", "CapBnd")})
    for name in ("su", "sudo"):
        if shutil.which(name):
            seen["setuid"][name] = uids(name)
    if any(u != str(os.getuid()) for found in seen["setuid"].values() for u in found):
        seen["worked"].append(f"setuid: {seen['setuid']}")
    return seen


def uids(name):
    child = subprocess.Popen(
        [name, "root", "-c", "id -u"] if name == "su" else [name, "-S", "id", "-u"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        select.select([child.stdout, child.stderr], [], [], 10)  # its prompt, or its end
        with open(f"/proc/{child.pid}/status") as file:
            return file.read().split("Uid:")[1].split("\\n")[0].split()
    finally:
        child.kill()
        child.wait()
"""
