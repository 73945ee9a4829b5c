"""Which options a remembered command grant covers: an allowlist per program and subcommand.

A grant such as "always allow ``git log``" names a program, not an invocation, and options can
turn a harmless program into one that runs code or writes anywhere: ``sed -n '1e …'``,
``rg --pre sh``, ``tar --checkpoint-action=exec=…``, ``make --eval``, ``git log --output=~/.bashrc``,
``find -fprint``, ``git --git-dir=evil status``, ``pytest --basetemp=~`` (pytest empties its
basetemp). So a grant covers an invocation only when every option in it is listed here as
harmless for that program and subcommand. Lists of bad things leak (an option added in the next
release, an abbreviation, a spelling nobody thought of); lists of good things hold: whatever is
not listed is asked about.

An option is listed only when it neither runs a program, nor writes a file named in its value,
nor reads configuration or code from elsewhere, nor changes the directory or repository, nor
deletes; one that takes a value is listed only when that value is inert (a count, a pattern, a
glob, a format name, a test-name expression). A few values and operands are checked rather than
trusted: sed scripts, make's ``VAR=value``, git's write forms of ``config``, merge strategies,
reporter and formatter names.

Pure functions with tables built at import; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

_Style = Literal["gnu", "letters", "words", "go", "tsc"]
_Check = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Line:
    """What a scan saw: option names (short ones letter by letter), operands, and whether ``--`` came."""

    options: frozenset[str]
    operands: tuple[str, ...]
    dashdash: bool


_OperandCheck = Callable[[_Line], Iterable[str]]


@dataclass(frozen=True, slots=True)
class _Spec:
    """The harmless options of one program or subcommand, and how its words are read.

    ``style``: ``gnu`` reads ``-abc`` as ``-a -b -c`` (where a letter takes a value, the rest of the
    word is that value: ``-n5``) and ``--name=value``; ``letters`` gives every letter of ``-abc`` its
    own meaning, only the last one may take the next word (yargs, mri, nopt: ``jest -tc x`` is
    ``-t -c x``); ``words`` takes each option word whole (find, unknown programs); ``go`` also treats
    ``--name`` as ``-name``; ``tsc`` does that and ignores case.
    """

    flags: frozenset[str] = frozenset()  # take no value (an attached ``=value`` is accepted)
    valued: frozenset[str] = frozenset()  # take an inert value, attached or as the next word
    attached: frozenset[str] = frozenset()  # short options whose optional value is attached only (-U5, -j4)
    skipped: frozenset[str] = frozenset()  # not harmless, but known to take a value: parsing stays in step
    checks: Mapping[str, _Check] = field(default_factory=dict)  # take a value that is covered when it passes
    subcommands: Mapping[str, _Spec] | None = None  # chosen by the first operand
    strict: bool = False  # an unknown subcommand is itself not covered
    operands: _OperandCheck | None = None  # the operands (and ``--``) no grant covers
    after_dashdash: _Spec | None = None  # how words after ``--`` are read (default: operands)
    style: _Style = "gnu"
    numeric: bool = False  # ``-5`` is a count (head, grep, git log)
    greedy: bool = False  # a value word is taken even when it starts with ``-`` (find -size -10k)
    trailing: bool = False  # words after the first operand belong to the program run (go run)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _key(style: _Style, name: str) -> str:
    if style in ("go", "tsc"):
        name = "-" + name.lstrip("-")
    return name.lower() if style == "tsc" else name


def _spec(
    flags: str = "",
    valued: str = "",
    *,
    attached: str = "",
    skipped: str = "",
    checks: Mapping[str, _Check] | None = None,
    subcommands: Mapping[str, _Spec] | None = None,
    strict: bool = False,
    operands: _OperandCheck | None = None,
    after_dashdash: _Spec | None = None,
    style: _Style = "gnu",
    numeric: bool = False,
    greedy: bool = False,
    trailing: bool = False,
) -> _Spec:
    """A spec from space-separated option lists; ``--help`` and ``--version`` are always harmless."""

    def keys(text: str) -> frozenset[str]:
        names = text.split()
        return frozenset(_key(style, name) for name in names) if style in ("go", "tsc") else frozenset(names)

    return _Spec(
        flags=keys(flags + " --help --version"),
        valued=keys(valued),
        attached=keys(attached),
        skipped=keys(skipped),
        checks={_key(style, name): check for name, check in (checks or {}).items()},
        subcommands=subcommands,
        strict=strict,
        operands=operands,
        after_dashdash=after_dashdash,
        style=style,
        numeric=numeric,
        greedy=greedy,
        trailing=trailing,
    )


def _with_kebab(text: str) -> str:
    """``--testNamePattern`` plus its ``--test-name-pattern`` spelling (yargs and cac accept both)."""
    kebab = (re.sub(r"(?<=[a-z])([A-Z])", lambda m: "-" + m[1].lower(), name) for name in text.split())
    return f"{text} {' '.join(kebab)}"


_UNKNOWN = _Spec(style="words")  # no harmless options: every option word is returned as written

# ---------------------------------------------------------------------------------------------
# sed scripts
# ---------------------------------------------------------------------------------------------

_SED_PLAIN = frozenset("pPdDnNgGhHxz=F")  # commands without arguments
_SED_LABEL_END = frozenset(";\n} \t")
_SED_TERMINATORS = frozenset(";\n}#")
_SED_S_FLAGS = frozenset("gpiImM0123456789 \t")


def harmless_sed_script(script: str) -> bool:
    """True when a sed script only prints, deletes, substitutes or moves text between buffers.

    An allowlist over GNU sed's grammar: addresses (line numbers, ``$``, ``first~step``,
    ``/re/``, ``\\cREc``, ranges with ``+N``/``~N``, ``!``), blocks, the commands
    ``p P d D n N g G h H x z = F l q Q b t T :`` and ``a i c`` text, ``y///`` and ``s///``
    with flags g, p, i, I, m, M and digits. Anything else is not harmless, among it the
    commands ``e`` (runs a command), ``r R w W`` (read or write files) and the ``s`` flags
    ``e`` and ``w``. Where sed might read the text otherwise (a delimiter inside a bracket
    expression) the script is not harmless either.
    """
    end, pos = len(script), 0
    while True:
        while pos < end and script[pos] in "; \t\n}":
            pos += 1
        if pos >= end:
            return True
        if script[pos] == "#":  # a comment ends at the newline, backslash or not
            newline = script.find("\n", pos)
            pos = end if newline < 0 else newline
            continue
        pos = _sed_address(script, pos, first=True)
        if 0 <= pos < end and script[pos] == ",":
            pos = _sed_address(script, _sed_blanks(script, pos + 1), first=False)
        if pos < 0:
            return False
        pos = _sed_blanks(script, pos)
        if pos < end and script[pos] == "!":
            pos = _sed_blanks(script, pos + 1)
        if pos >= end:
            return False
        command, pos = script[pos], pos + 1
        if command in "aic":
            pos = _sed_text_end(script, pos)
            continue
        if command == "s":
            pos = _sed_delimited(script, pos, regex=True, parts=2)
            while 0 <= pos < end and script[pos] in _SED_S_FLAGS:
                pos += 1
        elif command == "y":
            pos = _sed_delimited(script, pos, regex=False, parts=2)
        elif command in "qQl":
            pos = _sed_blanks(script, pos)
            while pos < end and script[pos].isdigit():
                pos += 1
        elif command in "btT:":
            pos = _sed_blanks(script, pos)
            while pos < end and script[pos] not in _SED_LABEL_END:
                pos += 1
        elif command != "{" and command not in _SED_PLAIN:
            return False
        if pos < 0:
            return False
        pos = _sed_blanks(script, pos)
        if command != "{" and pos < end and script[pos] not in _SED_TERMINATORS:
            return False


def _sed_blanks(script: str, pos: int) -> int:
    while pos < len(script) and script[pos] in " \t":
        pos += 1
    return pos


def _sed_text_end(script: str, pos: int) -> int:
    """The end of ``a``/``i``/``c`` text: the first newline not escaped."""
    while pos < len(script) and script[pos] != "\n":
        pos += 2 if script[pos] == "\\" else 1
    return pos


def _sed_digits(script: str, pos: int) -> int:
    start = pos
    while pos < len(script) and script[pos].isdigit():
        pos += 1
    return pos if pos > start else -1


def _sed_address(script: str, pos: int, *, first: bool) -> int:
    """The position after an address (``pos`` itself when there is none), or -1 when malformed."""
    if pos >= len(script):
        return -1 if not first else pos
    char = script[pos]
    if char.isdigit() or (not first and char in "+~"):
        pos = _sed_digits(script, pos if char.isdigit() else pos + 1)
        if first and 0 <= pos < len(script) and script[pos] == "~":
            pos = _sed_digits(script, pos + 1)
        return pos
    if char == "$":
        return pos + 1
    if char == "/" or char == "\\":
        delimiter_at = pos if char == "/" else pos + 1
        if delimiter_at >= len(script) or script[delimiter_at] in "\n\\":
            return -1
        pos = _sed_delimited(script, delimiter_at, regex=True, parts=1)
        while 0 <= pos < len(script) and script[pos] in "IM":
            pos += 1
        return pos
    return pos if first else -1


def _sed_delimited(script: str, pos: int, *, regex: bool, parts: int) -> int:
    """The position after ``parts`` parts delimited by the character at ``pos`` (the first a regex), or -1."""
    if pos >= len(script) or script[pos] in "\n\\":
        return -1
    delimiter, pos = script[pos], pos + 1
    for part in range(parts):
        in_regex = regex and part == 0
        while True:
            if pos >= len(script) or script[pos] == "\n":
                return -1
            char = script[pos]
            if char == "\\":
                pos += 2
            elif char == delimiter:
                pos += 1
                break
            elif char == "[" and in_regex:
                pos = _sed_bracket(script, pos, delimiter)
                if pos < 0:
                    return -1
            else:
                pos += 1
    return pos


def _sed_bracket(script: str, pos: int, delimiter: str) -> int:
    """The position after a bracket expression; -1 when it holds the delimiter, a newline or ``\\]``."""
    if delimiter == "]":
        return -1
    pos += 1
    if pos < len(script) and script[pos] == "^":
        pos += 1
    if pos < len(script) and script[pos] == "]":
        pos += 1
    while pos < len(script):
        char = script[pos]
        if char == "]":
            return pos + 1
        if char in (delimiter, "\n") or script.startswith("\\]", pos):
            return -1
        if char == "[" and pos + 1 < len(script) and script[pos + 1] in ":.=":
            close = script.find(script[pos + 1] + "]", pos + 2)
            if close < 0 or delimiter in script[pos:close] or "\n" in script[pos:close]:
                return -1
            pos = close + 2
        else:
            pos += 1
    return -1


# ---------------------------------------------------------------------------------------------
# Checks of values and operands
# ---------------------------------------------------------------------------------------------


def _sed_operands(line: _Line) -> Iterable[str]:
    """Without ``-e``/``-f`` the first operand is the script."""
    if line.options & {"-e", "--expression", "-f", "--file"} or not line.operands:
        return ()
    script = line.operands[0]
    return () if harmless_sed_script(script) else (script,)


def _make_assignments(line: _Line) -> Iterable[str]:
    """``VAR=value`` on make's command line can set SHELL, .SHELLFLAGS and other program-running variables."""
    return [word for word in line.operands if "=" in word]


