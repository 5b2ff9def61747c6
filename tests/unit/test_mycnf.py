"""Tests for innomatrix_host.mycnf: seed variants A-D, their translation and checking."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from innomatrix_host import mycnf
from innomatrix_host.mycnf import MyCnfError

ROOT = Path(__file__).resolve().parents[2]

CNF_DIR = str(ROOT / "my.cnf.d")
# Excerpt of `mariadbd --no-defaults --verbose --help` from mariadbd
# 10.11.19-MariaDB-0+deb12u1 (Debian 12): the preamble, the option blocks and
# table rows of every option the translated seed uses, a few skip_/boolean
# examples, and the closing lines.
HELP_FIXTURE = ROOT / "tests" / "fixtures" / "mycnf" / "mariadbd-10.11.19-verbose-help.txt"
MARIADB_VERSION = "10.11.19-MariaDB-0+deb12u1"


@pytest.fixture(scope="module")
def fixture_known() -> set[str]:
    return mycnf.known_options(HELP_FIXTURE.read_text())


def assert_one_line(error: pytest.ExceptionInfo[MyCnfError]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- names and parsing


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("innodb_buffer_pool_size", "innodb_buffer_pool_size"),
        ("innodb-buffer-pool-size", "innodb_buffer_pool_size"),
        ("InnoDB_Buffer-Pool_SIZE", "innodb_buffer_pool_size"),
        ("loose-innodb-io-capacity", "innodb_io_capacity"),
        ("loose_skip_name_resolve", "skip_name_resolve"),
        ("  server-id ", "server_id"),
    ],
)
def test_normalize_name(raw: str, expected: str) -> None:
    assert mycnf.normalize_name(raw) == expected


def test_parse_cnf_values_comments_and_order() -> None:
    text = (
        "# leading comment\n"
        "; also a comment\n"
        "[mysqld]\n"
        "innodb-buffer-pool-size = 4G   # trailing comment\n"
        "\n"
        "   max_connections=5000\n"
        "skip-name-resolve\n"
        "myisam_recover   # bare, with a comment\n"
        'log_error = "/var/log/my sql#1.log"  # quoted hash is data\n'
        "init_connect = 'SET NAMES utf8mb4'\n"
        "innodb_data_home_dir =\n"
        "loose-innodb-io-capacity = 2000\n"
    )
    assert list(mycnf.parse_cnf(text, "t.cnf").items()) == [
        ("innodb_buffer_pool_size", "4G"),
        ("max_connections", "5000"),
        ("skip_name_resolve", None),
        ("myisam_recover", None),
        ("log_error", "/var/log/my sql#1.log"),
        ("init_connect", "SET NAMES utf8mb4"),
        ("innodb_data_home_dir", ""),
        ("innodb_io_capacity", "2000"),
    ]


def test_parse_cnf_keeps_server_groups_only() -> None:
    text = (
        "[client]\nport = 3307\n"
        "[mysqld]\nserver_id = 1\n"
        "[mysqldump]\nquick\nmax_allowed_packet = 1G\n"
        "[server]\nback_log = 50\n"
        "[mariadb]\nwait_timeout = 120\n"
        "[mysqld-8.0]\ninnodb_redo_log_capacity = 2G\n"
        "[ MariaDBD ]\nthread_stack = 192K\n"
    )
    assert mycnf.parse_cnf(text, "t.cnf") == {
        "server_id": "1",
        "back_log": "50",
        "wait_timeout": "120",
        "thread_stack": "192K",
    }


def test_parse_cnf_later_wins_in_first_place_across_spellings() -> None:
    text = "[mysqld]\ninnodb-io-capacity = 200\nback_log = 50\ninnodb_io_capacity = 300\n"
    assert list(mycnf.parse_cnf(text, "t.cnf").items()) == [
        ("innodb_io_capacity", "300"),
        ("back_log", "50"),
    ]


def test_parse_cnf_handles_crlf() -> None:
    assert mycnf.parse_cnf("[mysqld]\r\nback_log = 50\r\nskip-name-resolve\r\n", "t.cnf") == {
        "back_log": "50",
        "skip_name_resolve": None,
    }


@pytest.mark.parametrize(
    ("text", "line", "hint"),
    [
        ("back_log = 50\n", 1, "start the file with [mysqld]"),
        ("[mysqld\nback_log = 50\n", 1, "[mysqld]"),
        ("[]\n", 1, "[mysqld]"),
        ("[mysqld]\n\n= 50\n", 3, "name = value"),
        ("[mysqld]\nback log = 50\n", 2, "name = value"),
        ("[mysqld]\nmax connections\n", 2, "name = value"),
        ("[mysqld]\nloose- = 1\n", 2, "name = value"),
        ('[mysqld]\nlog_error = "/tmp/x.log\n', 2, "close the quote"),
        ("[mysqld]\nlog_error = '/tmp/x' y\n", 2, "quote the whole value"),
        ("[mysqld]\n!include /etc/mysql/other.cnf\n", 2, "not supported"),
        ("[client]\nport 3306\n", 2, "name = value"),
    ],
)
def test_parse_cnf_malformed_lines_name_source_and_line(text: str, line: int, hint: str) -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.parse_cnf(text, "my.cnf.d/X.cnf")
    message = assert_one_line(error)
    assert message.startswith(f"my.cnf.d/X.cnf:{line}: ")
    assert hint in message


# ---------------------------------------------------------------- the real variant files


def test_variant_ids_of_the_real_directory() -> None:
    assert mycnf.variant_ids(CNF_DIR) == ["A", "B", "C", "D"]


def test_every_real_file_starts_with_mysqld_and_a_comment() -> None:
    for name in ("base.cnf", "B.cnf", "C.cnf", "D.cnf"):
        lines = (Path(CNF_DIR) / name).read_text().splitlines()
        assert lines[0] == "[mysqld]", name
        assert lines[1].startswith("# Configuration "), name
    assert "Configuration A" in (Path(CNF_DIR) / "base.cnf").read_text()


def test_variant_a_is_the_post_list() -> None:
    a = mycnf.load_variant(CNF_DIR, "A")
    assert len(a) == 37
    assert a["innodb_buffer_pool_size"] == "4G"
    assert a["innodb_file_format"] == "barracuda"
    assert a["innodb_log_file_size"] == "1G"
    assert a["innodb_log_files_in_group"] == "2"
    assert a["serverid"] == "101"
    assert a["myisam_recover"] is None
    assert a["query_cache_type"] == "0"
    assert a["thread_stack"] == "192K"


def test_variants_b_and_c_add_their_options_to_a() -> None:
    a = mycnf.load_variant(CNF_DIR, "A")
    b = mycnf.load_variant(CNF_DIR, "B")
    c = mycnf.load_variant(CNF_DIR, "C")
    assert b == {**a, "innodb_read_io_threads": "16", "innodb_write_io_threads": "16"}
    assert c == {
        **a,
        "innodb_io_capacity": "30000",
        "innodb_adaptive_flushing_method": "keep_average",
        "innodb_flush_neighbor_pages": "none",
        "innodb_max_dirty_pages_pct": "60",
    }


def test_variant_d_is_b_union_c_over_a() -> None:
    a, b, c, d = (mycnf.load_variant(CNF_DIR, v) for v in "ABCD")
    assert d == {**a, **b, **c}
    assert list(d) == list({**b, **c})
    # D.cnf spells B's and C's options out itself rather than relying on them.
    d_only = mycnf.parse_cnf((Path(CNF_DIR) / "D.cnf").read_text(), "D.cnf")
    b_only = mycnf.parse_cnf((Path(CNF_DIR) / "B.cnf").read_text(), "B.cnf")
    c_only = mycnf.parse_cnf((Path(CNF_DIR) / "C.cnf").read_text(), "C.cnf")
    assert d_only == {**b_only, **c_only}


def test_load_variant_unknown_id_lists_accepted_ids() -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.load_variant(CNF_DIR, "E")
    message = assert_one_line(error)
    assert "'E'" in message
    assert "A, B, C, D" in message


def make_cnf_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "my.cnf.d"
    shutil.copytree(CNF_DIR, directory)
    return directory


def test_variant_ids_skips_base_hidden_and_other_files(tmp_path: Path) -> None:
    directory = make_cnf_dir(tmp_path)
    (directory / ".#C.cnf").write_text("[mysqld]\n")
    (directory / "README").write_text("not a variant\n")
    (directory / "E2.cnf").write_text("[mysqld]\nback_log = 80\n")
    assert mycnf.variant_ids(str(directory)) == ["A", "B", "C", "D", "E2"]
    assert mycnf.load_variant(str(directory), "E2")["back_log"] == "80"


def test_variant_ids_needs_base_cnf(tmp_path: Path) -> None:
    (tmp_path / "B.cnf").write_text("[mysqld]\n")
    with pytest.raises(MyCnfError) as error:
        mycnf.variant_ids(str(tmp_path))
    assert "base.cnf" in assert_one_line(error)


def test_variant_ids_refuses_a_cnf(tmp_path: Path) -> None:
    directory = make_cnf_dir(tmp_path)
    (directory / "A.cnf").write_text("[mysqld]\n")
    with pytest.raises(MyCnfError) as error:
        mycnf.variant_ids(str(directory))
    assert "variant A" in assert_one_line(error)


def test_load_variant_names_the_file_of_a_malformed_line(tmp_path: Path) -> None:
    directory = make_cnf_dir(tmp_path)
    (directory / "C.cnf").write_text("[mysqld]\ninnodb io capacity = 1\n")
    with pytest.raises(MyCnfError) as error:
        mycnf.load_variant(str(directory), "C")
    assert f"{directory / 'C.cnf'}:2:" in assert_one_line(error)


def test_load_variant_refuses_non_utf8(tmp_path: Path) -> None:
    directory = make_cnf_dir(tmp_path)
    (directory / "B.cnf").write_bytes(b"[mysqld]\n# caf\xe9\n")
    with pytest.raises(MyCnfError) as error:
        mycnf.load_variant(str(directory), "B")
    assert "UTF-8" in assert_one_line(error)


def test_variant_digest_hashes_base_then_variant_then_rules() -> None:
    base = (Path(CNF_DIR) / "base.cnf").read_bytes()
    c = (Path(CNF_DIR) / "C.cnf").read_bytes()
    rules = mycnf.rules_fingerprint().encode()
    assert mycnf.variant_digest(CNF_DIR, "A") == hashlib.sha256(base + rules).hexdigest()
    assert mycnf.variant_digest(CNF_DIR, "C") == hashlib.sha256(base + c + rules).hexdigest()
    digests = {mycnf.variant_digest(CNF_DIR, v) for v in "ABCD"}
    assert len(digests) == 4


def test_variant_digest_is_the_same_in_every_process() -> None:
    # Rules hold frozensets, whose order depends on PYTHONHASHSEED: the digest must not.
    code = "from innomatrix_host import mycnf; print(mycnf.variant_digest({!r}, 'C'))".format(CNF_DIR)
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT / "analysis")}).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(digests) == 1


def test_variant_digest_follows_edits(tmp_path: Path) -> None:
    directory = make_cnf_dir(tmp_path)
    before = {v: mycnf.variant_digest(str(directory), v) for v in "ABCD"}
    with (directory / "C.cnf").open("a") as handle:
        handle.write("innodb_lru_scan_depth = 2048\n")
    after_c = {v: mycnf.variant_digest(str(directory), v) for v in "ABCD"}
    assert [v for v in "ABCD" if after_c[v] != before[v]] == ["C"]
    with (directory / "base.cnf").open("a") as handle:
        handle.write("# a comment is an edit too\n")
    after_base = {v: mycnf.variant_digest(str(directory), v) for v in "ABCD"}
    assert all(after_base[v] != after_c[v] for v in "ABCD")


# ---------------------------------------------------------------- versions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.11.19-MariaDB-0+deb12u1", (10, 11, 19)),
        ("8.0.36-28", (8, 0, 36)),
        ("8.0.36", (8, 0, 36)),
        ("5.5.62-38.14-log", (5, 5, 62)),
        ("10.5", (10, 5)),
        ("mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n", (10, 11, 19)),
        ("/opt/mysql-5.7/bin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL))", (8, 0, 36)),
        ("5.5.5-10.11.19-MariaDB-0+deb12u1", (10, 11, 19)),
        ("5.5.62", (5, 5, 62)),
    ],
)
def test_parse_version(text: str, expected: tuple[int, ...]) -> None:
    assert mycnf.parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "MariaDB", "v10", "ten.eleven"])
def test_parse_version_refuses_garbage(text: str) -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.parse_version(text)
    assert "version" in assert_one_line(error)


# ---------------------------------------------------------------- translation rules


def translated(
    options: Mapping[str, str | None], flavor: str, version: tuple[int, ...]
) -> dict[str, str | None]:
    return mycnf.translate(options, flavor, version)[0]


@pytest.mark.parametrize("flavor", mycnf.FLAVORS)
@pytest.mark.parametrize("version", [(5, 5, 62), (8, 0, 36), (10, 11, 19)])
def test_serverid_becomes_server_id_everywhere(flavor: str, version: tuple[int, ...]) -> None:
    result, notes = mycnf.translate({"back_log": "50", "serverid": "101", "wait_timeout": "120"}, flavor, version)
    assert list(result.items()) == [("back_log", "50"), ("server_id", "101"), ("wait_timeout", "120")]
    assert notes == ["serverid=101 → server_id=101 (the post's typo: the variable is server_id)"]


@pytest.mark.parametrize("flavor", mycnf.FLAVORS)
def test_bare_myisam_recover_becomes_default(flavor: str) -> None:
    result, notes = mycnf.translate({"myisam_recover": None}, flavor, (8, 0, 36))
    assert result == {"myisam_recover_options": "DEFAULT"}
    assert notes[0].startswith("myisam_recover → myisam_recover_options=DEFAULT (")


def test_myisam_recover_with_a_value_keeps_it() -> None:
    assert translated({"myisam_recover": "BACKUP,FORCE"}, "mariadb", (10, 11)) == {
        "myisam_recover_options": "BACKUP,FORCE"
    }


def test_rename_onto_an_option_already_set_is_refused() -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.translate({"serverid": "101", "server_id": "7"}, "mysql", (8, 0, 36))
    message = assert_one_line(error)
    assert "serverid" in message and "server_id" in message


@pytest.mark.parametrize(
    ("flavor", "version", "renamed"),
    [
        ("mysql", (5, 5, 62), False),
        ("mysql", (5, 6, 0), True),
        ("percona", (5, 5, 62), False),
        ("percona", (5, 6, 51), True),
        ("percona", (8, 0, 36), True),
        ("mariadb", (5, 5, 68), False),
        ("mariadb", (10, 0), True),
        ("mariadb", (10, 11, 19), True),
    ],
)
def test_flush_neighbor_pages_rename_boundary(flavor: str, version: tuple[int, ...], renamed: bool) -> None:
    result, notes = mycnf.translate({"innodb_flush_neighbor_pages": "none"}, flavor, version)
    if renamed:
        assert result == {"innodb_flush_neighbors": "0"}
        assert notes[0].startswith("innodb_flush_neighbor_pages=none → innodb_flush_neighbors=0 (renamed in ")
    else:
        assert result == {"innodb_flush_neighbor_pages": "none"}
        assert notes == []


@pytest.mark.parametrize(
    ("seed", "server"),
    # Percona 5.5: area (=1) flushes the whole area, cont (=2) contiguous
    # pages only; MySQL 5.6: 1 = contiguous only, 2 = the whole area.
    [("none", "0"), ("0", "0"), ("area", "2"), ("AREA", "2"), ("1", "2"), ("cont", "1"), ("2", "1")],
)
def test_flush_neighbor_values_translate_by_meaning(seed: str, server: str) -> None:
    assert translated({"innodb_flush_neighbor_pages": seed}, "mysql", (8, 0, 36)) == {
        "innodb_flush_neighbors": server
    }


def test_flush_neighbor_unknown_value_is_refused() -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.translate({"innodb_flush_neighbor_pages": "some"}, "mariadb", (10, 11))
    message = assert_one_line(error)
    assert "innodb_flush_neighbor_pages=some" in message
    assert "none, 0, area" in message


@pytest.mark.parametrize(
    ("flavor", "version", "kept"),
    [
        ("percona", (5, 5, 62), True),
        ("percona", (5, 6, 0), False),
        ("percona", (5, 7, 44), False),
        ("percona", (8, 0, 36), False),
        ("mysql", (5, 5, 62), False),
        ("mysql", (8, 0, 36), False),
        ("mariadb", (5, 5, 68), True),
        ("mariadb", (10, 0), False),
        ("mariadb", (10, 11, 19), False),
    ],
)
def test_keep_average_exists_only_in_percona_55(flavor: str, version: tuple[int, ...], kept: bool) -> None:
    seed = {"innodb_adaptive_flushing_method": "keep_average", "innodb_io_capacity": "30000"}
    result, notes = mycnf.translate(seed, flavor, version)
    if kept:
        assert result == seed
        assert notes == []
    else:
        assert result == {"innodb_io_capacity": "30000"}
        assert notes == [
            "dropped innodb_adaptive_flushing_method=keep_average: exists only in Percona Server 5.5 "
            "(and MariaDB 5.5's XtraDB); later servers use MySQL 5.6 flushing"
        ]


@pytest.mark.parametrize(
    ("flavor", "version", "kept"),
    [
        ("mysql", (5, 7, 44), True),
        ("mysql", (8, 0, 0), False),
        ("percona", (5, 7, 44), True),
        ("percona", (8, 0, 36), False),
        ("mariadb", (10, 2, 44), True),
        ("mariadb", (10, 3, 0), False),
        ("mariadb", (10, 11, 19), False),
    ],
)
def test_innodb_file_format_boundary(flavor: str, version: tuple[int, ...], kept: bool) -> None:
    result, notes = mycnf.translate({"innodb_file_format": "barracuda"}, flavor, version)
    assert ("innodb_file_format" in result) is kept
    assert (notes == []) is kept
    if not kept:
        assert notes[0].startswith("dropped innodb_file_format=barracuda: ")


@pytest.mark.parametrize(
    ("flavor", "version", "kept"),
    [
        ("mysql", (5, 7, 44), True),
        ("mysql", (8, 0, 2), True),
        ("mysql", (8, 0, 3), False),
        ("mysql", (8, 4, 3), False),
        ("percona", (8, 0, 36), False),
        ("mariadb", (10, 11, 19), True),
        ("mariadb", (11, 4, 4), True),
    ],
)
def test_query_cache_boundary(flavor: str, version: tuple[int, ...], kept: bool) -> None:
    seed = {"query_cache_size": "0", "query_cache_type": "0"}
    result, notes = mycnf.translate(seed, flavor, version)
    assert result == (seed if kept else {})
    assert len(notes) == (0 if kept else 2)


@pytest.mark.parametrize(
    ("flavor", "version", "kept"),
    [
        ("mysql", (8, 0, 29), True),
        ("mysql", (8, 0, 30), False),
        ("percona", (8, 0, 29), True),
        ("percona", (8, 0, 30), False),
        ("mariadb", (11, 4, 4), True),
    ],
)
def test_myisam_repair_threads_boundary(flavor: str, version: tuple[int, ...], kept: bool) -> None:
    result = translated({"myisam_repair_threads": "1"}, flavor, version)
    assert ("myisam_repair_threads" in result) is kept


REDO_SEED = {
    "innodb_log_buffer_size": "128M",
    "innodb_log_file_size": "1G",
    "innodb_flush_log_at_trx_commit": "1",
    "innodb_log_files_in_group": "2",
    "innodb_purge_threads": "1",
}


@pytest.mark.parametrize("flavor", ["mysql", "percona"])
def test_redo_log_before_mysql_8030_is_kept(flavor: str) -> None:
    assert mycnf.translate(REDO_SEED, flavor, (8, 0, 29)) == (REDO_SEED, [])


@pytest.mark.parametrize("flavor", ["mysql", "percona"])
@pytest.mark.parametrize("version", [(8, 0, 30), (8, 4, 3)])
def test_redo_log_becomes_capacity_from_mysql_8030(flavor: str, version: tuple[int, ...]) -> None:
    result, notes = mycnf.translate(REDO_SEED, flavor, version)
    assert list(result.items()) == [
        ("innodb_log_buffer_size", "128M"),
        ("innodb_redo_log_capacity", "2G"),
        ("innodb_flush_log_at_trx_commit", "1"),
        ("innodb_purge_threads", "1"),
    ]
    assert notes == [
        "innodb_log_file_size=1G × innodb_log_files_in_group=2 → innodb_redo_log_capacity=2G "
        "(innodb_redo_log_capacity replaces both in MySQL 8.0.30)"
    ]


def test_redo_log_before_mariadb_105_is_kept() -> None:
    assert mycnf.translate(REDO_SEED, "mariadb", (10, 4, 34)) == (REDO_SEED, [])


@pytest.mark.parametrize("version", [(10, 5, 0), (10, 11, 19), (11, 4, 4)])
def test_redo_log_is_one_file_from_mariadb_105(version: tuple[int, ...]) -> None:
    result, notes = mycnf.translate(REDO_SEED, "mariadb", version)
    assert list(result.items()) == [
        ("innodb_log_buffer_size", "128M"),
        ("innodb_log_file_size", "2G"),
        ("innodb_flush_log_at_trx_commit", "1"),
        ("innodb_purge_threads", "1"),
    ]
    assert notes[0].startswith("innodb_log_file_size=1G × innodb_log_files_in_group=2 → innodb_log_file_size=2G (")


@pytest.mark.parametrize(
    ("size", "count", "expected"),
    [
        ("1G", "2", "2G"),
        ("768M", "3", "2304M"),
        ("512m", "2", "1G"),
        ("1073741824", "2", "2G"),
        ("1000", "3", "3000"),
        ("512K", "2", "1M"),
        ("1T", "2", "2048G"),
    ],
)
def test_redo_log_product_keeps_an_exact_unit(size: str, count: str, expected: str) -> None:
    seed = {"innodb_log_file_size": size, "innodb_log_files_in_group": count}
    assert translated(seed, "mysql", (8, 0, 36)) == {"innodb_redo_log_capacity": expected}
    assert translated(seed, "mariadb", (10, 11)) == {"innodb_log_file_size": expected}


def test_redo_log_files_in_group_alone_is_refused() -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.translate({"innodb_log_files_in_group": "2"}, "mysql", (8, 0, 36))
    assert "innodb_log_file_size" in assert_one_line(error)


@pytest.mark.parametrize(
    ("size", "count", "bad"),
    [
        ("1Q", "2", "innodb_log_file_size=1Q"),
        ("1G", "two", "innodb_log_files_in_group=two"),
        ("1G", "²", "innodb_log_files_in_group=² is not a count"),  # a digit to str.isdigit, and no int
        (None, "2", "innodb_log_file_size"),
    ],
)
def test_redo_log_bad_factors_are_refused(size: str | None, count: str, bad: str) -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.translate({"innodb_log_file_size": size, "innodb_log_files_in_group": count}, "mariadb", (10, 11))
    assert bad in assert_one_line(error)


def test_redo_capacity_already_set_is_refused() -> None:
    seed = {**REDO_SEED, "innodb_redo_log_capacity": "4G"}
    with pytest.raises(MyCnfError) as error:
        mycnf.translate(seed, "mysql", (8, 0, 36))
    assert "innodb_redo_log_capacity" in assert_one_line(error)


def test_translate_refuses_an_unknown_flavor() -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.translate({"back_log": "50"}, "oracle", (8, 0, 36))
    message = assert_one_line(error)
    assert "'oracle'" in message and "mariadb, mysql, percona" in message


def test_translate_leaves_its_input_alone() -> None:
    seed = mycnf.load_variant(CNF_DIR, "D")
    copy = dict(seed)
    mycnf.translate(seed, "mysql", (8, 0, 36))
    assert seed == copy


def test_no_two_rules_apply_to_one_option_on_one_server() -> None:
    versions = [(0,), (5, 5, 62), (5, 6, 0), (5, 7, 44), (8, 0, 0), (8, 0, 3), (8, 0, 29), (8, 0, 30),
                (8, 4, 3), (10, 0), (10, 2), (10, 3), (10, 4), (10, 5), (10, 6), (10, 11, 19), (11, 4), (99,)]
    for flavor in mycnf.FLAVORS:
        for version in versions:
            options = [rule.option for rule in mycnf.RULES if rule.applies(flavor, version)]
            assert len(options) == len(set(options)), (flavor, version)
    for rule in mycnf.RULES:
        assert rule.flavors <= set(mycnf.FLAVORS), rule
        assert rule.option == mycnf.normalize_name(rule.option), rule
        assert rule.reason, rule


@pytest.mark.parametrize(
    ("flavor", "version", "absent", "present"),
    [
        (
            "mysql", (8, 0, 36),
            {"innodb_file_format", "query_cache_size", "query_cache_type", "myisam_repair_threads",
             "innodb_log_file_size", "innodb_log_files_in_group", "innodb_adaptive_flushing_method",
             "innodb_flush_neighbor_pages", "serverid", "myisam_recover"},
            {"innodb_redo_log_capacity": "2G", "innodb_flush_neighbors": "0", "server_id": "101",
             "myisam_recover_options": "DEFAULT", "innodb_purge_threads": "1", "thread_stack": "192K"},
        ),
        (
            "mariadb", (10, 11, 19),
            {"innodb_file_format", "innodb_log_files_in_group", "innodb_adaptive_flushing_method",
             "innodb_flush_neighbor_pages", "serverid", "myisam_recover", "innodb_redo_log_capacity"},
            {"innodb_log_file_size": "2G", "innodb_flush_neighbors": "0", "query_cache_type": "0",
             "query_cache_size": "0", "myisam_repair_threads": "1", "server_id": "101"},
        ),
        (
            "percona", (5, 5, 62),
            {"serverid", "myisam_recover"},
            {"innodb_file_format": "barracuda", "innodb_adaptive_flushing_method": "keep_average",
             "innodb_flush_neighbor_pages": "none", "innodb_log_file_size": "1G",
             "innodb_log_files_in_group": "2", "query_cache_size": "0"},
        ),
    ],
)
def test_variant_d_translated_for_three_servers(
    flavor: str, version: tuple[int, ...], absent: set[str], present: dict[str, str]
) -> None:
    result = translated(mycnf.load_variant(CNF_DIR, "D"), flavor, version)
    assert not absent & set(result)
    assert {name: result.get(name) for name in present} == present


# ---------------------------------------------------------------- known options


def test_known_options_reads_both_sections(fixture_known: set[str]) -> None:
    # option lines, long and short forms
    assert {"innodb_buffer_pool_size", "innodb_flush_neighbors", "ansi", "log_bin"} <= fixture_known
    # names printed with capitals are normalized
    assert "wsrep_slave_fk_checks" in fixture_known
    # an option printed as --skip-x is known as skip_x, and x alone is not
    assert {"skip_name_resolve", "skip_grant_tables"} <= fixture_known
    assert "name_resolve" not in fixture_known
    assert "skip_skip_name_resolve" not in fixture_known


def test_known_options_adds_skip_for_booleans_only(fixture_known: set[str]) -> None:
    assert {"skip_innodb_doublewrite", "skip_external_locking", "skip_innodb_file_per_table",
            "skip_wsrep_slave_fk_checks"} <= fixture_known
    # numbers, sizes and enums (query_cache_type prints OFF) take no skip_
    assert not {"skip_innodb_buffer_pool_size", "skip_query_cache_type", "skip_log_bin"} & fixture_known


def test_known_options_lacks_what_mariadb_1011_dropped(fixture_known: set[str]) -> None:
    assert not {"innodb_file_format", "innodb_log_files_in_group", "innodb_flush_neighbor_pages",
                "innodb_adaptive_flushing_method", "myisam_recover", "serverid",
                "innodb_redo_log_capacity"} & fixture_known


def test_known_options_ignores_descriptions_and_preamble(fixture_known: set[str]) -> None:
    # "--print-defaults" is in the preamble at column 0; "--skip-..." inside
    # descriptions is indented 22 columns.
    assert "print_defaults" not in fixture_known
    assert "defaults_file" not in fixture_known
    assert all(" " not in name and name == name.lower() for name in fixture_known)


def test_known_options_table_rows_alone_are_enough() -> None:
    text = (
        "Variables (--variable-name=value)\n"
        "and boolean options {FALSE|TRUE}  Value (after reading options)\n"
        "--------------------------------- -------------\n"
        "innodb-doublewrite                TRUE\n"
        "wsrep-node-address                \n"
        "\n"
        "server-id   1\n"
    )
    assert mycnf.known_options(text) == {"innodb_doublewrite", "skip_innodb_doublewrite", "wsrep_node_address"}


def test_known_options_refuses_text_without_the_table() -> None:
    text = HELP_FIXTURE.read_text().split("Variables (--variable-name=value)")[0]
    with pytest.raises(MyCnfError) as error:
        mycnf.known_options(text)
    assert "--verbose --help" in assert_one_line(error)


def test_check_known_names_every_unknown_option_and_the_variant() -> None:
    options = {"back_log": "50", "innodb_foo": "1", "max_connections": "10", "innodb_bar": None}
    with pytest.raises(MyCnfError) as error:
        mycnf.check_known(options, {"back_log", "max_connections"}, "C", "mariadb 10.11.19")
    assert assert_one_line(error) == (
        "variant C asks for options mariadb 10.11.19 does not know: innodb_foo, innodb_bar "
        "(fix my.cnf.d/C.cnf or my.cnf.d/base.cnf or add a translation rule)"
    )


def test_check_known_for_a_points_at_base_only() -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.check_known({"innodb_foo": "1"}, set(), "A", "mysql 8.0.36")
    message = assert_one_line(error)
    assert "variant A" in message and "my.cnf.d/base.cnf or add" in message


def test_check_known_passes_known_options() -> None:
    mycnf.check_known({"back_log": "50", "skip_name_resolve": None}, {"back_log", "skip_name_resolve"}, "B", "x")


def test_untranslated_seed_is_refused_by_mariadb_1011(fixture_known: set[str]) -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.check_known(mycnf.load_variant(CNF_DIR, "D"), fixture_known, "D", "mariadb 10.11.19")
    message = assert_one_line(error)
    for name in ("innodb_file_format", "innodb_log_files_in_group", "serverid", "myisam_recover",
                 "innodb_adaptive_flushing_method", "innodb_flush_neighbor_pages"):
        assert name in message


# ---------------------------------------------------------------- rendering


def test_render_header_order_overrides_and_bare_options() -> None:
    options = {"innodb_buffer_pool_size": "4G", "skip_name_resolve": None, "back_log": "50"}
    text = mycnf.render(options, {"innodb-buffer-pool-size": "8G", "max_connections": "300"}, ["variant B", ""])
    assert text == (
        "# variant B\n"
        "#\n"
        "[mysqld]\n"
        "innodb_buffer_pool_size = 8G\n"
        "skip_name_resolve\n"
        "back_log = 50\n"
        "max_connections = 300\n"
    )


def test_render_cannot_be_fooled_by_a_multiline_header() -> None:
    text = mycnf.render({}, {}, ["note one\ninnodb_foo = 1"])
    assert text == "# note one\n# innodb_foo = 1\n[mysqld]\n"


@pytest.mark.parametrize(
    "value",
    ["/var/log/my sql#1.log", "  padded ", "", 'say "hi" #1', "SET NAMES utf8mb4", "'kept quotes'"],
)
def test_render_round_trips_through_parse(value: str) -> None:
    options = {"init_connect": value, "back_log": "50", "skip_name_resolve": None}
    assert mycnf.parse_cnf(mycnf.render(options, {}, ["x"]), "rendered") == {
        **options,
        # the server strips one pair of outer quotes, and so does parse_cnf
        "init_connect": value.strip("'") if value.startswith("'") else value,
    }


@pytest.mark.parametrize("value", ["two\nlines", "both ' and \" and #"])
def test_render_refuses_values_it_cannot_write(value: str) -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.render({"init_connect": value}, {}, [])
    assert "init_connect" in assert_one_line(error)


def test_render_variant_for_mariadb_1011_with_the_fixture(fixture_known: set[str]) -> None:
    text, notes = mycnf.render_variant(
        CNF_DIR, "C", "mariadb", MARIADB_VERSION, fixture_known, {"innodb_buffer_pool_size": "8G"}
    )
    lines = text.splitlines()
    assert lines[0] == f"# innomatrix variant C for mariadb 10.11.19 ({MARIADB_VERSION})"
    assert "base.cnf + C.cnf" in lines[1]
    assert all(f"#   {note}" in lines for note in notes)
    assert "# overrides: innodb_buffer_pool_size=8G" in lines
    assert len(notes) == 6
    rendered = mycnf.parse_cnf(text, "rendered")
    assert rendered["innodb_buffer_pool_size"] == "8G"
    assert list(rendered)[0] == "innodb_buffer_pool_size"
    assert rendered["innodb_flush_neighbors"] == "0"
    assert rendered["innodb_log_file_size"] == "2G"
    assert "innodb_adaptive_flushing_method" not in rendered
    assert set(rendered) <= fixture_known


@pytest.mark.parametrize("variant", ["A", "B", "C", "D"])
def test_every_variant_renders_for_the_fixture_server(variant: str, fixture_known: set[str]) -> None:
    text, _ = mycnf.render_variant(CNF_DIR, variant, "mariadb", MARIADB_VERSION, fixture_known, {})
    assert set(mycnf.parse_cnf(text, "rendered")) <= fixture_known


def test_render_variant_refuses_an_override_the_server_does_not_know(fixture_known: set[str]) -> None:
    with pytest.raises(MyCnfError) as error:
        mycnf.render_variant(
            CNF_DIR, "B", "mariadb", MARIADB_VERSION, fixture_known, {"innodb_redo_log_capacity": "2G"}
        )
    assert assert_one_line(error).startswith(
        "variant B asks for options mariadb 10.11.19 does not know: innodb_redo_log_capacity "
    )


def test_render_variant_override_of_the_single_mariadb_redo_file(fixture_known: set[str]) -> None:
    text, _ = mycnf.render_variant(
        CNF_DIR, "A", "mariadb", MARIADB_VERSION, fixture_known, {"innodb_log_file_size": "256M"}
    )
    assert mycnf.parse_cnf(text, "rendered")["innodb_log_file_size"] == "256M"


def test_render_variant_refuses_an_override_that_translation_replaced() -> None:
    # On MySQL 8.0.30+ the seed's redo log became innodb_redo_log_capacity;
    # innodb_log_file_size is still known there but ignored beside it.
    seed, _ = mycnf.translate(mycnf.load_variant(CNF_DIR, "A"), "mysql", (8, 0, 36))
    known = set(seed) | {"innodb_log_file_size"}
    with pytest.raises(MyCnfError) as error:
        mycnf.render_variant(CNF_DIR, "A", "mysql", "8.0.36", known, {"innodb_log_file_size": "256M"})
    message = assert_one_line(error)
    assert message.startswith("overrides of innodb_log_file_size would not take effect on mysql 8.0.36 (")
    assert "innodb_redo_log_capacity=2G" in message
    text, _ = mycnf.render_variant(CNF_DIR, "A", "mysql", "8.0.36", known, {"innodb_redo_log_capacity": "512M"})
    assert mycnf.parse_cnf(text, "rendered")["innodb_redo_log_capacity"] == "512M"


def test_render_variant_for_old_mariadb_keeps_what_it_knows(fixture_known: set[str]) -> None:
    # MariaDB 10.4 still has innodb_log_files_in_group, which 10.11's list lacks.
    with pytest.raises(MyCnfError) as error:
        mycnf.render_variant(CNF_DIR, "A", "mariadb", "10.4.34-MariaDB", fixture_known, {})
    assert "innodb_log_files_in_group" in assert_one_line(error)


# ---------------------------------------------------------------- the installed server


def installed_mariadbd() -> tuple[str, str]:
    binary = shutil.which("mariadbd")
    if binary is None:
        pytest.skip("mariadbd is not on PATH: the installed-server check needs the real binary")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True, timeout=60).stdout
    if "mariadb" not in version.lower():
        pytest.skip(f"mariadbd on PATH is not MariaDB: {version.strip()!r}")
    help_text = subprocess.run(
        [binary, "--no-defaults", "--verbose", "--help"], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return version, help_text


@pytest.fixture(scope="module")
def installed_server() -> tuple[str, set[str]]:
    version, help_text = installed_mariadbd()
    return version, mycnf.known_options(help_text)


@pytest.mark.parametrize("variant", ["A", "B", "C", "D"])
def test_every_variant_has_no_unknown_option_on_the_installed_mariadb(
    variant: str, installed_server: tuple[str, set[str]]
) -> None:
    version, known = installed_server
    assert variant in mycnf.variant_ids(CNF_DIR)
    text, _ = mycnf.render_variant(CNF_DIR, variant, "mariadb", version, known, {"innodb_buffer_pool_size": "1G"})
    rendered = mycnf.parse_cnf(text, f"variant {variant}")
    unknown = sorted(set(rendered) - known)
    assert unknown == [], f"variant {variant} on {version.strip()}: {unknown}"
