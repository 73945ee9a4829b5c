"""sed, awk and the text filters: what they write and run, which options a grant covers, when they read.

A sed script is read by its grammar (``harmless_sed_script``): it is harmless when it only prints,
deletes, substitutes or moves text between buffers; ``e`` runs commands, ``w`` writes files. ``sed -i``
and ``perl -i`` rewrite the files they are given, and an awk program that calls ``system()`` or pipes
into a command is never covered by a grant. The filters (``grep``, ``rg``, ``sort``, ``cut`` …) only
read and print, with the options their tables list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from acp_hermes.permissions.shell.arguments import has_flag, names, operands_of, option_value
from acp_hermes.permissions.shell.options import Line, spec
from acp_hermes.permissions.shell.programs.base import ANY, OPTIONS, Family
from acp_hermes.permissions.shell.rating import Call

# ---------------------------------------------------------------------------------------------
# Risk
# ---------------------------------------------------------------------------------------------

# sed's ``e`` command and the ``e`` flag of ``s`` run shell commands; ``w``/``W`` write files.
_SED_RUNS = re.compile(
    r"(?:^|[;\n{}])\s*(?:[0-9$]+(?:,[0-9$]+)?|/[^/\n]*/)?\s*!?\s*e(?:\s|;|$)"  # the e command
    r"|s(.).*?\1.*?\1[gpiImM0-9w]*e"  # s/…/…/e
)


def _check_in_place_edit(call: Call) -> None:
    """``sed -i`` and ``perl -i`` rewrite the files they are given; a sed script can also run commands."""
    if call.name in ("sed", "gsed"):
        scripts = [option_value(call.args, "-e", "--expression")] if has_flag(call.args, "", "-e", "--expression") \
            else operands_of(call.args, frozenset({"-f", "--file", "-l", "--line-length"}))[:1]
        if any(script and _SED_RUNS.search(script) for script in scripts):
            call.findings.dangerous("sed script that runs commands")
    if not has_flag(call.args, "i", "--in-place"):
        return
    code_options = ("-e", "--expression", "-f", "--file") if call.name == "sed" else ("-e", "-E")
    operands = operands_of(call.args, frozenset({"-e", "--expression", "-f", "--file", "-E", "-I", "-M", "-m"}))
    has_code_option = any(arg in code_options or arg.startswith(("--expression=", "--file=")) for arg in call.args)
    files = operands if has_code_option else operands[1:]  # without -e the first operand is the script
    for target in files:
        call.writes(target)


def _check_sort(call: Call) -> None:
    target = option_value(call.args, "-o", "--output")
    if target:
        call.writes(target)
    if any(arg.startswith("--compress-program") for arg in call.args):
        call.findings.dangerous("sort --compress-program runs a program")


_AWK_RUNS = re.compile(r"\bsystem\s*\(|\|\s*getline|print[^;}]*\|\s*\"|\|&")


def _check_awk(call: Call) -> None:
    args = call.args
    operands = operands_of(args, frozenset({"-f", "-v", "-F", "-i", "--include"}))
    program = next(iter(operands), "")
    if _AWK_RUNS.search(program):
        call.findings.dangerous(f"{call.name} program that runs commands")
    if any(option_value(args, "-i", "--include") == "inplace" or arg in ("-iinplace", "--include=inplace")
           for arg in args):  # gawk -i inplace rewrites the files it reads
        has_program_file = has_flag(args, "", "-f", "--file")
        for target in operands if has_program_file else operands[1:]:
            call.writes(target)


def _awk_runs_commands(args: list[str]) -> bool:
    """An awk program that runs commands: no grant covers it, whatever its options."""
    program = next(iter(operands_of(args, frozenset({"-f", "-v", "-F"}))), "")
    return _AWK_RUNS.search(program) is not None


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
# The options a grant covers
# ---------------------------------------------------------------------------------------------


def _sed_operands(line: Line) -> Iterable[str]:
    """Without ``-e``/``-f`` the first operand is the script."""
    if line.options & {"-e", "--expression", "-f", "--file"} or not line.operands:
        return ()
    script = line.operands[0]
    return () if harmless_sed_script(script) else (script,)


def _uniq_output(line: Line) -> Iterable[str]:
    """uniq's second operand is a file it writes."""
    return line.operands[1:2]