def _uniq_output(line: _Line) -> Iterable[str]:
    """uniq's second operand is a file it writes."""
    return line.operands[1:2]


def _date_sets_clock(line: _Line) -> Iterable[str]:
    """An operand other than ``+FORMAT`` sets the clock (unless BSD's ``-j`` says not to)."""
    return () if "-j" in line.options else [word for word in line.operands if not word.startswith("+")]


_GIT_CONFIG_READS = _names("--get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool --list -l")


def _git_config_writes(line: _Line) -> Iterable[str]:
    """Only reading forms: ``--get``…/``--list``, ``get``/``list``, or a single ``section.key``."""
    if line.options & _GIT_CONFIG_READS or not line.operands:
        return ()
    first = line.operands[0]
    if first in ("get", "list") or (len(line.operands) == 1 and "." in first):
        return ()
    return (first,)


def _git_checkout_paths(line: _Line) -> Iterable[str]:
    """Checking out paths discards their changes: ``--`` and operands that can only be paths."""
    paths = [
        word
        for word in line.operands
        if word in (".", "..") or word.startswith(("./", "../", "/", ":")) or any(c in word for c in "*?[")
    ]
    return ["--", *paths] if line.dashdash else paths


def _git_restore_worktree(line: _Line) -> Iterable[str]:
    """Without ``--staged`` restore overwrites the working tree."""
    return () if line.options & {"-S", "--staged"} else line.operands[:1]


def _git_rm_recursive(line: _Line) -> Iterable[str]:
    """``git rm -r`` deletes directories unless it only touches the index (``--cached``)."""
    return ("-r",) if "-r" in line.options and "--cached" not in line.options else ()


def _git_push_refspecs(line: _Line) -> Iterable[str]:
    """``+ref`` force-pushes, ``:ref`` deletes the remote ref."""
    return [word for word in line.operands if word.startswith(("+", ":"))]


_MERGE_STRATEGIES = _names("ort recursive resolve octopus ours subtree")  # others run git-merge-NAME
_WARNING_ACTIONS = _names("default error ignore always all module once")
_COVERAGE_REPORTS = _names("term term-missing html xml json lcov annotate markdown markdown-append")
_VITEST_REPORTERS = _names(
    "default basic verbose dot json tap tap-flat junit hanging-process github-actions blob html tree"
)
_ESLINT_FORMATTERS = _names(
    "stylish json json-with-metadata html compact unix checkstyle junit tap visualstudio jslint-xml"
)


def _builtin_strategy(value: str) -> bool:
    return value in _MERGE_STRATEGIES


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


def _local_archive(value: str) -> bool:
    """``host:file`` makes tar run a remote shell."""
    return ":" not in value


# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

