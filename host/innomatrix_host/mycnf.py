"""Seed my.cnf variants A-D: parse, layer, translate for today's servers, check, render.

The plan renders each cell's my.cnf with it on the controller; the trial reads back what its my.cnf
asked on the host (innomatrix_host.settings), with the same parser and the same size rule.

my.cnf.d/ keeps the seed's intent in the option names of Percona's 2013
"vCache vs FlashCache part 2" post.  Servers of today renamed, folded or
removed some of those options, so translate() rewrites a variant for one
server flavor and version from the RULES table, and check_known() proves the
result against the option list the installed binary prints: a server that
meets an option it does not know refuses to start, which would cost a whole
benchmark cell.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

# The servers the suite installs and renders variants for.
FLAVORS = ("mariadb", "mysql", "percona")
# Optional, not `str | None`: this alias is evaluated when the module loads, and a host may run Python 3.9.
Options = dict[str, Optional[str]]
Version = tuple[int, ...]


# Sizes as users and my.cnf write them: bytes, or a number with K, M, G or T (powers of 1024).
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
SIZE_FACTORS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
SIZE_LIMIT = float(1 << 60)


class SizeError(ValueError):
    """A size that cannot be read; the message is one line for the user."""


def parse_size(name: str, text: object) -> int:
    """'128M', '1.5G', '4GiB' or a byte count → bytes."""
    match = _SIZE.match(str(text))
    if not match:
        raise SizeError(f"{name}: cannot read size {text!r}; use bytes or a number with K, M, G or T (e.g. 128M, 25G)")
    number, unit = match.groups()
    size = float(number) * SIZE_FACTORS[unit.upper()]
    if not size < SIZE_LIMIT:  # 400 digits read as inf: no device holds it
        raise SizeError(f"{name}: size {str(text)[:20]!r}... is beyond any device (more than 1 EiB)")
    if int(size) <= 0:
        raise SizeError(f"{name}: size {text!r} must be larger than zero")
    return int(size)


class MyCnfError(ValueError):
    """A variant cannot be read, translated or used; the message is one line."""


BASE_FILE = "base.cnf"
BASE_VARIANT = "A"
# The groups mariadbd and mysqld both read for the server itself.  Suffixed
# groups such as [mysqld-8.0] are out of scope; any other group belongs to
# another program (client, mysqldump, ...) and must not reach the server.
SERVER_GROUPS = frozenset({"mysqld", "server", "mariadb", "mariadbd"})


def normalize_name(name: str) -> str:
    """One spelling per option, so that layering and rules compare names reliably."""
    name = name.strip().lower().replace("-", "_")
    # loose_ only tells the server not to fail on an unknown option; the
    # option itself is the same one.
    return name.removeprefix("loose_")


# ---------------------------------------------------------------- parsing

_SECTION = re.compile(r"\[\s*([^\]\s]+)\s*\]\s*(?:#.*)?")
# '.' for structured variables such as hot_cache.key_buffer_size.
_NAME = re.compile(r"[a-z0-9][a-z0-9_.]*")
_QUOTED = re.compile(r"""(["'])((?:\\.|(?!\1).)*)\1""")


def _strip_comment(line: str) -> tuple[str, bool]:
    """Cut an inline # comment as the server does, outside quotes only.

    Returns the text before the comment and whether a quote was left open.
    """
    quote = ""
    escaped = False
    for index, char in enumerate(line):
        if quote:
            # As in the server, a backslash inside quotes protects the next
            # character, so an escaped quote does not close the value.
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:index], False
    return line, bool(quote)


def _parse_option(line: str, where: str) -> tuple[str, str | None]:
    text, open_quote = _strip_comment(line)
    if open_quote:
        raise MyCnfError(f"{where}: unterminated quote in {line!r}: close the quote")
    name_part, has_value, value_part = text.partition("=")
    name = normalize_name(name_part)
    if not _NAME.fullmatch(name):
        raise MyCnfError(
            f"{where}: malformed option line {line!r}: write 'name = value' or a bare name"
        )
    if not has_value:
        return name, None
    value = value_part.strip()
    if value[:1] in ("'", '"'):
        quoted = _QUOTED.fullmatch(value)
        if quoted is None:
            raise MyCnfError(
                f"{where}: text after the closing quote in {line!r}: quote the whole value"
            )
        value = quoted.group(2)
    return name, value


