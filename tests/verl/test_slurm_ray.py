"""Multi-node Ray bootstrap from the Slurm environment (pure parts; starting Ray needs the nodes)."""

from pcbench.backends.verl.slurm_ray import SlurmLayout, expand_nodelist, layout_from_env, ray_start_command


def test_nodelist_expansion_matches_scontrol_show_hostnames():
    assert expand_nodelist("gpu[01-03,07],cpu5") == ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]
    assert expand_nodelist("node7") == ["node7"]
    assert expand_nodelist("a[9-11]") == ["a9", "a10", "a11"]


def test_single_node_or_no_slurm_needs_no_bootstrap():
    assert layout_from_env({}) is None
    assert layout_from_env({"SLURM_JOB_NODELIST": "gpu01", "SLURM_JOB_NUM_NODES": "1"}) is None


def test_head_and_worker_commands():
    env = {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "1",
           "SLURM_GPUS_ON_NODE": "8"}
    worker = layout_from_env(env)
    assert worker == SlurmLayout(["gpu01", "gpu02"], 1, 8) and not worker.is_head
    assert ray_start_command(worker) == ["ray", "start", "--num-gpus=8", "--disable-usage-stats",
                                         "--address=gpu01:6379", "--block"]
    head = SlurmLayout(["localhost", "gpu02"], 0, 8)
    cmd = ray_start_command(head)
    assert cmd[:4] == ["ray", "start", "--num-gpus=8", "--disable-usage-stats"] and "--head" in cmd
