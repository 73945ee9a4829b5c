"""Build tools, test runners and linters: make's ways to run other code, and what a grant covers of each.

``make --eval`` and ``make SHELL=…`` change what runs; every ``VAR=value`` operand is left to the
question. The test runners and linters list only options that neither load code or configuration
from elsewhere nor write files (``pytest --basetemp`` empties its directory, ``--junitxml`` writes).
"""

from __future__ import annotations

from collections.abc import Iterable

from acp_hermes.permissions.shell.arguments import names
from acp_hermes.permissions.shell.options import Line, spec, with_kebab
from acp_hermes.permissions.shell.programs.base import SIMPLE, Family, key_shape
from acp_hermes.permissions.shell.rating import Call


def _check_make(call: Call) -> None:
    if any(arg == "-E" or arg.startswith("--eval") for arg in call.args):
        call.findings.dangerous("make --eval runs make code from the command line")
    for arg in call.args:
        name, is_assignment, _ = arg.partition("=")
        if is_assignment and name.strip() in ("SHELL", "MAKESHELL", ".SHELLFLAGS"):
            call.findings.dangerous(f"make {name.strip()}= changes the program make runs its recipes with")


def _make_assignments(line: Line) -> Iterable[str]:
    """``VAR=value`` on make's command line can set SHELL, .SHELLFLAGS and other program-running variables."""
    return [word for word in line.operands if "=" in word]


_WARNING_ACTIONS = names("default error ignore always all module once")
_COVERAGE_REPORTS = names("term term-missing html xml json lcov annotate markdown markdown-append")
_VITEST_REPORTERS = names(
    "default basic verbose dot json tap tap-flat junit hanging-process github-actions blob html tree"
)
_ESLINT_FORMATTERS = names(
    "stylish json json-with-metadata html compact unix checkstyle junit tap visualstudio jslint-xml"
)


def _disables_plugin(value: str) -> bool:
    return value.startswith("no:")


def _inert_warning_filter(value: str) -> bool:
    """A warnings filter whose category is a builtin (a dotted one is imported)."""
    parts = value.split(":")
    category = parts[2].strip() if len(parts) > 2 else ""
    return parts[0].strip() in _WARNING_ACTIONS and "." not in category


def _report_in_place(value: str) -> bool:
    """A pytest-cov report kind without an output path (``term-missing``, ``html``, ``term:skip-covered``)."""
    kind, _, modifier = value.partition(":")
    return (kind in _COVERAGE_REPORTS or not kind) and modifier in ("", "skip-covered")


