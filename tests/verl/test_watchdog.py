"""The entry's watchdog: a verl child whose heartbeat goes stale is killed with its whole process
tree (grandchildren in other process groups and orphans included) and the hung stage is named."""

import json
import subprocess
import sys
import textwrap
import time

from pcbench.backends.verl.watchdog import Heartbeat, _alive, kill_tree, supervise, tree

# A stand-in for verl: beats twice, starts a grandchild in its own process group (as Ray's
# driver does with setpgrp) and an orphan (double fork), then hangs without beating.
CHILD = textwrap.dedent("""
    import os, subprocess, sys, time
    from pcbench.backends.verl.watchdog import Heartbeat
    hb = Heartbeat(sys.argv[1])
    hb.beat("start Ray, verl workers and vLLM")
    g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=os.setpgrp)
    if os.fork() == 0:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        os._exit(0)
    hb.beat("generate step 3")
    open(os.path.join(sys.argv[1], "pids"), "w").write(str(g.pid))
    time.sleep(600)
""")


def test_stale_heartbeat_kills_the_tree_and_names_the_stage(tmp_path, capsys):
    t0 = time.time()
    rc = supervise([sys.executable, "-c", CHILD, str(tmp_path)], tmp_path / "heartbeat.json", watchdog_s=4,
                   poll_s=0.5)
    err = capsys.readouterr().err.strip()
    assert rc == 3 and time.time() - t0 < 60
    assert err == ("pcbench: verl hung in stage 'generate step 3' (no progress for 4 s); killed; "
                   "rerun the same command to resume")
    grandchild = int((tmp_path / "pids").read_text())
    assert not _alive(grandchild)
    leftovers = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True).stdout.split()
    assert not [p for p in leftovers if _alive(int(p))]


def test_a_run_that_keeps_beating_is_left_alone(tmp_path):
    code = ("import sys, time\nfrom pcbench.backends.verl.watchdog import Heartbeat\nhb = Heartbeat(sys.argv[1])\n"
            "for i in range(8):\n    hb.beat(f'step {i}'); time.sleep(0.5)\n")
    assert supervise([sys.executable, "-c", code, str(tmp_path)], tmp_path / "heartbeat.json", watchdog_s=3,
                     poll_s=0.5) == 0
    assert json.loads((tmp_path / "heartbeat.json").read_text())["stage"] == "step 7"


def test_kill_tree_spares_the_callers_own_session(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # same session as pytest
    try:
        assert p.pid in tree(p.pid) and len(tree(p.pid)) == 1
        kill_tree(p.pid, grace_s=2)
        assert p.wait(timeout=10) != 0
    finally:
        p.kill()
    Heartbeat(None).beat("nothing")  # no run folder: no file, no error


def test_raising_the_watchdog_bound_resumes_the_same_run_folder():
    """A user whose run was killed as hung reruns with a larger backend.watchdog_s: same folder, resumed."""
    from pcbench.rundir import run_id
    from tests.verl.doubles import compose_pcbench

    tiny = ("backend=verl", "model=tiny-verl", "data=tiny-verl", "method=pilot_commit")
    assert run_id(compose_pcbench(*tiny)) == run_id(compose_pcbench(*tiny, "backend.watchdog_s=7200"))
    assert run_id(compose_pcbench(*tiny)) != run_id(compose_pcbench(*tiny, "train.steps=4"))