_CAT = spec(
    "-A --show-all -b --number-nonblank -e -E --show-ends -n --number -s --squeeze-blank -t -T --show-tabs -u "
    "-v --show-nonprinting"
)
_HEAD_TAIL = spec(
    "-q --quiet --silent -v --verbose -z --zero-terminated -f --follow -F --retry",
    "-c --bytes -n --lines --max-unchanged-stats --pid -s --sleep-interval",
    numeric=True,
)
_WC = spec("-c --bytes -m --chars -l --lines -L --max-line-length -w --words", "--files0-from --total")
_SORT = spec(  # not -o/--output (writes), -T (temporary files), --compress-program (runs one)
    "-b --ignore-leading-blanks -d --dictionary-order -f --ignore-case -g --general-numeric-sort -i "
    "--ignore-nonprinting -M --month-sort -h --human-numeric-sort -n --numeric-sort -R --random-sort -r "
    "--reverse -V --version-sort -c --check -C -m --merge -s --stable -u --unique -z --zero-terminated --debug",
    "--sort --random-source -k --key -t --field-separator --batch-size -S --buffer-size --parallel --files0-from",
)
_UNIQ = spec(
    "-c --count -d --repeated -D --all-repeated --group -i --ignore-case -u --unique -z --zero-terminated",
    "-f --skip-fields -s --skip-chars -w --check-chars",
    operands=_uniq_output,
)
_CUT = spec(
    "-n --complement -s --only-delimited -z --zero-terminated",
    "-b --bytes -c --characters -d --delimiter -f --fields --output-delimiter",
)
_TR = spec("-c -C --complement -d --delete -s --squeeze-repeats -t --truncate-set1")
_DIFF = spec(  # not -l/--paginate (pipes through pr)
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
_CMP = spec("-b --print-bytes -l --verbose -s --quiet --silent", "-i --ignore-initial -n --bytes")
_GREP = spec(
    "-E --extended-regexp -F --fixed-strings -G --basic-regexp -P --perl-regexp -i -y --ignore-case "
    "--no-ignore-case -v --invert-match -w --word-regexp -x --line-regexp -c --count --color --colour -L "
    "--files-without-match -l --files-with-matches -o --only-matching -q --quiet --silent -s --no-messages -b "
    "--byte-offset -H --with-filename -h --no-filename -n --line-number --line-buffered -T --initial-tab -Z "
    "--null -a --text -I -r --recursive -R --dereference-recursive -U --binary -z --null-data",
    "-e --regexp -f --file -m --max-count --label -A --after-context -B --before-context -C --context "
    "--binary-files -D --devices -d --directories --exclude --include --exclude-dir --exclude-from",
    numeric=True,
)
_RG = spec(  # not --pre/--pre-glob (run a program per file), -z/--search-zip (runs decompressors), --hostname-bin
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
_JQ = spec(  # jq programs cannot run commands or write files
    "-r --raw-output --raw-output0 -j --join-output -a --ascii-output -c --compact-output -n --null-input -e "
    "--exit-status -s --slurp -R --raw-input -C --color-output -M --monochrome-output -S --sort-keys --tab "
    "--args --jsonargs --seq --stream --stream-errors --unbuffered -h -V --build-configuration",
    "--indent --arg --argjson --slurpfile --rawfile -f --from-file -L",
)
_SED = spec(  # not -i/--in-place (nor BSD -I), -f/--file (a script from elsewhere)
    "-n --quiet --silent -E -r --regexp-extended -s --separate -u --unbuffered -z --null-data --posix --debug "
    "--sandbox -b --binary",
    "-l --line-length",
    skipped="-f --file",
    checks={"-e": harmless_sed_script, "--expression": harmless_sed_script},
    operands=_sed_operands,
)

_AWKS = ("awk", "gawk", "mawk", "nawk")
FAMILY = Family(
    checks={
        **dict.fromkeys(("sed", "gsed", "perl"), _check_in_place_edit),
        "sort": _check_sort,
        **dict.fromkeys(_AWKS, _check_awk),
    },
    options={
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
        "jq": _JQ,
        **dict.fromkeys(("sed", "gsed"), _SED),
    },
    reads={
        **dict.fromkeys(names(
            "cat head tail wc grep egrep fgrep cut tr cmp tac nl rev comm join paste fold expand unexpand seq od "
            "column md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum"
        ), ANY),
        **dict.fromkeys(names("sort uniq diff rg jq sed"), OPTIONS),
    },
    never_granted=dict.fromkeys(_AWKS, _awk_runs_commands),
)