_MAKE = spec(  # not -f/-C/-I/-E/--eval/-W/-o, nor any VAR=value operand
    "-k --keep-going -s --silent --quiet --no-silent -n --just-print --dry-run --recon -B --always-make -q "
    "--question -i --ignore-errors -r --no-builtin-rules -R --no-builtin-variables -p --print-data-base -w "
    "--print-directory --no-print-directory -L --check-symlink-times -S --no-keep-going --stop --jobs "
    "--load-average --max-load --output-sync -d --debug --trace --warn-undefined-variables --shuffle -b -m -v -h",
    attached="-j -l -O",
    operands=_make_assignments,
)
_PYTEST = spec(  # not --basetemp (emptied!), --rootdir, -c, --confcutdir, -o, --pdb/--trace, --junitxml …
    "-x --exitfirst -q --quiet -v --verbose -s -l --showlocals --lf --last-failed --ff --failed-first --nf "
    "--new-first --sw --stepwise --sw-skip --stepwise-skip --co --collect-only --disable-warnings "
    "--disable-pytest-warnings --no-header --no-summary --strict-markers --strict-config --strict --runxfail "
    "--cache-show --cache-clear --continue-on-collection-errors --doctest-modules --doctest-continue-on-failure "
    "--full-trace --setup-show --setup-only --setup-plan --fixtures --funcargs --fixtures-per-test --markers "
    "--noconftest --cov-branch --no-cov --no-cov-on-fail --cov-append -h -V --looponfail -f "
    "--hypothesis-show-statistics --benchmark-skip --benchmark-only --benchmark-disable",
    "-k -m --tb -r --maxfail --durations --durations-min --lfnf --last-failed-no-failures --deselect --ignore "
    "--ignore-glob --doctest-glob --color --code-highlight --capture --import-mode --log-level --log-cli-level "
    "--log-format --log-date-format -n --numprocesses --maxprocesses --dist --cov --cov-fail-under --cov-context "
    "--timeout --reruns --reruns-delay --asyncio-mode --randomly-seed --hypothesis-seed --verbosity",
    checks={
        "-p": _disables_plugin,
        "-W": _inert_warning_filter,
        "--pythonwarnings": _inert_warning_filter,
        "--cov-report": _report_in_place,
    },
)
_JEST = spec(  # not --config, --rootDir, --setupFiles…, --testEnvironment, --reporters, --outputFile …
    with_kebab(
        "--watch --watchAll -i --runInBand -u --updateSnapshot --ci --no-ci -b --bail --silent --verbose "
        "--coverage --collectCoverage -o --onlyChanged --lastCommit --findRelatedTests --listTests "
        "--passWithNoTests --detectOpenHandles --detectLeaks --forceExit --no-cache --colors --noStackTrace "
        "--json --randomize --showSeed --logHeapUsage --useStderr -e --expand --errorOnDeprecated "
        "--testLocationInResults --no-watchman --debug --showConfig --all --clearMocks --resetMocks "
        "--restoreMocks"
    ),
    with_kebab(
        "-t --testNamePattern -w --maxWorkers --changedSince --testPathPattern --testPathIgnorePatterns "
        "--testRegex --testMatch --selectProjects --shard --seed --testTimeout --openHandlesTimeout "
        "--collectCoverageFrom"
    ),
    style="letters",
)
_VITEST = spec(  # not --config/-c, --root/-r, --dir, --environment, --pool, --outputFile, --inspect …
    with_kebab(
        "--run --watch -w --coverage --silent -u --update --passWithNoTests --changed --allowOnly --globals "
        "--hideSkippedTests --logHeapUsage --no-color --color --dom --no-file-parallelism --clearScreen "
        "--no-isolate --isolate"
    ),
    with_kebab("-t --testNamePattern --bail --project --shard --retry --testTimeout --maxWorkers --minWorkers"),
    checks={"--reporter": _VITEST_REPORTERS.__contains__},
    style="letters",
)
_MYPY = spec(  # not --config-file (plugins), --cache-dir, --python-executable (runs it), --*-report, --install-types
    "--strict --ignore-missing-imports --pretty --no-pretty --show-error-codes --hide-error-codes "
    "--no-error-summary --error-summary --show-column-numbers --show-error-end --show-error-context "
    "--show-traceback --no-color-output --color-output --check-untyped-defs --disallow-untyped-defs "
    "--disallow-incomplete-defs --disallow-untyped-calls --disallow-untyped-decorators --disallow-any-generics "
    "--disallow-subclassing-any --warn-unused-ignores --warn-return-any --warn-redundant-casts "
    "--warn-unreachable --warn-unused-configs --no-implicit-optional --strict-optional --no-strict-optional "
    "--no-implicit-reexport --strict-equality --strict-bytes --extra-checks --allow-redefinition "
    "--local-partial-types --no-warn-no-return --explicit-package-bases --namespace-packages "
    "--no-namespace-packages --no-site-packages --no-silence-site-packages --no-incremental --incremental "
    "--sqlite-cache --follow-untyped-imports --exclude-gitignore --show-absolute-path --non-interactive -v "
    "--verbose -V",
    "--follow-imports --python-version --platform --always-true --always-false -p --package -m --module -c "
    "--command --exclude --enable-error-code --disable-error-code --soft-error-limit "
    "-O --output",  # -O/--output names an output format, not a file
)
_RUFF_CHECK = spec(  # not --config, --cache-dir, -o/--output-file
    "--fix --no-fix --unsafe-fixes --no-unsafe-fixes --show-fixes --no-show-fixes --diff -w --watch --fix-only "
    "--no-fix-only --ignore-noqa --statistics --add-noqa --show-files --show-settings -e --exit-zero "
    "--exit-non-zero-on-fix --no-cache -n --isolated --preview --no-preview --force-exclude --no-force-exclude "
    "--respect-gitignore --no-respect-gitignore -q --quiet -s --silent -v --verbose",
    "--select --extend-select --ignore --extend-ignore --per-file-ignores --extend-per-file-ignores --fixable "
    "--extend-fixable --unfixable --exclude --extend-exclude --target-version --line-length --output-format "
    "--stdin-filename",
)
_RUFF_FORMAT = spec(
    "--check --diff --no-cache -n --isolated --preview --no-preview --force-exclude --no-force-exclude "
    "--respect-gitignore --no-respect-gitignore --exit-non-zero-on-format -q --quiet -s --silent -v --verbose",
    "--exclude --extend-exclude --line-length --target-version --stdin-filename --range",
)
_RUFF = spec(
    "-q --quiet -s --silent -v --verbose --isolated -h -V",
    skipped="--config",
    subcommands={
        "check": _RUFF_CHECK,
        "format": _RUFF_FORMAT,
        "rule": spec("--all", "--output-format"),
        "linter": spec("", "--output-format"),
        "version": spec("", "--output-format"),
    },
)
_ESLINT = spec(  # not -c/--config, --rulesdir, --plugin, --parser, -o/--output-file, --cache-location, --init
    "--fix --fix-dry-run --quiet --cache --no-eslintrc --no-config-lookup --no-ignore --stdin --no-inline-config "
    "--report-unused-disable-directives --color --no-color --debug --env-info --no-error-on-unmatched-pattern "
    "--exit-on-fatal-error --no-warn-ignored --pass-on-no-patterns --stats -h -v",
    "--ext --max-warnings --fix-type --env --global --rule --ignore-pattern --ignore-path --stdin-filename "
    "--report-unused-disable-directives-severity --cache-strategy --concurrency --flag --print-config",
    checks={"-f": _ESLINT_FORMATTERS.__contains__, "--format": _ESLINT_FORMATTERS.__contains__},
    style="letters",
)
_PRETTIER = spec(  # not --plugin, --config, --parser (may name a module), --cache-location
    "--check -c --write -w --list-different -l --no-config --no-editorconfig --with-node-modules --cache "
    "--no-error-on-unmatched-pattern --ignore-unknown -u --no-color --color --use-tabs --no-semi --semi "
    "--single-quote --jsx-single-quote --no-bracket-spacing --bracket-same-line --single-attribute-per-line "
    "--experimental-ternaries --insert-pragma --require-pragma --support-info --debug-check "
    "--vue-indent-script-and-style",
    "--log-level --ignore-path --stdin-filepath --cache-strategy --end-of-line --print-width --tab-width "
    "--quote-props --trailing-comma --arrow-parens --prose-wrap --html-whitespace-sensitivity "
    "--embedded-language-formatting --object-wrap --range-start --range-end --find-config-path --file-info",
    style="letters",
)
_TSC = spec(  # not --outDir, --outFile, --declarationDir, --tsBuildInfoFile, --generateTrace, --init, --clean
    "--noEmit --pretty --watch -w --build -b --strict --noEmitOnError --incremental --listFiles --showConfig "
    "--all -v -h --skipLibCheck --noImplicitAny --noUnusedLocals --noUnusedParameters --esModuleInterop "
    "--allowJs --checkJs --resolveJsonModule --isolatedModules --verbatimModuleSyntax --extendedDiagnostics "
    "--diagnostics --traceResolution --explainFiles --force --verbose --dry --preserveWatchOutput "
    "--noErrorTruncation --erasableSyntaxOnly --declaration --emitDeclarationOnly --noFallthroughCasesInSwitch "
    "--noImplicitReturns --noUncheckedIndexedAccess --exactOptionalPropertyTypes --strictNullChecks",
    "-p --project --target --module --lib --jsx --moduleResolution --locale --types",
    style="tsc",
)