def parse_cnf(text: str, source: str) -> Options:
    """Options of the server groups of one option file, in file order, later wins."""
    options: Options = {}
    group: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{source}:{number}"
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = _SECTION.fullmatch(line)
            if section is None:
                raise MyCnfError(f"{where}: malformed group header {line!r}: write it as [mysqld]")
            group = section.group(1).lower()
            continue
        if line.startswith("!"):
            # Following an include would make the variant depend on files
            # that variant_digest does not hash.
            raise MyCnfError(f"{where}: {line!r} is not supported: put the options in the file itself")
        if group is None:
            raise MyCnfError(f"{where}: option {line!r} before any group: start the file with [mysqld]")
        name, value = _parse_option(line, where)
        if group in SERVER_GROUPS:
            options[name] = value
    return options


# ---------------------------------------------------------------- variants


def variant_ids(cnf_dir: str) -> list[str]:
    """A (base.cnf alone) plus the stem of every other *.cnf, sorted."""
    directory = Path(cnf_dir)
    if not (directory / BASE_FILE).is_file():
        raise MyCnfError(f"{directory / BASE_FILE} is missing: configuration A must live there")
    # Hidden files are editors' locks and backups (.#C.cnf), not variants.
    stems = [
        path.stem
        for path in directory.glob("*.cnf")
        if path.is_file() and path.name != BASE_FILE and not path.name.startswith(".")
    ]
    if BASE_VARIANT in stems:
        raise MyCnfError(
            f"{directory / (BASE_VARIANT + '.cnf')} clashes with variant A, "
            f"which is {BASE_FILE} alone: rename it"
        )
    return sorted([BASE_VARIANT, *stems])


def _variant_files(cnf_dir: str, variant: str) -> list[Path]:
    ids = variant_ids(cnf_dir)
    if variant not in ids:
        raise MyCnfError(f"unknown variant {variant!r}: use one of {', '.join(ids)} (from {cnf_dir})")
    base = Path(cnf_dir, BASE_FILE)
    return [base] if variant == BASE_VARIANT else [base, Path(cnf_dir, f"{variant}.cnf")]


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise MyCnfError(f"{path} is not UTF-8 (byte {error.start}): save it as UTF-8") from None


def load_variant(cnf_dir: str, variant: str) -> Options:
    """base.cnf, then the variant's file on top: a later value wins, in place."""
    merged: Options = {}
    for path in _variant_files(cnf_dir, variant):
        merged.update(parse_cnf(_read_text(path), str(path)))
    return merged


def variant_digest(cnf_dir: str, variant: str) -> str:
    """sha256 of the files that make the variant, base first, and of the translation rules.

    A changed rule changes what reaches the server as surely as an edited file does.
    """
    digest = hashlib.sha256()
    for path in _variant_files(cnf_dir, variant):
        digest.update(path.read_bytes())
    digest.update(rules_fingerprint().encode())
    return digest.hexdigest()


def rules_fingerprint() -> str:
    """The translation rules as canonical text: sets sorted, so the hash is the same in every process."""
    rows = [
        {**asdict(rule), "flavors": sorted(rule.flavors), "values": dict(sorted(rule.values.items()))}
        for rule in RULES
    ]
    return json.dumps(rows, sort_keys=True)


# ---------------------------------------------------------------- versions

_VERSION = r"(\d+)\.(\d+)(?:\.(\d+))?"
# MariaDB before 11.0 announces itself as "5.5.5-10.x..." in the client
# handshake so that old clients keep working; the real version follows.
_HANDSHAKE_PREFIX = re.compile(r"5\.5\.5-(?=\d+\.\d+\S*mariadb)", re.IGNORECASE)


def parse_version(text: str) -> Version:
    """(major, minor[, patch]) from a version string or a `--version` line."""
    cleaned = _HANDSHAKE_PREFIX.sub("", text.strip(), count=1)
    # `mariadbd --version` starts with the binary's path, which may hold digits.
    found = re.search(r"\bVer\s+" + _VERSION, cleaned) or re.match(_VERSION, cleaned)
    if found is None:
        raise MyCnfError(f"no server version in {text!r}: pass e.g. 10.11.19-MariaDB or 8.0.36-28")
    return tuple(int(part) for part in found.groups() if part is not None)


def _version_text(version: Version) -> str:
    return ".".join(str(part) for part in version)


# ---------------------------------------------------------------- translation


