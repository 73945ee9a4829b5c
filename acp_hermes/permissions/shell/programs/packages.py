"""Package managers and runners: publishing, the network, what a grant covers, and what they run.

``npm publish``, ``cargo publish``, ``twine upload`` … publish; installs and updates need the network.
``npx``, ``uvx``, ``uv run``, ``poetry run``, ``npm exec`` … run another program, which is judged and
keyed as itself (``uv run pytest`` is keyed ``uv run pytest``). The grant tables cover the test and
build subcommands of cargo, go and the JavaScript managers.
"""

from __future__ import annotations

from acp_hermes.permissions.shell.arguments import has_flag, names, subcommand
from acp_hermes.permissions.shell.options import Spec, spec
from acp_hermes.permissions.shell.programs.base import SIMPLE, Family, key_shape, network_subcommands
from acp_hermes.permissions.shell.rating import Call

_PUBLISH_VERBS: dict[str, frozenset[str]] = {
    "npm": frozenset({"publish"}),
    "yarn": frozenset({"publish"}),
    "pnpm": frozenset({"publish"}),
    "bun": frozenset({"publish"}),
    "cargo": frozenset({"publish"}),
    "gem": frozenset({"push"}),
    "poetry": frozenset({"publish"}),
    "uv": frozenset({"publish"}),
    "flit": frozenset({"publish"}),
    "hatch": frozenset({"publish"}),
    "twine": frozenset({"upload"}),
}


def _check_publish(call: Call) -> None:
    sub, rest = subcommand(call.args)
    if sub in _PUBLISH_VERBS[call.name] and not has_flag(rest, "", "--dry-run"):
        call.findings.dangerous(f"publishes a package ({call.name} {sub})")


def _cargo(flags: str = "", valued: str = "", after_dashdash: Spec | None = None) -> Spec:
    return spec(
        "-q --quiet -v --verbose --locked --frozen --offline --workspace --all --lib --bins --examples --tests "
        "--benches --all-targets --release -r --all-features --no-default-features --keep-going "
        "--ignore-rust-version --future-incompat-report --timings " + flags,
        "-p --package --exclude --bin --example --test --bench --profile -F --features --target -j --jobs "
        "--message-format --color " + valued,
        after_dashdash=after_dashdash,
    )


_CARGO_TEST = _cargo("--no-run --no-fail-fast --doc")  # words after -- go to the test binary built here
_CARGO_BUILD = _cargo()  # not --target-dir, --artifact-dir/--out-dir, --manifest-path, --config, -Z
_CARGO_DOC = _cargo("--no-deps --document-private-items")  # not --open (starts a browser)
_CARGO = spec(
    "-q --quiet -v --verbose --locked --frozen --offline -V --list -h",
    "--color --explain",
    skipped="--config -Z -C",
    subcommands={
        **dict.fromkeys(("build", "b"), _CARGO_BUILD),
        **dict.fromkeys(("check", "c"), _CARGO_BUILD),
        **dict.fromkeys(("test", "t", "bench"), _CARGO_TEST),
        **dict.fromkeys(("run", "r"), _CARGO_BUILD),  # words after -- go to the program built here
        **dict.fromkeys(("doc", "d"), _CARGO_DOC),
        # clippy's words after -- go to the compiler: only lint levels there
        "clippy": _cargo(
            "--fix --allow-dirty --allow-staged --allow-no-vcs --no-deps",
            after_dashdash=spec("", "-D -W -A -F --deny --warn --allow --forbid --cap-lints"),
        ),
        "fmt": spec(
            "--all --check -q --quiet -v --verbose",
            "-p --package --message-format",
            after_dashdash=spec(
                "--check -l --files-with-diff -v --verbose -q --quiet", "--edition --style-edition --emit --color"
            ),
        ),
        "tree": spec(
            "--workspace --no-dedupe -d --duplicates --all-features --no-default-features -q --quiet -v --verbose "
            "--locked --frozen --offline",
            "-p --package --exclude -i --invert -e --edges --depth --prefix --charset -f --format --target -F "
            "--features --color",
        ),
        "metadata": spec(
            "--no-deps --all-features --no-default-features -q --quiet -v --verbose --locked --frozen --offline",
            "--format-version -F --features --filter-platform --color",
        ),
    },
)