_LS = _spec(
    "-a --all -A --almost-all --author -b --escape -B --ignore-backups -c -C --color -d --directory -D --dired "
    "-f -F --classify --file-type --full-time -g --group-directories-first -G --no-group -h --human-readable "
    "--si -H --dereference-command-line --dereference-command-line-symlink-to-dir --hyperlink -i --inode -k "
    "--kibibytes -l -L --dereference -m -n --numeric-uid-gid -N --literal -o -p -q --hide-control-chars "
    "--show-control-chars -Q --quote-name -r --reverse -R --recursive -s --size -S -t -u -U -v -x -X -Z "
    "--context -1 --zero -@ -e -O -P -T -W",
    "--block-size --format --hide --indicator-style -I --ignore --quoting-style --sort --time --time-style "
    "--tabsize -w --width",
)
_CAT = _spec(
    "-A --show-all -b --number-nonblank -e -E --show-ends -n --number -s --squeeze-blank -t -T --show-tabs -u "
    "-v --show-nonprinting"
)
_HEAD_TAIL = _spec(
    "-q --quiet --silent -v --verbose -z --zero-terminated -f --follow -F --retry",
    "-c --bytes -n --lines --max-unchanged-stats --pid -s --sleep-interval",
    numeric=True,
)
_WC = _spec("-c --bytes -m --chars -l --lines -L --max-line-length -w --words", "--files0-from --total")
_SORT = _spec(  # not -o/--output (writes), -T (temporary files), --compress-program (runs one)
    "-b --ignore-leading-blanks -d --dictionary-order -f --ignore-case -g --general-numeric-sort -i "
    "--ignore-nonprinting -M --month-sort -h --human-numeric-sort -n --numeric-sort -R --random-sort -r "
    "--reverse -V --version-sort -c --check -C -m --merge -s --stable -u --unique -z --zero-terminated --debug",
    "--sort --random-source -k --key -t --field-separator --batch-size -S --buffer-size --parallel --files0-from",
)
_UNIQ = _spec(
    "-c --count -d --repeated -D --all-repeated --group -i --ignore-case -u --unique -z --zero-terminated",
    "-f --skip-fields -s --skip-chars -w --check-chars",
    operands=_uniq_output,
)
_CUT = _spec(
    "-n --complement -s --only-delimited -z --zero-terminated",
    "-b --bytes -c --characters -d --delimiter -f --fields --output-delimiter",
)
_TR = _spec("-c -C --complement -d --delete -s --squeeze-repeats -t --truncate-set1")
_DIFF = _spec(  # not -l/--paginate (pipes through pr)
    "-q --brief -s --report-identical-files -c --context -u --unified -e --ed -n --rcs -y --side-by-side "
    "--left-column --suppress-common-lines -p --show-c-function -t --expand-tabs -T --initial-tab "
    "--suppress-blank-empty -r --recursive --no-dereference -N --new-file --unidirectional-new-file "
    "--ignore-file-name-case --no-ignore-file-name-case -i --ignore-case -E --ignore-tab-expansion -Z "
    "--ignore-trailing-space -b --ignore-space-change -w --ignore-all-space -B --ignore-blank-lines -a --text "
    "--strip-trailing-cr -d --minimal --speed-large-files --color --normal",
    "-C -U -W --width -F --show-function-line --label --tabsize -x --exclude -X --exclude-from -S "
    "--starting-file --from-file --to-file -I --ignore-matching-lines -D --ifdef --horizon-lines --palette "
    "--old-group-format --new-group-format --unchanged-group-format --changed-group-format --line-format "
    "--old-line-format --new-line-format --unchanged-line-format",
)
_CMP = _spec("-b --print-bytes -l --verbose -s --quiet --silent", "-i --ignore-initial -n --bytes")
_GREP = _spec(
    "-E --extended-regexp -F --fixed-strings -G --basic-regexp -P --perl-regexp -i -y --ignore-case "
    "--no-ignore-case -v --invert-match -w --word-regexp -x --line-regexp -c --count --color --colour -L "
    "--files-without-match -l --files-with-matches -o --only-matching -q --quiet --silent -s --no-messages -b "
    "--byte-offset -H --with-filename -h --no-filename -n --line-number --line-buffered -T --initial-tab -Z "
    "--null -a --text -I -r --recursive -R --dereference-recursive -U --binary -z --null-data",
    "-e --regexp -f --file -m --max-count --label -A --after-context -B --before-context -C --context "
    "--binary-files -D --devices -d --directories --exclude --include --exclude-dir --exclude-from",
    numeric=True,
)
_RG = _spec(  # not --pre/--pre-glob (run a program per file), -z/--search-zip (runs decompressors), --hostname-bin
    "-i --ignore-case -s --case-sensitive -S --smart-case -F --fixed-strings -w --word-regexp -x --line-regexp "
    "-v --invert-match -c --count --count-matches -l --files-with-matches --files-without-match --files -o "
    "--only-matching -n --line-number -N --no-line-number --column --no-column -H --with-filename -I "
    "--no-filename --heading --no-heading -p --pretty --vimgrep --json --no-json -0 --null --null-data -U "
    "--multiline --multiline-dotall -P --pcre2 --no-pcre2 --type-list -L --follow --hidden -. --no-hidden "
    "--no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-exclude --no-ignore-files --no-ignore-global "
    "--no-ignore-parent --ignore-file-case-insensitive --no-config -u --unrestricted -a --text --binary "
    "--passthru --trim --stats --quiet -q --debug --trace --no-messages --no-unicode --crlf "
    "--glob-case-insensitive --line-buffered --block-buffered -b --byte-offset --one-file-system --no-mmap "
    "--mmap --auto-hybrid-regex --include-zero --no-require-git --max-columns-preview -E",
    "-e --regexp -f --file -g --glob --iglob -t --type -T --type-not --type-add --type-clear -A --after-context "
    "-B --before-context -C --context -m --max-count -d --max-depth --maxdepth --max-filesize -M --max-columns "
    "-j --threads --ignore-file -r --replace --sort --sortr --color --colors --encoding --engine "
    "--context-separator --field-match-separator --field-context-separator --path-separator "
    "--dfa-size-limit --regex-size-limit --generate",
)
_FIND = _spec(  # not -exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls
    "-H -L -P -E -X -d -s -x -empty -prune -print -print0 -ls -not -a -o -and -or -readable -writable "
    "-executable -xdev -mount -depth -follow -nouser -nogroup -true -false -quit -daystart -noleaf "
    "-ignore_readdir_race -noignore_readdir_race -nowarn -warn -help -version",
    "-name -iname -path -ipath -wholename -iwholename -lname -ilname -type -xtype -maxdepth -mindepth -mtime "
    "-mmin -atime -amin -ctime -cmin -used -newer -anewer -cnewer -size -regex -iregex -regextype -perm -user "
    "-group -uid -gid -links -inum -samefile -fstype -context -printf "
    + " ".join(f"-newer{x}{y}" for x in "acmB" for y in "acmBt"),
    style="words",
    greedy=True,
)
_FIND_RUNNERS = _names("-exec -execdir -ok -okdir")
_TREE = _spec(  # not -o (writes its output to a file)
    "-a -d -l -f -x -q -N -Q -p -u -g -s -h --si --du -D -F --inodes --device -v -t -c -U -r --dirsfirst "
    "--filesfirst -n -C -A -S -J -X -i --noreport --gitignore --ignore-case --matchdirs --prune",
    "-L -P -I --filelimit --charset --timefmt --sort -H -T",
    style="letters",  # tree gives -L in -Lo the next word, then reads o as an option
)
_DU = _spec(
    "-a --all --apparent-size -b --bytes -c --total -D --dereference-args -H -h --human-readable --inodes -k "
    "-L --dereference -l --count-links -m -P --no-dereference -S --separate-dirs --si -s --summarize -x "
    "--one-file-system -0 --null --time",
    "-B --block-size -d --max-depth -t --threshold --time-style --exclude -X --exclude-from --files0-from",
)
_DF = _spec(
    "-a --all -h --human-readable -H --si -i --inodes -k -l --local --output -P --portability --sync --no-sync "
    "--total -T --print-type",
    "-B --block-size -t --type -x --exclude-type",
)
_STAT = _spec("-L --dereference -f --file-system -t --terse -x -s -l -r -n -q", "-c --format --printf --cached")
_FILE = _spec(  # not -z (decompresses with external programs), -C (writes), -m (another magic file)
    "-b --brief -i --mime --mime-type --mime-encoding -L --dereference -h --no-dereference -s --special-files "
    "-k --keep-going -r --raw -0 --print0 -N --no-pad -n --no-buffer -E --extension --apple -I",
    "-e --exclude -P --parameter -F --separator -f --files-from",
)
# Everyday file commands: their operands name what they act on (free, as for every program); of
# their options only those that change neither where they write nor what runs are listed.
_MKDIR = _spec("-p --parents -v --verbose", "-m --mode")
_TOUCH = _spec("-a -c --no-create -m -h --no-dereference", "-d --date -t")
_COPY = _spec("-a --archive -r -R --recursive -p -v --verbose -f --force -i --interactive -n --no-clobber -u "
              "--update -L --dereference -P --no-dereference -T --no-target-directory -l --link -s --symbolic-link "
              "--preserve --parents")