@dataclass(frozen=True)
class Rule:
    """One row of RULES: what a seed option becomes on some servers, and why."""

    option: str  # the seed's (2013) name, normalized
    action: str  # "rename", "drop" or "combine": a key of _ACTIONS
    flavors: frozenset[str]  # the servers the row is about
    since: Version  # first version of those servers the row applies to
    reason: str  # why: goes into the note and tells the reader of the table
    target: str = ""  # rename, combine: the name the server knows
    values: Mapping[str, str] = field(default_factory=dict)  # rename: seed value (lowercase) -> server value
    bare: str = ""  # rename: the value to write when the seed gives the option bare
    partner: str = ""  # combine: the option multiplied with this one; the result takes its place

    def applies(self, flavor: str, version: Version) -> bool:
        return flavor in self.flavors and version >= self.since


ANY_SERVER = frozenset(FLAVORS)
# Percona Server follows MySQL's version numbers and removals.
MYSQL_LIKE = frozenset({"mysql", "percona"})
MARIADB = frozenset({"mariadb"})
EVER: Version = (0,)

# Percona 5.5 numbered innodb_flush_neighbor_pages none=0, area=1, cont=2;
# MySQL 5.6's innodb_flush_neighbors numbers the same ideas the other way
# round (1 = contiguous pages only, 2 = the whole area), so map by meaning.
_FLUSH_NEIGHBORS = {"none": "0", "0": "0", "area": "2", "1": "2", "cont": "1", "2": "1"}
_ONLY_PERCONA_55 = (
    "exists only in Percona Server 5.5 (and MariaDB 5.5's XtraDB); later servers use MySQL 5.6 flushing"
)

RULES: tuple[Rule, ...] = (
    Rule(
        "serverid", "rename", ANY_SERVER, EVER,
        "the post's typo: the variable is server_id",
        target="server_id",
    ),
    Rule(
        "myisam_recover", "rename", ANY_SERVER, EVER,
        "old name, removed in MySQL 5.6; bare meant DEFAULT",
        target="myisam_recover_options", bare="DEFAULT",
    ),
    Rule(
        "innodb_flush_neighbor_pages", "rename", MYSQL_LIKE, (5, 6),
        "renamed in 5.6; values by meaning: area=2, cont=1",
        target="innodb_flush_neighbors", values=_FLUSH_NEIGHBORS,
    ),
    Rule(
        "innodb_flush_neighbor_pages", "rename", MARIADB, (10, 0),
        "renamed in MariaDB 10.0, from MySQL 5.6; values by meaning: area=2, cont=1",
        target="innodb_flush_neighbors", values=_FLUSH_NEIGHBORS,
    ),
    Rule("innodb_adaptive_flushing_method", "drop", frozenset({"mysql"}), EVER, _ONLY_PERCONA_55),
    Rule("innodb_adaptive_flushing_method", "drop", frozenset({"percona"}), (5, 6), _ONLY_PERCONA_55),
    Rule("innodb_adaptive_flushing_method", "drop", MARIADB, (10, 0), _ONLY_PERCONA_55),
    Rule(
        "innodb_file_format", "drop", MYSQL_LIKE, (8, 0),
        "removed in MySQL 8.0: Barracuda is the only file format",
    ),
    Rule(
        "innodb_file_format", "drop", MARIADB, (10, 3),
        "no effect since MariaDB 10.3, removed in 10.6: Barracuda is the only file format",
    ),
    Rule("query_cache_size", "drop", MYSQL_LIKE, (8, 0, 3), "the query cache was removed in MySQL 8.0.3"),
    Rule("query_cache_type", "drop", MYSQL_LIKE, (8, 0, 3), "the query cache was removed in MySQL 8.0.3"),
    Rule(
        "myisam_repair_threads", "drop", MYSQL_LIKE, (8, 0, 30),
        "removed in MySQL 8.0.30: MyISAM repair is single-threaded (=1) only",
    ),
    Rule(
        "innodb_log_files_in_group", "combine", MYSQL_LIKE, (8, 0, 30),
        "innodb_redo_log_capacity replaces both in MySQL 8.0.30",
        target="innodb_redo_log_capacity", partner="innodb_log_file_size",
    ),
    Rule(
        "innodb_log_files_in_group", "combine", MARIADB, (10, 5),
        "MariaDB 10.5 writes a single redo log file, so its size is the whole capacity",
        target="innodb_log_file_size", partner="innodb_log_file_size",
    ),
)