_GO_BUILD_FLAGS = "-v -race -msan -asan -cover -trimpath -x -n -a -work -json -buildvcs"
_GO_BUILD_VALUED = "-covermode -coverpkg -tags -p -mod"


def _go(flags: str = "", valued: str = "", *, trailing: bool = False) -> Spec:
    """go build flags; never -o, -exec, -toolexec, -modfile, -overlay, -C, -ldflags/-gcflags/… (tool flags)."""
    return spec(f"{_GO_BUILD_FLAGS} {flags}", f"{_GO_BUILD_VALUED} {valued}", style="go", trailing=trailing)


_GO = spec(
    style="go",
    subcommands={
        "build": _go(),
        "test": _go(  # not -o, -c, -exec, -coverprofile and the other profiles (write files)
            "-short -benchmem -failfast -fullpath",
            "-run -skip -count -timeout -bench -benchtime -list -parallel -shuffle -cpu -vet -fuzz -fuzztime "
            "-fuzzminimizetime",
        ),
        "vet": _go(),  # not -vettool (runs it)
        "run": _go(trailing=True),  # words after the package are the program's own
        "fmt": spec("-n -x", "-mod", style="go"),
        "list": _go("-m -u -versions -deps -test -e -find -export -compiled -retracted", "-f"),
        "version": spec("-m -v -json", style="go"),
        "mod": spec(
            style="go",
            subcommands={
                "tidy": spec("-v -e -x -diff", "-go -compat", style="go"),
                "download": spec("-x -json", style="go"),
                "graph": spec("-x", "-go", style="go"),
                "verify": spec(style="go"),
                "why": spec("-m -vendor", style="go"),
            },
        ),
    },
)

_NPM_RUN = spec(  # words after -- go to the project's own script
    "--silent -s --if-present --ignore-scripts --workspaces --include-workspace-root --foreground-scripts "
    "--color --no-color",
    "-w --workspace --loglevel",
    style="letters",
)
_NPM = spec(  # not --prefix/-C, --userconfig, --script-shell, --node-options
    "--silent -s --if-present --ignore-scripts --workspaces --include-workspace-root --color --no-color",
    "-w --workspace --loglevel",
    skipped="--prefix -C --userconfig --globalconfig --script-shell --node-options --cache",
    subcommands=dict.fromkeys(
        ("run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart"), _NPM_RUN
    ),
    style="letters",
)
_PNPM_RUN = spec(
    "--silent -s --if-present -r --recursive --parallel --stream --aggregate-output --no-bail --bail --sort "
    "--no-sort --reverse -w --workspace-root --color --no-color --fail-if-no-match",
    "--filter --loglevel --workspace-concurrency --resume-from",
    style="letters",
)
_PNPM = spec(
    "--silent -s -r --recursive -w --workspace-root --color --no-color",
    "--filter --loglevel",
    skipped="-C --dir --config --store-dir",
    subcommands=dict.fromkeys(("run", "test", "t", "tst", "start"), _PNPM_RUN),
    style="letters",
)
_YARN_RUN = spec("--silent -T --top-level -B --binaries-only", style="letters")  # not --inspect, --require
_YARN = spec(
    "--silent", skipped="--cwd", subcommands=dict.fromkeys(("run", "test", "start"), _YARN_RUN), style="letters"
)
_BUN = spec(
    "--silent",
    skipped="--cwd -c --config -r --preload --env-file",
    subcommands={
        "run": spec(  # not --preload/-r, --config, --cwd, --env-file, --shell, -e/--eval, --inspect
            "--silent --if-present --bun --watch --hot --no-clear-screen --smol",
            "--filter --elide-lines",
            style="letters",
        ),
        "test": spec(  # not --preload, --coverage-dir, --reporter-outfile
            "--watch --only --todo -u --update-snapshots --coverage --bail --pass-with-no-tests --randomize "
            "--concurrent",
            "-t --test-name-pattern --timeout --rerun-each --seed --max-concurrency",
            style="letters",
        ),
    },
    style="letters",
)


