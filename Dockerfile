# The image of the repogym GitHub Action (action.yml: runs.using docker). The runner
# builds it from this file for `uses: ./`; releases push it prebuilt
# (.github/workflows/release.yml) so that `uses: org/repogym-action@v1` starts without a
# build.
#
# BASE_IMAGE must be Debian bookworm with a python3 of 3.10 or later. The default is the
# public Python image, pinned by digest; the tests build on a bookworm made locally with
# debootstrap and the distribution's python3 (.ci/base-image), which is why everything is
# installed into a virtual environment at /opt/repogym rather than into the base's Python.
ARG BASE_IMAGE=python:3.12-slim-bookworm@sha256:782412e85d0f0984994c290652577d4018aff08145c85b262bb63dc0c7522254

# ---- build: the virtual environment (pip stays in this stage) -------------------------
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/repogym
COPY . /src
# The Action's dependencies, and pytest: the runner the tasks' own tests are graded with
# when a repository does not bring its own. Every package comes from requirements/
# image.lock, by version and hash, wheels only (issue 19: a build installs exactly what
# was reviewed); repogym itself is then built with the locked setuptools, nothing fetched.
# README, "Releasing", says how the lock is made again. pip and setuptools stay behind:
# a task whose tests need more packages makes its own environment in its `setup`
# (README, "The image").
RUN /opt/repogym/bin/pip install --quiet --require-hashes --no-deps --only-binary :all: \
        -r /src/requirements/image.lock \
    && /opt/repogym/bin/pip install --quiet --no-deps --no-build-isolation --no-index /src \
    && /opt/repogym/bin/pip check \
    && /opt/repogym/bin/pip uninstall --quiet --yes setuptools \
    && /opt/repogym/bin/pip uninstall --quiet --yes pip \
    && find /opt/repogym -name __pycache__ -prune -exec rm -rf {} + \
    && /opt/repogym/bin/python -m compileall -q -j 0 /opt/repogym/lib

# ---- the image: the base, git, the virtual environment, a user for untrusted code -----
FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
# git from Debian where the base has none (the public image), without what the Action
# never runs: git's servers and mail, dumb-HTTP push, scalar, its docs and translations
# (28 MB of its 58 on a bookworm without git: bench/image.py --base).
# Its version is not pinned (hadolint's DL3008): the base is pinned by digest, but
# Debian's bookworm archive holds only the newest build of each package, so a `git=`
# pin would break every build at git's next security update, and pinning an archive
# snapshot instead would hold that update back from the image. What is installed is
# bookworm's git of the day, and `git --version` below puts it in the build's log.
# hadolint ignore=DL3008
RUN set -eu; \
    if ! command -v git >/dev/null; then \
        apt-get update -qq \
        && apt-get install -y -qq --no-install-recommends git >/dev/null \
        && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
        && core=/usr/lib/git-core \
        && rm -f "$core/git-daemon" "$core/git-http-backend" "$core/git-http-push" \
            "$core/git-imap-send" "$core/git-shell" "$core/scalar" \
        && rm -rf /usr/share/doc/git /usr/share/gitweb /usr/share/man/man*/git* \
            /usr/share/locale/*/LC_MESSAGES/git.mo; \
    fi; \
    git --version
# The user the graded code can be run as (uid 10001, no login, no home files): the
# Action itself runs as root, as the runner starts it.
RUN if command -v useradd >/dev/null; then \
        useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin repogym; \
    else \
        echo 'repogym:x:10001:10001::/nonexistent:/usr/sbin/nologin' >>/etc/passwd \
        && echo 'repogym:x:10001:' >>/etc/group; \
    fi
COPY --from=build /opt/repogym /opt/repogym
ENV PATH=/opt/repogym/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
LABEL org.opencontainers.image.title="repogym-action" \
      org.opencontainers.image.description="Grades a pull request against a task its author cannot edit" \
      org.opencontainers.image.version="1.0.0" \
      org.opencontainers.image.licenses="MIT"
ENTRYPOINT ["repogym-action"]