_MOVE = _spec("-f --force -i --interactive -n --no-clobber -u --update -v --verbose -T --no-target-directory")
_RM = _spec("-f --force -i -I -d --dir -v --verbose")  # not -r: a recursive delete is always asked anyway
_LN = _spec("-s --symbolic -f --force -n --no-dereference -v --verbose -r --relative -T --no-target-directory -i")
_CD = _spec("-L -P -e -@")
_WHICH = _spec("-a --all -s --skip-alias --skip-functions --skip-dot --skip-tilde --show-dot --show-tilde")
_PWD = _spec("-L -P")
_BASENAME = _spec("-a --multiple -z --zero", "-s --suffix")
_DIRNAME = _spec("-z --zero")
_REALPATH = _spec(
    "-e --canonicalize-existing -m --canonicalize-missing -L --logical -P --physical -q --quiet -s --strip "
    "--no-symlinks -z --zero",
    "--relative-to --relative-base",
)
_READLINK = _spec(
    "-f --canonicalize -e --canonicalize-existing -m --canonicalize-missing -n --no-newline -q --quiet -s "
    "--silent -v --verbose -z --zero"
)
_DATE = _spec(  # not -s/--set; an operand other than +FORMAT sets the clock too
    "-u --utc --universal -R --rfc-email --debug -j",
    "-d --date -f --file -r --reference --rfc-3339 -v",
    attached="-I",
    skipped="-s --set",
    operands=_date_sets_clock,
)
_JQ = _spec(  # jq programs cannot run commands or write files
    "-r --raw-output --raw-output0 -j --join-output -a --ascii-output -c --compact-output -n --null-input -e "
    "--exit-status -s --slurp -R --raw-input -C --color-output -M --monochrome-output -S --sort-keys --tab "
    "--args --jsonargs --seq --stream --stream-errors --unbuffered -h -V --build-configuration",
    "--indent --arg --argjson --slurpfile --rawfile -f --from-file -L",
)
_SED = _spec(  # not -i/--in-place (nor BSD -I), -f/--file (a script from elsewhere)
    "-n --quiet --silent -E -r --regexp-extended -s --separate -u --unbuffered -z --null-data --posix --debug "
    "--sandbox -b --binary",
    "-l --line-length",
    skipped="-f --file",
    checks={"-e": harmless_sed_script, "--expression": harmless_sed_script},
    operands=_sed_operands,
)
_TAR = _spec(  # not -C (another directory), -I/--use-compress-program, --to-command, --checkpoint-action …
    "-t --list -x --extract --get -c --create -d --diff --compare -v --verbose -z --gzip --gunzip --ungzip -j "
    "--bzip2 -J --xz --zstd --lzma --lzip --lzop -a --auto-compress -O --to-stdout -k --keep-old-files "
    "--skip-old-files --keep-newer-files -m --touch -p --preserve-permissions --same-permissions "
    "--no-same-owner --no-same-permissions --numeric-owner -h --dereference --exclude-vcs --exclude-vcs-ignores "
    "--wildcards --no-wildcards --anchored --no-anchored --totals -W --verify --one-file-system --no-recursion "
    "--recursion --null --force-local --show-transformed-names --full-time --utc -w --interactive",
    "--exclude -X --exclude-from -T --files-from --strip-components --transform --xform --owner --group --mode "
    "--mtime --sort --format -H --blocking-factor -b --record-size",
    skipped="-C --directory -I --use-compress-program -F --info-script --new-volume-script -g "
    "--listed-incremental -K --starting-file -N --newer --after-date -L --tape-length -V --label",
    checks={"-f": _local_archive, "--file": _local_archive},
)
_MAKE = _spec(  # not -f/-C/-I/-E/--eval/-W/-o, nor any VAR=value operand
    "-k --keep-going -s --silent --quiet --no-silent -n --just-print --dry-run --recon -B --always-make -q "
    "--question -i --ignore-errors -r --no-builtin-rules -R --no-builtin-variables -p --print-data-base -w "
    "--print-directory --no-print-directory -L --check-symlink-times -S --no-keep-going --stop --jobs "
    "--load-average --max-load --output-sync -d --debug --trace --warn-undefined-variables --shuffle -b -m -v -h",
    attached="-j -l -O",
    operands=_make_assignments,
)
_PYTEST = _spec(  # not --basetemp (emptied!), --rootdir, -c, --confcutdir, -o, --pdb/--trace, --junitxml …
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
_JEST = _spec(  # not --config, --rootDir, --setupFiles…, --testEnvironment, --reporters, --outputFile …
    _with_kebab(
        "--watch --watchAll -i --runInBand -u --updateSnapshot --ci --no-ci -b --bail --silent --verbose "
        "--coverage --collectCoverage -o --onlyChanged --lastCommit --findRelatedTests --listTests "
        "--passWithNoTests --detectOpenHandles --detectLeaks --forceExit --no-cache --colors --noStackTrace "
        "--json --randomize --showSeed --logHeapUsage --useStderr -e --expand --errorOnDeprecated "
        "--testLocationInResults --no-watchman --debug --showConfig --all --clearMocks --resetMocks "
        "--restoreMocks"
    ),
    _with_kebab(
        "-t --testNamePattern -w --maxWorkers --changedSince --testPathPattern --testPathIgnorePatterns "
        "--testRegex --testMatch --selectProjects --shard --seed --testTimeout --openHandlesTimeout "
        "--collectCoverageFrom"
    ),
    style="letters",
)
_VITEST = _spec(  # not --config/-c, --root/-r, --dir, --environment, --pool, --outputFile, --inspect …
    _with_kebab(
        "--run --watch -w --coverage --silent -u --update --passWithNoTests --changed --allowOnly --globals "
        "--hideSkippedTests --logHeapUsage --no-color --color --dom --no-file-parallelism --clearScreen "
        "--no-isolate --isolate"
    ),
    _with_kebab("-t --testNamePattern --bail --project --shard --retry --testTimeout --maxWorkers --minWorkers"),
    checks={"--reporter": _VITEST_REPORTERS.__contains__},
    style="letters",
)
_MYPY = _spec(  # not --config-file (plugins), --cache-dir, --python-executable (runs it), --*-report, --install-types
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
_RUFF_CHECK = _spec(  # not --config, --cache-dir, -o/--output-file
    "--fix --no-fix --unsafe-fixes --no-unsafe-fixes --show-fixes --no-show-fixes --diff -w --watch --fix-only "
    "--no-fix-only --ignore-noqa --statistics --add-noqa --show-files --show-settings -e --exit-zero "
    "--exit-non-zero-on-fix --no-cache -n --isolated --preview --no-preview --force-exclude --no-force-exclude "
    "--respect-gitignore --no-respect-gitignore -q --quiet -s --silent -v --verbose",
    "--select --extend-select --ignore --extend-ignore --per-file-ignores --extend-per-file-ignores --fixable "
    "--extend-fixable --unfixable --exclude --extend-exclude --target-version --line-length --output-format "
    "--stdin-filename",
)
_RUFF_FORMAT = _spec(
    "--check --diff --no-cache -n --isolated --preview --no-preview --force-exclude --no-force-exclude "
    "--respect-gitignore --no-respect-gitignore --exit-non-zero-on-format -q --quiet -s --silent -v --verbose",
    "--exclude --extend-exclude --line-length --target-version --stdin-filename --range",
)
_RUFF = _spec(
    "-q --quiet -s --silent -v --verbose --isolated -h -V",
    skipped="--config",
    subcommands={
        "check": _RUFF_CHECK,
        "format": _RUFF_FORMAT,
        "rule": _spec("--all", "--output-format"),
        "linter": _spec("", "--output-format"),
        "version": _spec("", "--output-format"),
    },
)
_ESLINT = _spec(  # not -c/--config, --rulesdir, --plugin, --parser, -o/--output-file, --cache-location, --init
    "--fix --fix-dry-run --quiet --cache --no-eslintrc --no-config-lookup --no-ignore --stdin --no-inline-config "
    "--report-unused-disable-directives --color --no-color --debug --env-info --no-error-on-unmatched-pattern "
    "--exit-on-fatal-error --no-warn-ignored --pass-on-no-patterns --stats -h -v",
    "--ext --max-warnings --fix-type --env --global --rule --ignore-pattern --ignore-path --stdin-filename "
    "--report-unused-disable-directives-severity --cache-strategy --concurrency --flag --print-config",
    checks={"-f": _ESLINT_FORMATTERS.__contains__, "--format": _ESLINT_FORMATTERS.__contains__},
    style="letters",
)
_PRETTIER = _spec(  # not --plugin, --config, --parser (may name a module), --cache-location
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
_TSC = _spec(  # not --outDir, --outFile, --declarationDir, --tsBuildInfoFile, --generateTrace, --init, --clean
    "--noEmit --pretty --watch -w --build -b --strict --noEmitOnError --incremental --listFiles --showConfig "
    "--all -v -h --skipLibCheck --noImplicitAny --noUnusedLocals --noUnusedParameters --esModuleInterop "
    "--allowJs --checkJs --resolveJsonModule --isolatedModules --verbatimModuleSyntax --extendedDiagnostics "
    "--diagnostics --traceResolution --explainFiles --force --verbose --dry --preserveWatchOutput "
    "--noErrorTruncation --erasableSyntaxOnly --declaration --emitDeclarationOnly --noFallthroughCasesInSwitch "
    "--noImplicitReturns --noUncheckedIndexedAccess --exactOptionalPropertyTypes --strictNullChecks",
    "-p --project --target --module --lib --jsx --moduleResolution --locale --types",
    style="tsc",
)


def _cargo(flags: str = "", valued: str = "", after_dashdash: _Spec | None = None) -> _Spec:
    return _spec(
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
_CARGO = _spec(
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
            after_dashdash=_spec("", "-D -W -A -F --deny --warn --allow --forbid --cap-lints"),
        ),
        "fmt": _spec(
            "--all --check -q --quiet -v --verbose",
            "-p --package --message-format",
            after_dashdash=_spec(
                "--check -l --files-with-diff -v --verbose -q --quiet", "--edition --style-edition --emit --color"
            ),
        ),
        "tree": _spec(
            "--workspace --no-dedupe -d --duplicates --all-features --no-default-features -q --quiet -v --verbose "
            "--locked --frozen --offline",
            "-p --package --exclude -i --invert -e --edges --depth --prefix --charset -f --format --target -F "
            "--features --color",
        ),
        "metadata": _spec(
            "--no-deps --all-features --no-default-features -q --quiet -v --verbose --locked --frozen --offline",
            "--format-version -F --features --filter-platform --color",
        ),
    },
)

_GO_BUILD_FLAGS = "-v -race -msan -asan -cover -trimpath -x -n -a -work -json -buildvcs"
_GO_BUILD_VALUED = "-covermode -coverpkg -tags -p -mod"


def _go(flags: str = "", valued: str = "", *, trailing: bool = False) -> _Spec:
    """go build flags; never -o, -exec, -toolexec, -modfile, -overlay, -C, -ldflags/-gcflags/… (tool flags)."""
    return _spec(f"{_GO_BUILD_FLAGS} {flags}", f"{_GO_BUILD_VALUED} {valued}", style="go", trailing=trailing)


_GO = _spec(
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
        "fmt": _spec("-n -x", "-mod", style="go"),
        "list": _go("-m -u -versions -deps -test -e -find -export -compiled -retracted", "-f"),
        "version": _spec("-m -v -json", style="go"),
        "mod": _spec(
            style="go",
            subcommands={
                "tidy": _spec("-v -e -x -diff", "-go -compat", style="go"),
                "download": _spec("-x -json", style="go"),
                "graph": _spec("-x", "-go", style="go"),
                "verify": _spec(style="go"),
                "why": _spec("-m -vendor", style="go"),
            },
        ),
    },
)

_NPM_RUN = _spec(  # words after -- go to the project's own script
    "--silent -s --if-present --ignore-scripts --workspaces --include-workspace-root --foreground-scripts "
    "--color --no-color",
    "-w --workspace --loglevel",
    style="letters",
)
_NPM = _spec(  # not --prefix/-C, --userconfig, --script-shell, --node-options
    "--silent -s --if-present --ignore-scripts --workspaces --include-workspace-root --color --no-color",
    "-w --workspace --loglevel",
    skipped="--prefix -C --userconfig --globalconfig --script-shell --node-options --cache",
    subcommands=dict.fromkeys(
        ("run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart"), _NPM_RUN
    ),
    style="letters",
)
_PNPM_RUN = _spec(
    "--silent -s --if-present -r --recursive --parallel --stream --aggregate-output --no-bail --bail --sort "
    "--no-sort --reverse -w --workspace-root --color --no-color --fail-if-no-match",
    "--filter --loglevel --workspace-concurrency --resume-from",
    style="letters",
)
_PNPM = _spec(
    "--silent -s -r --recursive -w --workspace-root --color --no-color",
    "--filter --loglevel",
    skipped="-C --dir --config --store-dir",
    subcommands=dict.fromkeys(("run", "test", "t", "tst", "start"), _PNPM_RUN),
    style="letters",
)
_YARN_RUN = _spec("--silent -T --top-level -B --binaries-only", style="letters")  # not --inspect, --require
_YARN = _spec(
    "--silent", skipped="--cwd", subcommands=dict.fromkeys(("run", "test", "start"), _YARN_RUN), style="letters"
)
_BUN = _spec(
    "--silent",
    skipped="--cwd -c --config -r --preload --env-file",
    subcommands={
        "run": _spec(  # not --preload/-r, --config, --cwd, --env-file, --shell, -e/--eval, --inspect
            "--silent --if-present --bun --watch --hot --no-clear-screen --smol",
            "--filter --elide-lines",
            style="letters",
        ),
        "test": _spec(  # not --preload, --coverage-dir, --reporter-outfile
            "--watch --only --todo -u --update-snapshots --coverage --bail --pass-with-no-tests --randomize "
            "--concurrent",
            "-t --test-name-pattern --timeout --rerun-each --seed --max-concurrency",
            style="letters",
        ),
    },
    style="letters",
)

# git ----------------------------------------------------------------------------------------

_GIT_DIFF_FLAGS = (  # not --output, --ext-diff, --textconv
    "-p -u --patch -s --no-patch --raw --patch-with-raw --stat --numstat --shortstat --dirstat "
    "--dirstat-by-file --summary --name-only --name-status --compact-summary --cumulative --patch-with-stat -z "
    "--full-index --binary --abbrev --no-abbrev -R --relative --no-relative -a --text --ignore-space-at-eol -b "
    "--ignore-space-change -w --ignore-all-space --ignore-blank-lines --ignore-cr-at-eol --minimal --patience "
    "--histogram --color --no-color --color-words --color-moved --no-color-moved --no-color-moved-ws "
    "--word-diff --check --find-renames --find-copies --find-copies-harder -D --irreversible-delete "
    "--break-rewrites --no-renames --rename-empty --no-rename-empty --pickaxe-all --pickaxe-regex "
    "--ignore-submodules --submodule --no-prefix --default-prefix --ita-invisible-in-index "
    "--ita-visible-in-index -W --function-context --exit-code --quiet --no-ext-diff --no-textconv --unified "
    "--indent-heuristic --no-indent-heuristic"
)
_GIT_DIFF_VALUED = (
    "--diff-filter -S -G -O --skip-to --rotate-to --src-prefix --dst-prefix --line-prefix --inter-hunk-context "
    "-l --diff-algorithm --anchored --word-diff-regex --ws-error-highlight --color-moved-ws --stat-width "
    "--stat-name-width --stat-graph-width --stat-count --find-object -I --ignore-matching-lines"
)
_GIT_DIFF_ATTACHED = "-U -M -C -B"
_GIT_LOG_FLAGS = (  # not --show-signature (runs gpg)
    "--all-match --invert-grep -i --regexp-ignore-case --basic-regexp -E --extended-regexp -F --fixed-strings "
    "-P --perl-regexp --merges --no-merges --min-parents --max-parents --no-min-parents --no-max-parents "
    "--first-parent --exclude-first-parent-only --not --all --branches --tags --remotes --glob --reflog "
    "--single-worktree --ignore-missing --bisect --stdin --cherry-mark --cherry-pick --left-only --right-only "
    "--cherry --walk-reflogs -g --merge --boundary --simplify-by-decoration --show-pulls --full-history --dense "
    "--sparse --simplify-merges --ancestry-path --date-order --author-date-order --topo-order --reverse "
    "--no-walk --do-walk --pretty --format --abbrev-commit --no-abbrev-commit --oneline --encoding "
    "--expand-tabs --no-expand-tabs --notes --no-notes --show-notes --relative-date --date --parents --children "
    "--left-right --graph --no-graph --show-linear-break --decorate --no-decorate --clear-decorations --source "
    "--use-mailmap --mailmap --no-mailmap --no-use-mailmap --full-diff --log-size --follow --no-follow -m --cc "
    "--dd -c -t -r --combined-all-paths --remerge-diff --no-diff-merges --count"
)
_GIT_LOG_VALUED = (
    "-n --max-count --skip --since --after --until --before --max-age --min-age --author --committer --grep "
    "--grep-reflog --exclude --decorate-refs --decorate-refs-exclude -L --diff-merges"
)


def _git(
    flags: str = "",
    valued: str = "",
    *,
    attached: str = "",
    checks: Mapping[str, _Check] | None = None,
    operands: _OperandCheck | None = None,
    numeric: bool = False,
) -> _Spec:
    return _spec(flags, valued, attached=attached, checks=checks, operands=operands, numeric=numeric)


def _git_group(flags: str = "", **actions: _Spec) -> _Spec:
    """A git command whose first operand names an action; only the listed actions are covered."""
    return _spec(flags, subcommands={name.replace("_", "-"): spec for name, spec in actions.items()}, strict=True)


_GIT_DIFF = _git(
    f"{_GIT_DIFF_FLAGS} --cached --staged --merge-base --no-index -0 -1 -2 -3 --base --ours --theirs",
    _GIT_DIFF_VALUED,
    attached=_GIT_DIFF_ATTACHED,
)
_GIT_LOG = _git(
    f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}",
    f"{_GIT_DIFF_VALUED} {_GIT_LOG_VALUED}",
    attached=_GIT_DIFF_ATTACHED,
    numeric=True,
)
_STRATEGY = {"-s": _builtin_strategy, "--strategy": _builtin_strategy}
_GIT_REBASE_MODES = _names("true false yes no on off 1 0 merges m")
_GIT_FETCH = (  # not --upload-pack, -f/--force, -u/--update-head-ok, -P/--prune-tags (deletes local tags)
    "-q --quiet -v --verbose --tags --no-tags --prune -p --all --multiple --dry-run --unshallow "
    "--progress --no-progress --atomic --set-upstream --recurse-submodules --no-recurse-submodules -4 -6 "
    "--ipv4 --ipv6 --no-write-fetch-head --write-fetch-head --auto-gc --no-auto-gc --auto-maintenance "
    "--no-auto-maintenance --porcelain --show-forced-updates --no-show-forced-updates -k --keep --refetch"
)
_GIT_FETCH_VALUED = "--depth --shallow-since --shallow-exclude --deepen -j --jobs --filter --negotiation-tip"
_GIT_MERGE = (  # not -S/--gpg-sign, --verify-signatures (run gpg)
    "--no-ff --ff --ff-only --squash --no-squash --commit --no-commit --no-edit --stat -n --no-stat --summary "
    "--no-summary --log --no-log -q --quiet -v --verbose --progress --no-progress --allow-unrelated-histories "
    "--autostash --no-autostash --signoff --no-signoff --no-verify --verify --rerere-autoupdate "
    "--no-rerere-autoupdate --no-gpg-sign"
)
_GIT_SUBCOMMANDS: dict[str, _Spec] = {
    "status": _git(
        "-s --short -b --branch --show-stash --porcelain --long -v --verbose --untracked-files --ignore-submodules "
        "--ignored -z --column --no-column --ahead-behind --no-ahead-behind --renames --no-renames "
        "--find-renames",
        attached="-u",
    ),
    "diff": _GIT_DIFF,
    "log": _GIT_LOG,
    "show": _GIT_LOG,
    "whatchanged": _GIT_LOG,
    "rev-list": _git(
        f"{_GIT_LOG_FLAGS} --objects --objects-edge --use-bitmap-index --timestamp --header --disk-usage "
        "--missing --quiet",
        _GIT_LOG_VALUED,
        numeric=True,
    ),
    "shortlog": _git(  # its -n and --committer take no value (flags win over log's valued ones)
        f"{_GIT_LOG_FLAGS} -n --numbered -s --summary -e --email --committer",
        f"{_GIT_LOG_VALUED} --group",
        attached="-w",
        numeric=True,
    ),
    "branch": _git(  # listing and plain creation; not -d -D -m -M -c -C -f, nor --edit-description
        "-a --all -r --remotes -v --verbose -l --list --show-current --column --no-column --color --no-color "
        "-i --ignore-case --abbrev --no-abbrev -q --quiet --omit-empty -t --track --no-track --unset-upstream "
        "--create-reflog",
        "--merged --no-merged --contains --no-contains --points-at --sort --format -u --set-upstream-to",
    ),
    "blame": _git(  # -f here is --show-name
        "-b --root --show-stats -l -t --reverse --first-parent -p --porcelain --line-porcelain --incremental "
        "--encoding --progress --no-progress --color-lines --color-by-age -e --show-email -w -s -n --show-number "
        "-f --show-name -c --score-debug --abbrev",
        "-L -S --contents --date --ignore-rev --ignore-revs-file",
        attached="-M -C",
    ),
    "ls-files": _git(
        "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u --unmerged -k --killed -z -t "
        "-v -f --directory --no-empty-directory --eol --full-name --recurse-submodules --error-unmatch "
        "--exclude-standard --exclude-per-directory --abbrev --debug --deduplicate --sparse",
        "-x --exclude -X --exclude-from --format --with-tree",
    ),
    "ls-tree": _git(
        "-r -t -d -l --long -z --name-only --name-status --object-only --full-name --full-tree --abbrev", "--format"
    ),
    "cat-file": _git(  # not --textconv, --filters (run configured programs)
        "-p -t -s -e --batch --batch-check --batch-all-objects --buffer --follow-symlinks --unordered -Z "
        "--allow-unknown-type --mailmap --use-mailmap --no-mailmap"
    ),
    "rev-parse": _git(
        "--abbrev-ref --short --verify -q --quiet --show-toplevel --show-prefix --show-cdup --git-dir "
        "--git-common-dir --absolute-git-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository "
        "--is-shallow-repository --symbolic --symbolic-full-name --all --branches --tags --remotes --glob "
        "--show-object-format --show-ref-format --local-env-vars --path-format --shared-index-path --revs-only "
        "--no-revs --flags --no-flags --sq --sq-quote --parseopt --keep-dashdash --stop-at-non-option "
        "--stuck-long --not --since --until --after --before --show-superproject-working-tree --disambiguate "
        "--exclude",
        "--git-path --default --prefix --resolve-git-dir",
    ),
    "describe": _git(
        "--all --tags --contains --abbrev --candidates --exact-match --debug --long --always --first-parent "
        "--dirty --broken",
        "--match --exclude",
    ),
    "merge-base": _git("-a --all --octopus --independent --is-ancestor --fork-point"),
    "show-ref": _git(
        "--head --heads --tags --branches -d --dereference -s --hash --abbrev --verify --exists -q --quiet "
        "--exclude-existing"
    ),
    "ls-remote": _git(  # not --upload-pack
        "--heads --tags --branches -h -t --refs -q --quiet --exit-code --get-url --symref", "--sort"
    ),
    "count-objects": _git("-v --verbose -H --human-readable"),
    "check-ignore": _git("-q --quiet -v --verbose -n --non-matching --no-index --stdin -z"),
    "grep": _git(  # not -O/--open-files-in-pager (runs a pager), --textconv
        "--cached --untracked --no-index --no-exclude-standard --exclude-standard --recurse-submodules -a --text "
        "-i --ignore-case -I -r --recursive --no-recursive -w --word-regexp -v --invert-match -h -H --full-name -E "
        "--extended-regexp -G --basic-regexp -F --fixed-strings -P --perl-regexp -n --line-number --column -l "
        "--files-with-matches --name-only -L --files-without-match -z --null -o --only-matching -c --count "
        "--color --no-color --break --heading -p --show-function -W --function-context --and --or --not "
        "--all-match -q --quiet",
        "--max-depth -A -B -C --after-context --before-context --context --threads -f -e -m --max-count",
        numeric=True,
    ),
    "tag": _git(  # listing and creation; not -d, -f, -s/-u (gpg), -F, -e
        "-l --list --column --no-column -i --ignore-case --color --omit-empty -a --annotate --create-reflog --no-sign",
        "--sort --contains --no-contains --merged --no-merged --points-at --format -m --message",
        attached="-n",
    ),
    "stash": _git_group(
        list=_GIT_LOG,
        show=_git(
            f"{_GIT_DIFF_FLAGS} -u --include-untracked --no-include-untracked --only-untracked",
            _GIT_DIFF_VALUED,
            attached=_GIT_DIFF_ATTACHED,
        ),
    ),
    "remote": _git_group("-v --verbose", show=_git("-n"), get_url=_git("--push --all")),
    "worktree": _git_group(list=_git("--porcelain -v --verbose -z")),
    "bisect": _git_group(  # not run (runs a command per step), visualize, replay
        start=_git("--no-checkout --first-parent --term-old --term-new --term-good --term-bad"),
        bad=_git(),
        good=_git(),
        new=_git(),
        old=_git(),
        skip=_git(),
        reset=_git(),
        log=_git(),
        terms=_git("--term-good --term-bad --term-old --term-new"),
        help=_git(),
    ),
    "reflog": _spec(  # showing only: not expire or delete
        f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}",
        f"{_GIT_DIFF_VALUED} {_GIT_LOG_VALUED}",
        attached=_GIT_DIFF_ATTACHED,
        numeric=True,
        subcommands={"show": _GIT_LOG, "exists": _git()},
        strict=True,
    ),
    "config": _git(  # reading only
        "--get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool --list -l --show-origin "
        "--show-scope --local --global --system --worktree --name-only --null -z --bool --int --bool-or-int --path "
        "--expiry-date --includes --no-includes --all --regexp --fixed-value --show-names",
        "--type -t --default --value --url -f --file --blob",  # -f: read (write forms are caught below)
        operands=_git_config_writes,
    ),
    "add": _git(  # not -f/--force (adds ignored files)
        "-A --all --no-all -u --update -p --patch -i --interactive -N --intent-to-add -v --verbose -n --dry-run "
        "--ignore-errors --ignore-missing --renormalize --sparse --refresh --pathspec-file-nul",
        "--chmod --pathspec-from-file",
    ),
    "commit": _git(  # not -S/--gpg-sign, -e/--edit (an editor)
        "-a --all -v --verbose -q --quiet --amend --no-edit --allow-empty --allow-empty-message -s "
        "--signoff --no-signoff --no-verify -n --verify --reset-author --status --no-status --untracked-files "
        "--dry-run --short --branch --porcelain --long -z --null -o --only -i --include -p --patch "
        "--pathspec-file-nul --no-gpg-sign --no-post-rewrite",
        "-m --message -F --file -t --template -c --reedit-message -C --reuse-message --fixup --squash --author "
        "--date --cleanup --pathspec-from-file --trailer",
        attached="-u",
    ),
    "checkout": _git(  # switching branches; not -f, -B, -m, -p, --ours/--theirs, nor paths (discards changes)
        "-t --track --no-track -q --quiet --detach --guess --no-guess --progress --no-progress -l "
        "--ignore-other-worktrees --no-overwrite-ignore",
        "-b --orphan",
        operands=_git_checkout_paths,
    ),
    "switch": _git(  # not -C/--force-create, -f/--force/--discard-changes, -m/--merge
        "-d --detach --guess --no-guess -t --track --no-track -q --quiet --progress --no-progress "
        "--ignore-other-worktrees",
        "-c --create --orphan",
    ),
    "restore": _git(  # unstaging only
        "-S --staged -q --quiet --progress --no-progress --pathspec-file-nul",
        "-s --source --pathspec-from-file",
        operands=_git_restore_worktree,
    ),
    "fetch": _git(_GIT_FETCH, _GIT_FETCH_VALUED),
    "pull": _git(
        f"{_GIT_FETCH} {_GIT_MERGE} -r --rebase --no-rebase",
        f"{_GIT_FETCH_VALUED} -X --strategy-option",
        checks={**_STRATEGY, "--rebase": _GIT_REBASE_MODES.__contains__},  # not --rebase=interactive
    ),
    "push": _git(  # not -f/--force…, --mirror, -d/--delete, --prune, --receive-pack/--exec, --all, --signed
        "-u --set-upstream --tags --follow-tags --no-follow-tags -q --quiet -v --verbose -n --dry-run --porcelain "
        "--progress --no-progress --no-verify --verify --atomic --no-atomic --thin --no-thin -4 -6 --ipv4 --ipv6",
        "-o --push-option",
        operands=_git_push_refspecs,
    ),
    "merge": _git(  # not -e/--edit (an editor)
        f"{_GIT_MERGE} --abort --continue --quit",
        "-m -F --file -X --strategy-option --into-name --cleanup",
        checks=_STRATEGY,
    ),
    "rebase": _git(  # not -x/--exec, -i/--interactive, --edit-todo, -S/--gpg-sign
        "--continue --abort --skip --quit --show-current-patch --keep-base -q --quiet -v --verbose --stat -n "
        "--no-stat --autostash --no-autostash --autosquash --no-autosquash --update-refs --no-update-refs "
        "--rebase-merges --no-rebase-merges -r --root --fork-point --no-fork-point "
        "--committer-date-is-author-date --ignore-date --reset-author-date --signoff --keep-empty --no-keep-empty "
        "--empty --apply --merge -m --no-verify --verify --reapply-cherry-picks --no-reapply-cherry-picks "
        "--allow-empty-message --ignore-whitespace --whitespace --no-ff --no-gpg-sign",
        "--onto -X --strategy-option",
        attached="-C",
        checks=_STRATEGY,
    ),
    **dict.fromkeys(
        ("cherry-pick", "revert"),
        _git(  # not -e/--edit, -S/--gpg-sign
            "-n --no-commit -x --continue --abort --skip --quit --no-edit -s --signoff --ff --allow-empty "
            "--allow-empty-message --keep-redundant-commits --empty --rerere-autoupdate --no-rerere-autoupdate "
            "--no-gpg-sign",
            "-m --mainline -X --strategy-option --cleanup",
            checks={"--strategy": _builtin_strategy},
        ),
    ),
    "clone": _git(  # not -u/--upload-pack, --template, -c/--config, --separate-git-dir, --reference, --recurse…
        "--single-branch --no-single-branch -q --quiet -v --verbose --progress --no-tags",
        "--depth -b --branch --filter -o --origin",
    ),
    "mv": _git("-k -n --dry-run -v --verbose --sparse"),  # not -f (overwrites)
    "rm": _git(  # not -f; -r only with --cached
        "--cached -r -q --quiet -n --dry-run --ignore-unmatch --sparse --pathspec-file-nul",
        "--pathspec-from-file",
        operands=_git_rm_recursive,
    ),
    "reset": _git(  # not --hard, --merge, --keep
        "--soft --mixed -q --quiet -N --intent-to-add --no-refresh --refresh -p --patch --pathspec-file-nul",
        "--pathspec-from-file",
    ),
}
_GIT = _spec(  # not -C, -c, --git-dir, --work-tree, --exec-path, --namespace, --config-env, -p/--paginate, --bare
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --no-replace-objects --no-lazy-fetch --no-advice -v -h --html-path --man-path --info-path",
    skipped="-C -c --git-dir --work-tree --namespace --super-prefix --config-env --attr-source",
    subcommands=_GIT_SUBCOMMANDS,
)

