"""The environment a sandboxed command gets: the variables it needs to run, and nothing else.

An allowlist, not a list of secrets to remove: an environment holds tokens under names nobody can
enumerate (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``NPM_TOKEN``, a CI's own), and variables
that point at sockets the sandbox must not reach (``SSH_AUTH_SOCK``, ``DBUS_SESSION_BUS_ADDRESS``,
``DISPLAY``, ``WAYLAND_DISPLAY``, ``XDG_RUNTIME_DIR``). So a command inside the sandbox sees only
what locates its tools and shapes its output: ``PATH``, ``HOME``, the locale, the terminal, the
toolchain homes. Proxy settings pass only when the command may use the network. A user who needs
more adds names to ``sandbox_env`` in the configuration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NAMES = _names(
    """
    PATH HOME USER LOGNAME SHELL LANG LANGUAGE TERM COLORTERM TERM_PROGRAM NO_COLOR FORCE_COLOR CLICOLOR
    CLICOLOR_FORCE COLUMNS LINES TZ EDITOR VISUAL PAGER LESS CI DEBIAN_FRONTEND
    XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CONFIG_DIRS XDG_DATA_DIRS
    VIRTUAL_ENV CONDA_PREFIX CONDA_DEFAULT_ENV CONDA_EXE CONDA_SHLVL PYENV_ROOT PYENV_VERSION PYTHONPATH
    PYTHONDONTWRITEBYTECODE PYTHONUNBUFFERED PYTHONIOENCODING PYTHONUTF8
    GOPATH GOROOT GOBIN GOFLAGS GO111MODULE GOTOOLCHAIN CGO_ENABLED
    CARGO_HOME RUSTUP_HOME RUSTUP_TOOLCHAIN RUST_BACKTRACE RUST_LOG
    JAVA_HOME MAVEN_HOME M2_HOME GRADLE_HOME GRADLE_USER_HOME ANDROID_HOME ANDROID_SDK_ROOT
    NVM_DIR NVM_BIN NODE_PATH NODE_ENV PNPM_HOME VOLTA_HOME BUN_INSTALL DENO_DIR
    GEM_HOME GEM_PATH RBENV_ROOT BUNDLE_PATH ASDF_DIR ASDF_DATA_DIR SDKMAN_DIR DOTNET_ROOT
    PKG_CONFIG_PATH LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH
    CC CXX CFLAGS CXXFLAGS CPPFLAGS LDFLAGS MAKEFLAGS
    SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS
    """
)
_LOCALE = re.compile(r"LC_[A-Z]+")
_PROXIES = frozenset({"http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"})
_NO_PROXY = frozenset({"no_proxy", "NO_PROXY"})


def command_environment(environ: Mapping[str, str], *, network: bool, extra: Iterable[str] = ()) -> dict[str, str]:
    """The variables of ``environ`` a sandboxed command may see (``extra``: the user's own additions)."""
    allowed = _NAMES | frozenset(extra) | _NO_PROXY | (_PROXIES if network else frozenset())
    return {name: text for name, text in environ.items() if name in allowed or _LOCALE.fullmatch(name)}