def _fmt(name: str, value: str | None) -> str:
    return name if value is None else f"{name}={value}"


def _replace(options: Options, old: str, new: str, value: str | None) -> Options:
    """options with `old` swapped for new=value in the same position."""
    if new != old and new in options:
        raise MyCnfError(f"both {old} and {new} are set and {old} becomes {new}: keep only one of them")
    return {
        (new if name == old else name): (value if name == old else kept) for name, kept in options.items()
    }


def _renamed_value(rule: Rule, value: str | None) -> str | None:
    if value is None:
        return rule.bare or None
    if not rule.values:
        return value
    try:
        return rule.values[value.lower()]
    except KeyError:
        raise MyCnfError(
            f"{rule.option}={value} has no {rule.target} equivalent: use one of {', '.join(rule.values)}"
        ) from None


def _rename(options: Options, rule: Rule) -> tuple[Options, str]:
    value = options[rule.option]
    new_value = _renamed_value(rule, value)
    note = f"{_fmt(rule.option, value)} → {_fmt(rule.target, new_value)} ({rule.reason})"
    return _replace(options, rule.option, rule.target, new_value), note


def _drop(options: Options, rule: Rule) -> tuple[Options, str]:
    note = f"dropped {_fmt(rule.option, options[rule.option])}: {rule.reason}"
    return {name: value for name, value in options.items() if name != rule.option}, note


def _parse_size(name: str, value: str | None) -> int:
    """A variant's size, read by the knobs' one size parser; refused as MyCnfError, which is what
    translate()'s callers catch."""
    try:
        return parse_size(_fmt(name, value), value)
    except SizeError as exc:
        raise MyCnfError(str(exc)) from None


def _parse_count(name: str, value: str | None) -> int:
    if value is None or not (value.isascii() and value.isdigit()):  # "²" is a digit to str.isdigit, and no int
        raise MyCnfError(f"{_fmt(name, value)} is not a count: write a whole number")
    return int(value)


def _format_size(size: int) -> str:
    # Stop at G: MySQL before 8.0.14 does not read a T suffix.
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def _combine(options: Options, rule: Rule) -> tuple[Options, str]:
    count = options[rule.option]
    if rule.partner not in options:
        raise MyCnfError(
            f"{rule.option} is set without {rule.partner}: set both so {rule.target} can be computed"
        )
    size = options[rule.partner]
    total = _format_size(_parse_size(rule.partner, size) * _parse_count(rule.option, count))
    rest = {name: value for name, value in options.items() if name != rule.option}
    note = (
        f"{_fmt(rule.partner, size)} × {_fmt(rule.option, count)} → {rule.target}={total} ({rule.reason})"
    )
    return _replace(rest, rule.partner, rule.target, total), note


_ACTIONS: dict[str, Callable[[Options, Rule], tuple[Options, str]]] = {
    "rename": _rename,
    "drop": _drop,
    "combine": _combine,
}


def translate(
    options: Mapping[str, str | None], flavor: str, version: Version
) -> tuple[Options, list[str]]:
    """The seed's options as `flavor` `version` knows them, and one note per change."""
    if flavor not in FLAVORS:
        raise MyCnfError(f"unknown server flavor {flavor!r}: use one of {', '.join(FLAVORS)}")
    result = dict(options)
    notes: list[str] = []
    for rule in RULES:
        if rule.option in result and rule.applies(flavor, version):
            result, note = _ACTIONS[rule.action](result, rule)
            notes.append(note)
    return result, notes


# ---------------------------------------------------------------- checking

_HELP_OPTION = re.compile(r"  (?:-\S, )?--([A-Za-z0-9][A-Za-z0-9_.-]*)")
_TABLE_TITLE = "Variables (--variable-name=value)"


def known_options(help_text: str) -> set[str]:
    """Normalized option names a server binary knows, from its `--verbose --help`."""
    options_part, title, table_part = help_text.partition(_TABLE_TITLE)
    # The table's column titles end at a rule of dashes; its rows end at a blank line.
    _, rule, rows = table_part.partition("\n---")
    if not title or not rule:
        raise MyCnfError(
            f"no '{_TABLE_TITLE}' table in the help text: capture `--no-defaults --verbose --help`"
        )
    known: set[str] = set()
    for line in options_part.splitlines():
        # Option lines are indented two spaces, descriptions 22: a
        # "use --skip-x to disable" inside a description is not taken.
        option = _HELP_OPTION.match(line)
        if option:
            known.add(normalize_name(option.group(1)))
    for line in rows.splitlines()[1:]:
        if not line.strip():
            break
        name, _, value = line.partition(" ")
        name = normalize_name(name)
        known.add(name)
        # Only a true boolean takes a skip_ prefix sensibly (skip_x = x off);
        # ON/OFF columns are enums or plugin switches, not booleans.
        if value.strip() in ("TRUE", "FALSE") and not name.startswith("skip_"):
            known.add(f"skip_{name}")
    return known