_PROGRAMS: dict[str, _Spec] = {
    "ls": _LS,
    "cat": _CAT,
    "head": _HEAD_TAIL,
    "tail": _HEAD_TAIL,
    "wc": _WC,
    "sort": _SORT,
    "uniq": _UNIQ,
    "cut": _CUT,
    "tr": _TR,
    "diff": _DIFF,
    "cmp": _CMP,
    **dict.fromkeys(("grep", "egrep", "fgrep", "ggrep"), _GREP),
    "rg": _RG,
    "find": _FIND,
    "tree": _TREE,
    "du": _DU,
    "df": _DF,
    "stat": _STAT,
    "file": _FILE,
    "which": _WHICH,
    "pwd": _PWD,
    "cd": _CD,
    "mkdir": _MKDIR,
    "touch": _TOUCH,
    "cp": _COPY,
    "mv": _MOVE,
    "rm": _RM,
    "ln": _LN,
    "basename": _BASENAME,
    "dirname": _DIRNAME,
    "realpath": _REALPATH,
    "readlink": _READLINK,
    "date": _DATE,
    "jq": _JQ,
    "printf": _spec(trailing=True),  # not -v (assigns a shell variable, PATH among them)
    **dict.fromkeys(("sed", "gsed"), _SED),
    **dict.fromkeys(("tar", "gtar"), _TAR),
    **dict.fromkeys(("make", "gmake"), _MAKE),
    **dict.fromkeys(("pytest", "py.test"), _PYTEST),
    "jest": _JEST,
    "vitest": _VITEST,
    "mypy": _MYPY,
    "ruff": _RUFF,
    "eslint": _ESLINT,
    "prettier": _PRETTIER,
    "tsc": _TSC,
    "cargo": _CARGO,
    "go": _GO,
    "npm": _NPM,
    "pnpm": _PNPM,
    "yarn": _YARN,
    "bun": _BUN,
    "git": _GIT,
}
# Every word only shapes what is printed or tested: no option of theirs reaches anything.
_PRINTERS = frozenset({"echo", "test", "[", "[[", "true", "false", ":"})


