"""python3 -m serene.launch keeps the job key off every command line: the
switch it starts reads a fresh key (getrandom) from a private file that is
gone once the switch runs, and the ranks get it in SERENE_KEY."""

import json
import os
import stat
import subprocess
import sys
import textwrap

# A stand-in for serene-switch: records its command line and its key file
# (mode and content), says it listens, and waits to be stopped.
FAKE_SWITCH = textwrap.dedent(
    """\
    #!{python}
    import json, os, re, signal, sys, time
    spec = sys.argv[sys.argv.index("--job") + 1]
    m = re.search(r"key_file=([^,]+)", spec)
    record = {{"argv": sys.argv[1:]}}
    if m:
        st = os.stat(m.group(1))
        record["mode"] = st.st_mode & 0o777
        record["dir_mode"] = os.stat(os.path.dirname(m.group(1))).st_mode & 0o777
        record["key"] = int(open(m.group(1)).read().strip(), 0)
        record["key_file"] = m.group(1)
    with open({record!r}, "w") as f:
        json.dump(record, f)
    sys.stderr.write("listening on 127.0.0.1:9\\n")
    sys.stderr.flush()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    time.sleep(60)
    """
)

# A rank that reports the key it was given, in a file of its own.
RANK = ("import os, sys\n"
        "path = os.path.join(os.path.dirname(__file__), 'key.' + os.environ['RANK'])\n"
        "open(path, 'w').write(os.environ['SERENE_KEY'])\n")


def run_launcher(tmp_path, *extra):
    record = tmp_path / "switch.json"
    fake = tmp_path / "fake-switch"
    fake.write_text(FAKE_SWITCH.format(python=sys.executable, record=str(record)))
    fake.chmod(0o755)
    rank = tmp_path / "rank.py"
    rank.write_text(RANK)
    r = subprocess.run([sys.executable, "-m", "serene.launch", "--nproc", "2", "--elements", "10",
                        "--switch-bin", str(fake), *extra, str(rank)],
                       capture_output=True, text=True, timeout=60)
    return r, json.loads(record.read_text())


def test_the_started_switch_reads_a_fresh_key_from_a_private_file(tmp_path):
    keys = set()
    for _ in range(2):
        r, rec = run_launcher(tmp_path)
        assert r.returncode == 0, r.stderr
        assert not any("key=" in a for a in rec["argv"]), rec["argv"]
        assert "key_file" in rec, rec["argv"]
        assert rec["mode"] == 0o600 and rec["dir_mode"] == 0o700, rec
        assert not os.path.exists(rec["key_file"]), "the key file outlives the switch's start"
        given = {int((tmp_path / f"key.{rank}").read_text()) for rank in (0, 1)}
        assert given == {rec["key"]}, "both ranks get the switch's key"
        assert 0 < rec["key"] < 2**32
        keys.add(rec["key"])
    assert len(keys) == 2, "each launch draws its own key"


def test_a_key_file_for_a_running_switch_must_be_private(tmp_path):
    key = tmp_path / "job.key"
    key.write_text("0xC0FFEE\n")
    key.chmod(0o644)
    rank = tmp_path / "rank.py"
    rank.write_text(RANK)
    r = subprocess.run([sys.executable, "-m", "serene.launch", "--nproc", "1", "--switch",
                        "127.0.0.1:9", "--key-file", str(key), str(rank)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert f"key file '{key}' has mode 0644" in r.stderr, r.stderr
    assert stat.S_IMODE(key.stat().st_mode) == 0o644