def check_known(options: Mapping[str, str | None], known: set[str], variant: str, server: str) -> None:
    """Refuse, naming every one of them, options the server would reject at startup."""
    unknown = [name for name in options if name not in known]
    if unknown:
        files = f"my.cnf.d/{BASE_FILE}"
        if variant != BASE_VARIANT:
            files = f"my.cnf.d/{variant}.cnf or {files}"
        raise MyCnfError(
            f"variant {variant} asks for options {server} does not know: {', '.join(unknown)} "
            f"(fix {files} or add a translation rule)"
        )


# ---------------------------------------------------------------- rendering


def _apply_overrides(options: Mapping[str, str | None], overrides: Mapping[str, str]) -> Options:
    result = dict(options)
    for name, value in overrides.items():
        # A same-named option keeps its place; a new one goes at the end.
        result[normalize_name(name)] = value
    return result


def _render_value(name: str, value: str) -> str:
    if "\n" in value or "\r" in value:
        raise MyCnfError(f"{name}: value {value!r} spans lines: an option file value is one line")
    # The server would cut a value at '#' and strip its outer blanks.
    if "#" not in value and value == value.strip():
        return value
    quote = "'" if '"' in value else '"'
    if quote in value:
        raise MyCnfError(f"{name}: value {value!r} needs quotes but holds both kinds: simplify it")
    return f"{quote}{value}{quote}"


def render(options: Mapping[str, str | None], overrides: dict[str, str], header: list[str]) -> str:
    """Text of a [mysqld] group: header as comments, then `name = value` or bare `name`."""
    # Split header lines so that no text in a note can become an option line.
    lines = [f"# {part}".rstrip() for text in header for part in (text.splitlines() or [""])]
    lines.append("[mysqld]")
    for name, value in _apply_overrides(options, overrides).items():
        lines.append(name if value is None else f"{name} = {_render_value(name, value)}".rstrip())
    return "\n".join(lines) + "\n"


def _check_overrides_survive(
    seed: Mapping[str, str | None],
    options: Mapping[str, str | None],
    overrides: Mapping[str, str],
    notes: list[str],
    server: str,
) -> None:
    """Refuse overrides of seed options that translation renamed, folded or dropped.

    Such an override would land beside the replacement and lose to it: MySQL
    8.0.30 ignores innodb_log_file_size once innodb_redo_log_capacity is set.
    """
    replaced = [name for name in map(normalize_name, overrides) if name in seed and name not in options]
    if replaced:
        why = "; ".join(note for note in notes if any(name in note for name in replaced))
        raise MyCnfError(
            f"overrides of {', '.join(replaced)} would not take effect on {server} ({why}): "
            "override the option it became instead"
        )


def render_variant(
    cnf_dir: str,
    variant: str,
    flavor: str,
    version_text: str,
    known: set[str],
    overrides: dict[str, str],
) -> tuple[str, list[str]]:
    """The my.cnf for one variant on one server: load, translate, override, check, render."""
    seed = load_variant(cnf_dir, variant)
    version = parse_version(version_text)
    options, notes = translate(seed, flavor, version)
    server = f"{flavor} {_version_text(version)}"
    _check_overrides_survive(seed, options, overrides, notes, server)
    final = _apply_overrides(options, overrides)
    check_known(final, known, variant, server)
    sources = " + ".join(path.name for path in _variant_files(cnf_dir, variant))
    header = [
        f"innomatrix variant {variant} for {server} ({version_text.strip()})",
        f"generated from {sources} by innomatrix_host.mycnf: edit those, not this file",
    ]
    header += ["translation notes:", *(f"  {note}" for note in notes)] if notes else ["no translation needed"]
    if overrides:
        header.append("overrides: " + ", ".join(f"{name}={value}" for name, value in overrides.items()))
    return render(final, {}, header), notes