# ---------------------------------------------------------------------------------------------
# Reading a command's words
# ---------------------------------------------------------------------------------------------

_NEGATIVE_NUMBER = re.compile(r"-\d+(?:\.\d+)?")


def _value_like(word: str) -> bool:
    """Whether a word after a value-taking option can be its value.

    Some parsers (yargs, clap's optional values) take a following ``-x`` as the next option, so it
    is checked as one; negative numbers and ``-`` are values everywhere.
    """
    return not word.startswith("-") or word == "-" or _NEGATIVE_NUMBER.fullmatch(word) is not None


def _old_style_tar(args: Sequence[str]) -> list[str]:
    """``tar xzf a.tgz dir`` → ``tar -x -z -f a.tgz dir``: value letters take the next words in turn."""
    if not args or args[0].startswith("-"):
        return list(args)
    words, rest = [], list(args[1:])
    for letter in args[0]:
        option = "-" + letter
        words.append(option)
        if rest and (option in _TAR.valued or option in _TAR.skipped or option in _TAR.checks):
            words.append(rest.pop(0))
    return words + rest


def _find_words(args: Sequence[str]) -> list[str]:
    """find's words without ``--`` (it ends only the options before the paths: ``find -- . -delete``
    deletes) and without the commands of ``-exec``/``-ok`` (up to ``;`` or ``+``), which are not its own."""
    words: list[str] = []
    in_command = False
    for word in args:
        if in_command:
            in_command = word not in (";", "+")
        elif word != "--":
            words.append(word)
            in_command = word in _FIND_RUNNERS
    return words