_MAKE_SHAPE = key_shape(targets=True, options="-C -f --file --directory -I --include-dir -o --old-file -W --what-if")
FAMILY = Family(
    checks=dict.fromkeys(("make", "gmake"), _check_make),
    options={
        **dict.fromkeys(("make", "gmake"), _MAKE),
        **dict.fromkeys(("pytest", "py.test"), _PYTEST),
        "jest": _JEST,
        "vitest": _VITEST,
        "mypy": _MYPY,
        "ruff": _RUFF,
        "eslint": _ESLINT,
        "prettier": _PRETTIER,
        "tsc": _TSC,
    },
    shapes={
        **dict.fromkeys(("make", "gmake"), _MAKE_SHAPE),
        "just": key_shape(targets=True, options="-f --justfile -d --working-directory"),
        "rake": key_shape(targets=True, options="-f --rakefile -C --directory"),
        "ninja": key_shape(targets=True, options="-C -f -j -k -l -t"),
        "task": key_shape(targets=True, options="-d --dir -t --taskfile"),
        **dict.fromkeys(("mvn", "mvnw"),
                        key_shape(targets=True, options="-f --file -s --settings -pl --projects -P -T")),
        **dict.fromkeys(("gradle", "gradlew"), key_shape(targets=True, options="-p --project-dir -x --exclude-task")),
        **dict.fromkeys(names("rails mix ruff pre-commit alembic django-admin nx bazel bazelisk zig meson "
                              "golangci-lint hugo"), SIMPLE),
    },
)