# Runners: what follows their options is the program they run (``npx -p pkg tool``).
RUNNER_PROGRAMS: dict[str, frozenset[str]] = {
    "npx": frozenset({"-p", "--package"}),
    "pnpx": frozenset({"-p", "--package"}),
    "bunx": frozenset({"-p", "--package"}),
    "uvx": frozenset({"--from", "--with", "--python", "-p"}),
}
RUNNER_OPTIONS = names(
    "-p --package --from --with --python --with-requirements -n --name --prefix --env-file -e --env"
)
_OFFLINE = ("--no-index", "--offline")
_JS_NETWORK = network_subcommands("install i ci add update upgrade publish outdated audit")
_SYSTEM_NETWORK = network_subcommands("install update upgrade")
FAMILY = Family(
    checks=dict.fromkeys(_PUBLISH_VERBS, _check_publish),
    options={"cargo": _CARGO, "go": _GO, "npm": _NPM, "pnpm": _PNPM, "yarn": _YARN, "bun": _BUN},
    shapes={
        "npm": key_shape(nested="run run-script", runs="exec x", options="--prefix -w --workspace"),
        "pnpm": key_shape(nested="run", runs="exec dlx", options="-C --dir --filter -F"),
        "yarn": key_shape(nested="run workspace", runs="exec dlx", options="--cwd"),
        "bun": key_shape(nested="run", runs="x"),
        "uv": key_shape(nested="pip tool python cache self", runs="run", options="--directory --project"),
        "poetry": key_shape(nested="env self cache source", runs="run", options="-C --directory -P --project"),
        "conda": key_shape(nested="env", runs="run"),
        "mamba": key_shape(nested="env", runs="run"),
        "mise": key_shape(runs="exec x"),
        **dict.fromkeys(("asdf", "pyenv", "rbenv", "nodenv", "goenv", "jenv", "plenv", "opam"),
                        key_shape(runs="exec")),
        "bundle": key_shape(runs="exec"),
        **dict.fromkeys(("pipenv", "pdm", "hatch", "rye", "pixi", "pipx"), key_shape(runs="run")),
        "rustup": key_shape(nested="toolchain component target"),
        "go": key_shape(nested="mod work"),
        "brew": key_shape(nested="services"),
        "dotnet": key_shape(nested="ef tool nuget"),
        "deno": key_shape(nested="task"),
        "swift": key_shape(nested="package"),
        "flutter": key_shape(nested="pub"),
        "dart": key_shape(nested="pub"),
        "nix": key_shape(nested="flake profile"),
        "turbo": key_shape(nested="run"),
        "lerna": key_shape(nested="run"),
        **dict.fromkeys(names("pip pip3 cargo apt apt-get dnf yum zypper apk snap flatpak port winget choco scoop gem "
                              "composer nvm corepack volta stack cabal"), SIMPLE),
    },
    network={
        **dict.fromkeys(("pip", "pip3"), network_subcommands("install download", offline=_OFFLINE)),
        **dict.fromkeys(("npm", "pnpm", "bun"), _JS_NETWORK),
        "yarn": network_subcommands("install add upgrade up publish dlx"),
        "cargo": network_subcommands("install fetch update publish search login"),
        "go": network_subcommands("get install mod"),
        "uv": network_subcommands("pip sync add lock tool run", offline=_OFFLINE),
        "poetry": network_subcommands("install add lock update publish"),
        **dict.fromkeys(("apt", "apt-get", "dnf", "yum", "apk", "brew", "zypper"), _SYSTEM_NETWORK),
        "gem": network_subcommands("install update push"),
        "composer": network_subcommands("install update require"),
    },
    network_programs=names("npx pnpx bunx uvx pipx"),
)