_PREPARE: dict[str, Callable[[Sequence[str]], list[str]]] = {
    "tar": _old_style_tar,
    "gtar": _old_style_tar,
    "find": _find_words,
}


def _scan(spec: _Spec, args: Sequence[str], bad: list[str]) -> None:
    """Append to ``bad`` the words of ``args`` that ``spec`` does not cover."""
    options: set[str] = set()
    operands: list[str] = []
    dashdash = False
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--" and spec.style != "tsc":  # tsc knows no --: it is an unknown option there
            if spec.subcommands is not None:  # before a subcommand it ends nothing worth trusting
                continue
            dashdash = True
            if spec.after_dashdash is not None:
                _scan(spec.after_dashdash, args[index:], bad)
            else:
                operands.extend(args[index:])
            break
        if len(word) > 1 and word.startswith("-"):
            index = _option(spec, word, args, index, options, bad)
            continue
        if spec.subcommands is not None:
            if word.startswith("+"):  # cargo +nightly build
                continue
            sub = spec.subcommands.get(word)
            if sub is None and spec.strict:
                bad.append(word)
            _scan(_UNKNOWN if sub is None else sub, args[index:], bad)
            return
        operands.append(word)
        if spec.trailing:
            operands.extend(args[index:])
            break
    if spec.operands is not None:
        bad.extend(spec.operands(_Line(frozenset(options), tuple(operands), dashdash)))


