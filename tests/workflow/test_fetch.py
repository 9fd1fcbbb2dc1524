"""Download and resolution against a real HTTP server on 127.0.0.1 (issue 5 item 3).

Every failure must leave nothing at the destination (or in the download
directory) that a later run would trust, and a later successful run must
proceed.  The server is http.server in a thread with a scripted handler.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from glfs_workflow.fetch import FetchError, download, fetch_dataset_files, resolve_file

BODY = b"gene\tS1\tS2\n" + b"".join(f"G{i}\t{i}.5\t{2 * i}.25\n".encode() for i in range(2000))
SHA = hashlib.sha256(BODY).hexdigest()
FAST = {"retries": 3, "timeout": 1.0, "backoff": 0.01}


class _Handler(http.server.BaseHTTPRequestHandler):
    """Behaviour chosen by path: /ok, /404, /flaky (500 twice then ok), /stall, /short."""

    counts: dict = {}
    stall_release = threading.Event()

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _ok(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_GET(self):  # noqa: N802 - http.server API
        path = self.path.split("?")[0]
        n = self.counts[path] = self.counts.get(path, 0) + 1
        if path.startswith("/ok"):
            self._ok()
        elif path == "/404":
            self.send_error(404, "Not Found")
        elif path == "/flaky":
            if n <= 2:
                self.send_error(500, "Internal Server Error")
            else:
                self._ok()
        elif path == "/stall":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:100])
            self.wfile.flush()
            self.stall_release.wait(5)  # far longer than the client timeout
        elif path == "/short":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[: len(BODY) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif path == "/always500":
            self.send_error(500, "Internal Server Error")
        else:
            self.send_error(404, "Not Found")


@pytest.fixture(scope="module")
def server():
    _Handler.counts = {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    _Handler.stall_release.set()
    httpd.shutdown()
    httpd.server_close()


def _leftovers(d: Path):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_success_writes_verified_file(server, tmp_path):
    dest = tmp_path / "x.tsv"
    rec = download(f"{server}/ok", dest, sha256=SHA, **FAST)
    assert dest.read_bytes() == BODY
    assert rec["sha256"] == SHA and rec["size"] == len(BODY) and rec["attempts"] == 1
    assert _leftovers(tmp_path) == ["x.tsv"]


def test_404_fails_at_once_and_leaves_nothing(server, tmp_path):
    dest = tmp_path / "x.tsv"
    with pytest.raises(FetchError, match=r"404.*not retried"):
        download(f"{server}/404", dest, **FAST)
    assert _handler_count("/404") == 1
    assert _leftovers(tmp_path) == []


def _handler_count(path):
    return _Handler.counts.get(path, 0)


def test_500_twice_then_success_is_retried(server, tmp_path):
    dest = tmp_path / "x.tsv"
    rec = download(f"{server}/flaky", dest, sha256=SHA, **FAST)
    assert rec["attempts"] == 3
    assert dest.read_bytes() == BODY
    assert _leftovers(tmp_path) == ["x.tsv"]


def test_persistent_500_gives_up_after_retries(server, tmp_path):
    dest = tmp_path / "x.tsv"
    before = _handler_count("/always500")
    with pytest.raises(FetchError, match=r"after 3 attempts.*HTTP 500"):
        download(f"{server}/always500", dest, retries=2, timeout=1.0, backoff=0.01)
    assert _handler_count("/always500") - before == 3
    assert _leftovers(tmp_path) == []


def test_stalled_connection_times_out(server, tmp_path):
    dest = tmp_path / "x.tsv"
    with pytest.raises(FetchError, match=r"(?i)timed? ?out"):
        download(f"{server}/stall", dest, retries=1, timeout=0.3, backoff=0.01)
    assert _leftovers(tmp_path) == []


def test_body_cut_short_is_rejected(server, tmp_path):
    dest = tmp_path / "x.tsv"
    with pytest.raises(FetchError, match=r"cut short|IncompleteRead"):
        download(f"{server}/short", dest, retries=1, timeout=1.0, backoff=0.01)
    assert _leftovers(tmp_path) == []


def test_checksum_mismatch_keeps_nothing_and_old_file_survives(server, tmp_path):
    dest = tmp_path / "x.tsv"
    dest.write_bytes(b"previous good content")
    wrong = "0" * 64
    with pytest.raises(FetchError, match=rf"checksum mismatch.*expected sha256 {wrong}.*got {SHA}"):
        download(f"{server}/ok", dest, sha256=wrong, **FAST)
    assert dest.read_bytes() == b"previous good content"
    assert _leftovers(tmp_path) == ["x.tsv"]


def test_failed_resolve_then_later_success_proceeds(server, tmp_path):
    dl = tmp_path / "dl"
    spec = {"url": f"{server}/short", "sha256": SHA}
    with pytest.raises(FetchError, match=r"dataset 'd' file 'expression'"):
        resolve_file(spec, dataset="d", role="expression", download_dir=str(dl), retries=0, timeout=1, backoff=0)
    assert _leftovers(dl / "d") == []
    # the "server is fixed": the same file name now served completely
    spec2 = {"url": f"{server}/ok/short", "sha256": SHA, "filename": "short"}
    rec = resolve_file(spec2, dataset="d", role="expression", download_dir=str(dl), **FAST)
    assert rec["source"] == "download" and rec["sha256"] == SHA
    assert (dl / "d" / "short").read_bytes() == BODY
    # a second run trusts the verified download without the network
    rec2 = resolve_file(
        {"url": "http://127.0.0.1:9/unreachable/short", "sha256": SHA},
        dataset="d",
        role="expression",
        download_dir=str(dl),
        **FAST,
    )
    assert rec2["source"] == "cache" and rec2["path"] == str(dl / "d" / "short")


def test_corrupt_cached_download_is_replaced(server, tmp_path):
    dl = tmp_path / "dl"
    (dl / "d").mkdir(parents=True)
    (dl / "d" / "x.tsv").write_bytes(b"corrupt")
    rec = resolve_file(
        {"url": f"{server}/ok/x.tsv", "sha256": SHA}, dataset="d", role="expression", download_dir=str(dl), **FAST
    )
    assert rec["source"] == "download"
    assert (dl / "d" / "x.tsv").read_bytes() == BODY


def test_file_url(tmp_path):
    src = tmp_path / "src.tsv"
    src.write_bytes(BODY)
    rec = resolve_file(
        {"url": src.as_uri(), "sha256": SHA}, dataset="d", role="expression", download_dir=str(tmp_path / "dl"), **FAST
    )
    assert rec["source"] == "download"
    assert Path(rec["path"]).read_bytes() == BODY
    with pytest.raises(FetchError, match=r"missing\.tsv"):
        resolve_file(
            (tmp_path / "missing.tsv").as_uri(),
            dataset="d",
            role="expression",
            download_dir=str(tmp_path / "dl"),
            **FAST,
        )


def test_mirror_resolution_order_and_checksum(server, tmp_path):
    url = "http://127.0.0.1:9/never/used.tsv"  # port 9: nothing listens; must not be contacted
    mirror_file = tmp_path / "m" / "own.tsv"
    mirror_file.parent.mkdir()
    mirror_file.write_bytes(BODY)
    rec = resolve_file({"url": url, "sha256": SHA, "mirror": str(mirror_file)}, dataset="d", role="expression", **FAST)
    assert rec["source"] == "mirror" and rec["path"] == str(mirror_file)
    # mirror directory: <mirror>/<dataset>/<filename> first, then <mirror>/<filename>
    mdir = tmp_path / "mdir"
    (mdir / "d").mkdir(parents=True)
    (mdir / "used.tsv").write_bytes(b"wrong level")
    (mdir / "d" / "used.tsv").write_bytes(BODY)
    rec = resolve_file({"url": url, "sha256": SHA}, dataset="d", role="expression", mirror_dir=str(mdir), **FAST)
    assert rec["path"] == str(mdir / "d" / "used.tsv")
    # a mirror with the wrong checksum is an error naming the mirror file
    (mdir / "d" / "used.tsv").write_bytes(b"tampered")
    with pytest.raises(FetchError, match=r"checksum mismatch for .*mdir/d/used\.tsv"):
        resolve_file({"url": url, "sha256": SHA}, dataset="d", role="expression", mirror_dir=str(mdir), **FAST)


def test_local_path_checksum_and_missing(tmp_path):
    f = tmp_path / "a.tsv"
    f.write_bytes(BODY)
    assert resolve_file({"url": str(f), "sha256": SHA}, dataset="d", role="labels")["source"] == "local"
    with pytest.raises(FetchError, match=r"labels.*checksum mismatch for .*a\.tsv"):
        resolve_file({"url": str(f), "sha256": "1" * 64}, dataset="d", role="labels")
    with pytest.raises(FetchError, match=r"nope\.tsv does not exist"):
        resolve_file(str(tmp_path / "nope.tsv"), dataset="d", role="labels")


def test_fetch_dataset_files_records_provenance(server, tmp_path):
    cfg = {"expression": f"{server}/ok/e.tsv", "sha256": SHA, "labels": None}
    prov = fetch_dataset_files("d", cfg, {"download_dir": str(tmp_path), **FAST})
    rec = prov["files"]["expression"]
    assert set(rec) >= {"source", "url", "path", "sha256", "size", "time"}
    assert rec["url"] == f"{server}/ok/e.tsv" and rec["size"] == len(BODY)
    json.dumps(prov)  # plain values only


SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.mark.workflow
def test_fetch_rule_over_http_then_cache(server, tmp_path, mini_workflow):
    """The fetch_dataset rule: a failed download leaves no provenance; the rerun succeeds."""
    wf = mini_workflow(tmp_path)
    cfg = {
        "run": ["web"],
        "fetch": {"download_dir": "dl", "retries": 0, "timeout": 1, "backoff": 0},
        "datasets": {"web": {"expression": {"url": f"{server}/short", "sha256": SHA}}},
    }
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    cmd = [
        SNAKEMAKE,
        "-s",
        str(wf),
        "-d",
        str(tmp_path),
        "--cores",
        "1",
        "results/web/provenance.json",
        "--configfile",
        str(tmp_path / "c.yaml"),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert "cut short" in (tmp_path / "logs/fetch_dataset/web.log").read_text()
    assert not (tmp_path / "results/web/provenance.json").exists()
    assert _leftovers(tmp_path / "dl" / "web") == []
    cfg["datasets"]["web"]["expression"] = {"url": f"{server}/ok/short", "sha256": SHA, "filename": "short"}
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    prov = json.loads((tmp_path / "results/web/provenance.json").read_text())
    assert prov["files"]["expression"]["sha256"] == SHA
    assert prov["files"]["expression"]["source"] == "download"


def test_stale_temporaries_of_a_killed_run_are_removed(server, tmp_path):
    stale = tmp_path / ".x.tsv.k1ll3d.part"
    stale.write_bytes(BODY[:10])
    download(f"{server}/ok", tmp_path / "x.tsv", sha256=SHA, **FAST)
    assert _leftovers(tmp_path) == ["x.tsv"]


# Issue 19 item 1: a download has a size cap and a total time limit; item 2: a .gz file
# may not expand beyond a cap.  Every case names the URL (or file) and the limit and leaves nothing.


class _EndlessHandler(http.server.BaseHTTPRequestHandler):
    """/endless: a body without Content-Length that never ends; /huge: a Content-Length of 1 TB;
    /drip: a byte every 50 ms (each read well within the socket timeout), never ending."""

    counts: dict = {}

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - http.server API
        path = self.path.split("?")[0]
        self.counts[path] = self.counts.get(path, 0) + 1
        self.send_response(200)
        if path == "/huge":
            self.send_header("Content-Length", str(10**12))
        self.end_headers()
        block = b"G\t1.0\t2.0\n" * 6000
        try:
            while True:
                if path == "/drip":
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
                else:
                    self.wfile.write(block)
        except OSError:  # the client hung up: the test's point
            pass
        self.close_connection = True


@pytest.fixture(scope="module")
def endless_server():
    _EndlessHandler.counts = {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EndlessHandler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_endless_body_is_stopped_at_the_size_cap(endless_server, tmp_path):
    dest = tmp_path / "x.tsv"
    url = f"{endless_server}/endless"
    with pytest.raises(
        FetchError,
        match=rf"download of {url} stopped: more than 200000 bytes received.*size limit.*fetch\.max_download_gb",
    ) as err:
        download(url, dest, max_bytes=200_000, **FAST)
    assert "not retried" in str(err.value)
    assert _EndlessHandler.counts["/endless"] == 1  # the cap is final: no retry
    assert _leftovers(tmp_path) == []


def test_content_length_above_the_cap_is_refused_before_the_body(endless_server, tmp_path):
    url = f"{endless_server}/huge"
    with pytest.raises(
        FetchError,
        match=rf"download of {url} refused: Content-Length is 1000000000000 bytes, above the size limit of 200000 bytes",
    ):
        download(url, tmp_path / "x.tsv", max_bytes=200_000, **FAST)
    assert _leftovers(tmp_path) == []


def test_a_download_that_never_finishes_is_stopped_at_the_time_limit(endless_server, tmp_path):
    url = f"{endless_server}/drip"
    t0 = time.monotonic()
    with pytest.raises(
        FetchError,
        match=rf"download of {url} stopped: not complete after 0\.5 s \(fetch\.max_time\), \d+ bytes received",
    ):
        download(url, tmp_path / "x.tsv", max_time=0.5, **FAST)
    assert time.monotonic() - t0 < 5  # stopped near the limit, not after retries or forever
    assert _leftovers(tmp_path) == []


def test_time_limit_covers_the_retries(server, tmp_path):
    """The limit is total: retries and their waits count too."""
    url = f"{server}/always500"
    with pytest.raises(FetchError, match=r"not complete after 0\.3 s \(fetch\.max_time\)"):
        download(url, tmp_path / "x.tsv", retries=50, timeout=1.0, backoff=0.2, max_time=0.3)
    assert _leftovers(tmp_path) == []


def test_fetch_config_caps_reach_the_download(endless_server, tmp_path):
    """fetch.max_download_gb of the config: the error names the dataset, file, URL and key."""
    dl = tmp_path / "dl"
    cfg = {"expression": f"{endless_server}/endless/e.tsv", "labels": None}
    fetch = {"download_dir": str(dl), "max_download_gb": 0.0002, **FAST}  # 214,748 bytes
    with pytest.raises(
        FetchError,
        match=r"dataset 'd' file 'expression': download of .*/endless/e\.tsv stopped: more than 214748 bytes.*fetch\.max_download_gb = 0\.0002",
    ):
        fetch_dataset_files("d", cfg, fetch)
    assert _leftovers(dl / "d") == []


def _gzip_bomb(path: Path, expanded: int) -> Path:
    import gzip

    with gzip.open(path, "wb") as fh:
        fh.write(b"gene\tS1\tS2\n")
        zeros = b"0" * (1 << 20)
        for _ in range(expanded >> 20):
            fh.write(zeros)
    return path


def test_gzip_expanding_beyond_the_cap_is_refused_at_fetch(tmp_path):
    bomb = _gzip_bomb(tmp_path / "m.tsv.gz", 8 << 20)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(
        FetchError,
        match=r"dataset 'd' file 'expression': .*m\.tsv\.gz is gzip-compressed and expands to more than 1073741 bytes \(fetch\.max_expanded_gb = 0\.001\)",
    ):
        fetch_dataset_files("d", {"expression": str(bomb), "labels": None}, {"max_expanded_gb": 0.001})
    # within the cap it resolves
    prov = fetch_dataset_files("d", {"expression": str(bomb), "labels": None}, {"max_expanded_gb": 16 / 1024})
    assert prov["files"]["expression"]["source"] == "local"


def test_limit_defaults_agree_with_the_schema_and_the_reader():
    import yaml

    from glfs_workflow import fetch, readers

    schema = yaml.safe_load((Path(__file__).resolve().parents[2] / "workflow/schemas/config.schema.yaml").read_text())
    props = schema["properties"]["fetch"]["properties"]
    assert props["max_download_gb"]["default"] == fetch.DEFAULT_MAX_DOWNLOAD_GB
    assert props["max_time"]["default"] == fetch.DEFAULT_MAX_TIME
    assert props["max_expanded_gb"]["default"] == fetch.DEFAULT_MAX_EXPANDED_GB
    assert props["max_expanded_gb"]["default"] * 2**30 == readers.MAX_EXPANDED_BYTES


def test_fetch_script_error_with_an_empty_message_says_what_happened(tmp_path, monkeypatch, restore_logging):
    """Issue 19 item 2: "fetch_dataset ERROR: " and nothing after it (a MemoryError) never again."""
    import runpy
    from types import SimpleNamespace as NS

    from glfs_workflow import fetch

    def oom(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(fetch, "fetch_dataset_files", oom)
    smk = NS(
        wildcards=NS(dataset="d"),
        params=NS(dataset={"expression": "x.tsv"}, fetch={}),
        output=NS(provenance=str(tmp_path / "p.json")),
        log=[str(tmp_path / "f.log")],
    )
    with pytest.raises(SystemExit):
        runpy.run_path(
            str(Path(__file__).resolve().parents[2] / "scripts/fetch_file.py"), init_globals={"snakemake": smk}
        )
    text = (tmp_path / "f.log").read_text()
    assert "MemoryError (no further message) while fetching the files of dataset 'd'" in text
    assert not (tmp_path / "p.json").exists()


def test_a_changed_url_with_the_same_file_name_is_downloaded_again(tmp_path):
    """Issue 30 item 2: .../v1/data.tsv then .../v2/data.tsv, no sha256: the second fetch must not reuse v1's
    file, and its provenance records v2's URL with v2's sha256; the same URL again is served from the cache."""
    bodies = {}
    for v in ("v1", "v2"):
        (tmp_path / v).mkdir()
        bodies[v] = f"gene\tS1\tS2\nG1\t1\t{v[1]}\n".encode()
        (tmp_path / v / "data.tsv").write_bytes(bodies[v])
    fetch = {"download_dir": str(tmp_path / "dl")}
    urls = {v: (tmp_path / v / "data.tsv").as_uri() for v in bodies}
    first = fetch_dataset_files("d", {"expression": urls["v1"]}, fetch)["files"]["expression"]
    second = fetch_dataset_files("d", {"expression": urls["v2"]}, fetch)["files"]["expression"]
    assert first["source"] == "download" and first["sha256"] == hashlib.sha256(bodies["v1"]).hexdigest()
    assert second["source"] == "download" and second["url"] == urls["v2"]
    assert second["sha256"] == hashlib.sha256(bodies["v2"]).hexdigest()
    assert Path(second["path"]).read_bytes() == bodies["v2"]
    again = fetch_dataset_files("d", {"expression": urls["v2"]}, fetch)["files"]["expression"]
    assert again["source"] == "cache" and again["sha256"] == second["sha256"]


def test_a_cached_file_of_unknown_origin_without_sha256_is_downloaded_again(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.tsv").write_bytes(b"gene\tS1\nG1\t2\n")
    (tmp_path / "dl" / "d").mkdir(parents=True)
    (tmp_path / "dl" / "d" / "x.tsv").write_bytes(b"gene\tS1\nG1\t1\n")  # left by a run before URLs were recorded
    rec = resolve_file(
        (tmp_path / "src" / "x.tsv").as_uri(), dataset="d", role="expression", download_dir=str(tmp_path / "dl")
    )
    assert rec["source"] == "download" and Path(rec["path"]).read_bytes() == b"gene\tS1\nG1\t2\n"


def _fifo_refused(tmp_path, call):
    """``call(fifo)`` in a daemon thread: its exception, or "hung" when it is still blocked on the FIFO after 60 s
    (then unblocked by a writer that closes at once, so that no thread is left behind)."""
    import os

    fifo = tmp_path / "pipe.tsv"
    os.mkfifo(fifo)
    out = {}

    def run():
        try:
            call(fifo)
        except Exception as exc:  # noqa: BLE001 (the test looks at it)
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY))  # the reader sees the end of the file
        t.join(60)
        return "hung"
    return out.get("error")


def test_a_file_url_to_a_fifo_is_refused_not_read_forever(tmp_path):
    got = _fifo_refused(
        tmp_path,
        lambda fifo: resolve_file(
            fifo.as_uri(), dataset="d", role="expression", download_dir=str(tmp_path / "dl"), **FAST
        ),
    )
    assert isinstance(got, FetchError), got
    assert re.search(
        r"download of file://.*pipe\.tsv refused: it is a FIFO \(named pipe\), not a regular file", str(got)
    )
    assert not (tmp_path / "dl" / "d" / "pipe.tsv").exists()


def test_a_local_path_or_mirror_that_is_a_fifo_is_refused(tmp_path):
    got = _fifo_refused(tmp_path, lambda fifo: resolve_file(str(fifo), dataset="d", role="labels"))
    assert isinstance(got, FetchError) and re.search(r"pipe\.tsv is not a readable file: it is a FIFO", str(got)), got
    url = "http://127.0.0.1:9/never/pipe.tsv"  # nothing listens: the mirror is refused first
    (tmp_path / "m").mkdir()
    got = _fifo_refused(
        tmp_path / "m", lambda fifo: resolve_file({"url": url, "mirror": str(fifo)}, dataset="d", role="labels")
    )
    assert isinstance(got, FetchError) and "it is a FIFO" in str(got), got