def _option(spec: _Spec, word: str, args: Sequence[str], index: int, options: set[str], bad: list[str]) -> int:
    """Check one option word (a short cluster letter by letter); returns the index after its value."""
    if spec.style not in ("gnu", "letters") or word.startswith("--"):
        name, equals, value = word.partition("=")
        key = _key(spec.style, name)
        options.add(key)
        return _option_value(spec, key, name, value if equals else None, word, args, index, bad)
    if spec.numeric and word[1:].isdigit():
        return index
    for position in range(1, len(word)):
        key = "-" + word[position]
        options.add(key)
        if key in spec.flags:
            continue
        if key in spec.attached:
            return index
        if spec.style == "letters":
            if position == len(word) - 1:
                return _option_value(spec, key, key, None, word, args, index, bad)
            if key not in spec.valued:  # unknown, or checked: its value would not be what is checked
                bad.append(key)
                return index
            continue  # yargs, mri and nopt give a value-taking letter inside a word no value
        return _option_value(spec, key, key, word[position + 1 :] or None, word, args, index, bad)
    return index


def _option_value(
    spec: _Spec, key: str, name: str, attached: str | None, word: str, args: Sequence[str], index: int, bad: list[str]
) -> int:
    """Judge option ``key`` with its attached value, or take its value from the next word when it takes one.

    A flag with a check takes an optional value, attached only, which is checked (``--rebase=…``).
    """
    check = spec.checks.get(key)
    if key in spec.flags:
        if check is not None and attached is not None and not check(attached):
            bad.append(word)
        return index
    if key not in spec.valued and key not in spec.skipped and check is None:
        bad.append(name)
        return index
    value, shown = attached, word
    if value is None and index < len(args) and (check is not None or spec.greedy or _value_like(args[index])):
        value, shown = args[index], args[index]  # a checked value is taken whatever it looks like, then judged
        index += 1
    if key in spec.skipped:
        bad.append(name)
    elif check is not None and value is not None and not check(value):
        bad.append(shown)
    return index


def is_listed(program: str) -> bool:
    """Whether ``program`` has a table here (an unlisted one has no harmless options)."""
    return program in _PROGRAMS or program in _PRINTERS


def unlisted_options(program: str, args: Sequence[str]) -> tuple[str, ...]:
    """The option words of ``program args`` that no remembered grant may cover (``()``: all harmless).

    ``program`` is the lowercased base name (``git``; ``python3`` is given as-is), ``args`` the words
    after it, subcommands included (``python -m pytest`` is given as ``pytest``). Operands
    (non-option words) are free, except those a table checks: a sed script, make's ``VAR=value``,
    git's paths to ``checkout``, its ``+``/``:`` refspecs to ``push``, the write forms of
    ``git config`` and actions outside a short list (``git stash drop``, ``git bisect run``). A
    program missing from the table has no harmless options: every option it is given is returned.

    Words come back in order, once each: an option by its name (``--pre`` for ``--pre=sh``,
    ``-i`` for the ``i`` in ``-ni``; an unknown program's ``-la`` whole, as its letters mean nothing
    here), and a value or operand that fails its check as written (``1e ls``, ``SHELL=sh``).
    """
    if program in _PRINTERS:
        return ()
    prepare = _PREPARE.get(program)
    bad: list[str] = []
    _scan(_PROGRAMS.get(program, _UNKNOWN), prepare(args) if prepare else args, bad)
    return tuple(dict.fromkeys(bad))
